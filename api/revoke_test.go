package api

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
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
	go func() {
		b, err := c.Net(ctx, NetRequest{AppID: "app1", Frame: netFrame("POST", "https://"+upHost+"/send"), Delivery: "app"})
		netDone <- answer{b, err}
	}()
	var cf ConfirmJSON
	for cf.ID == "" {
		cs, err := e.ctl.Confirms(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 1 {
			cf = cs[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	hs, err := e.ctl.Hosts(ctx)
	if err != nil || len(hs.Hosts) != 1 {
		t.Fatalf("Hosts = %+v, %v", hs, err)
	}
	if err := e.ctl.DeleteHost(ctx, hs.Hosts[0].HostID); err != nil {
		t.Fatal(err)
	}
	// The administrator allows the confirm a moment later: too late.
	e.ctl.DecideConfirm(ctx, cf.ID, DecisionRequest{Decision: "allow"})

	select {
	case a := <-netDone:
		if a.err == nil {
			if f := parseFrame(t, a.b); f.Error == nil || f.Error.Code != errcode.NetConfirmDenied {
				t.Errorf("parked call of an unpaired host = %s, want NET_CONFIRM_DENIED", a.b)
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
