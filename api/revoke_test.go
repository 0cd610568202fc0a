package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hints"
)

// TestRevokeEndsInflight: unpairing a host takes effect at once for what
// it already has running, not only for its next request: its event stream
// ends, and its call parked on a confirm is denied, so a later "allow"
// (from another host, or from the administrator who has not noticed) can
// no longer send a request for a host that is no longer paired.
func TestRevokeEndsInflight(t *testing.T) {
	e, up := newExecEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := e.host(e.pair("desktop", ""), "")

	tok := c.token
	// The stream is subscribed once its headers arrive.
	hr, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/v1/events", nil)
	hr.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/events = %v, %v", resp, err)
	}
	defer resp.Body.Close()
	streamDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		streamDone <- err
	}()
	type answer struct {
		b   []byte
		err error
	}
	netDone := make(chan answer, 1)
	hints := e.d.Hints(ctx) // subscribed before the call: its confirm-pending hint is not missed
	go func() {
		b, err := c.Net(ctx, NetRequest{AppID: "app1", Frame: netFrame("POST", "https://"+upHost+"/send"), Delivery: "app"})
		netDone <- answer{b, err}
	}()
	cf := waitConfirm(ctx, t, e, hints)
	hs, err := e.ctl.Hosts(ctx)
	if err != nil || len(hs.Hosts) != 1 {
		t.Fatalf("Hosts = %+v, %v", hs, err)
	}
	if err := e.ctl.DeleteHost(ctx, hs.Hosts[0].HostID); err != nil {
		t.Fatal(err)
	}
	// The administrator allows the confirm a moment later: too late, and
	// the answer says so. DELETE withdrew it before it answered.
	err = e.ctl.DecideConfirm(ctx, cf.ID, DecisionRequest{Decision: "allow"})
	wantAPIError(t, err, http.StatusConflict, errcode.ConfirmWithdrawn)

	select {
	case a := <-netDone:
		if a.err == nil {
			if f := parseFrame(t, a.b); f.Error == nil || f.Error.Code != errcode.NetConfirmDenied || !strings.Contains(f.Error.Message, "unpaired") {
				t.Errorf("parked call of an unpaired host = %s, want NET_CONFIRM_DENIED (unpaired)", a.b)
			}
		}
	case <-ctx.Done():
		t.Fatal("the parked call of an unpaired host still waits")
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("upstream saw %d requests for an unpaired host, want 0", n)
	}
	select {
	case err := <-streamDone:
		if err != nil {
			t.Errorf("the event stream of an unpaired host ended with %v, want its end", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the event stream of an unpaired host still runs")
	}
}

// waitConfirm waits, on the daemon's hint stream (subscribed before the
// call that parks), until exactly one confirm is pending, and returns it.
func waitConfirm(ctx context.Context, t *testing.T, e *env, hints <-chan hints.Hint) ConfirmJSON {
	t.Helper()
	for {
		cs, err := e.ctl.Confirms(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 1 {
			return cs[0]
		}
		select {
		case <-hints:
		case <-ctx.Done():
			t.Fatalf("no confirm was parked: %v", ctx.Err())
		}
	}
}
