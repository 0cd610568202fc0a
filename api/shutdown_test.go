package api

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
)

// TestShutdownDeniesParkedConfirms: once shutdown begins nobody can decide
// a parked confirm any more (the listeners are closed), so it is denied at
// once, the call answers NET_CONFIRM_DENIED and Serve returns, instead of
// holding the shutdown for the whole drain bound. Nothing is sent.
func TestShutdownDeniesParkedConfirms(t *testing.T) {
	e, up := newExecEnv(t)
	tok := e.pair("desktop", "")
	// A second server on the same daemon, with a drain bound far longer
	// than the test waits.
	s := New(DepsOf(e.d), Options{Version: testVersion, DrainTimeout: 10 * time.Minute})
	tcp, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, tcp, nil) }()
	c := NewClient(fmt.Sprintf("http://127.0.0.1:%d", tcp.Addr().(*net.TCPAddr).Port), ClientOptions{Token: tok})

	type answer struct {
		b   []byte
		err error
	}
	done := make(chan answer, 1)
	hints := e.d.Hints(t.Context())
	go func() {
		b, err := c.Net(t.Context(), NetRequest{AppID: "app1", Frame: netFrame("POST", "https://"+upHost+"/send"), Delivery: "app"})
		done <- answer{b, err}
	}()
	cf := waitConfirm(t.Context(), t, e, hints)
	stop()
	wait := time.After(30 * time.Second) // far below the drain bound and the confirm timeout
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatalf("parked call at shutdown = %v, want a frame", a.err)
		}
		if f := parseFrame(t, a.b); f.Error == nil || f.Error.Code != errcode.NetConfirmDenied || !strings.Contains(f.Error.Message, "shutting down") {
			t.Errorf("parked call at shutdown = %s, want NET_CONFIRM_DENIED (shutting down)", a.b)
		}
	case <-wait:
		t.Fatal("the parked call still waits after shutdown began")
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	case <-wait:
		t.Fatal("Serve still drains a call nobody can confirm")
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("upstream saw %d requests, want 0", n)
	}
	// The daemon denied it itself, with its own reason: a decision that
	// arrives afterwards (here on the env's ctl socket) is a no-op that
	// says so.
	err = e.ctl.DecideConfirm(t.Context(), cf.ID, DecisionRequest{Decision: "allow"})
	wantAPIError(t, err, http.StatusConflict, errcode.ConfirmWithdrawn)
}
