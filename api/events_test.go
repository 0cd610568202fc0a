package api

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/hints"
)

// TestEventsConnectionChanged: approving a connection rings the
// connection-changed doorbell with references only.
//
// conformance: P1-R7-01
func TestEventsConnectionChanged(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "declared", hosts: []string{"api.mail.example"}})
	web := e.host(e.pair("web", webOrigin), webOrigin)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got := make(chan Event, 16)
	done := make(chan error, 1)
	go func() {
		done <- web.Events(ctx, func(ev Event) error {
			got <- ev
			return nil
		})
	}()
	// Nothing tells the client when the daemon has subscribed it, so walk
	// the row through approve, revoke and reconnect until a hint arrives:
	// every step rings the same doorbell.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			for _, step := range []func(context.Context, string, string) error{
				func(ctx context.Context, a, s string) error { _, err := e.ctl.Approve(ctx, a, s); return err },
				func(ctx context.Context, a, s string) error { _, err := e.ctl.Revoke(ctx, a, s); return err },
				func(ctx context.Context, a, s string) error { _, err := e.ctl.Reconnect(ctx, a, s); return err },
			} {
				select {
				case <-stop:
					return
				default:
				}
				step(ctx, "app1", "mail")
			}
		}
	}()
	select {
	case ev := <-got:
		if ev.Type != "connection-changed" || ev.Data != (EventData{AppID: "app1", Slot: "mail"}) {
			t.Errorf("event = %+v, want connection-changed {app1 mail}", ev)
		}
	case <-ctx.Done():
		t.Fatal("no connection-changed event")
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Events = %v", err)
	}
}

// TestEventsWire: the stream's framing, heartbeats and headers, read raw.
func TestEventsWire(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "declared", hosts: []string{"api.mail.example"}})
	tok := e.pair("web", webOrigin)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	hr, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/v1/events", nil)
	hr.Header.Set("Authorization", "Bearer "+tok)
	hr.Header.Set("Origin", webOrigin)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Access-Control-Allow-Origin") != webOrigin || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers = %v", resp.Header)
	}
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	approved := false
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if line == ": ping" && !approved {
			approved = true
			if _, err := e.ctl.Approve(ctx, "app1", "mail"); err != nil {
				t.Fatal(err)
			}
		}
		if strings.HasPrefix(line, "data: ") {
			if line != `data: {"appId":"app1","slot":"mail"}` {
				t.Errorf("data line = %q", line)
			}
			break
		}
	}
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, "event: connection-changed") || !strings.Contains(joined, ": ping") {
		t.Errorf("stream = %q", joined)
	}
}

// TestEventsEndOnShutdown: an open stream does not hold shutdown up.
func TestEventsEndOnShutdown(t *testing.T) {
	e := newEnv(t)
	// The stream's headers arrive once the handler has subscribed: the
	// transport says when, instead of a sleep.
	seen := &headersSeen{rt: http.DefaultTransport, ch: make(chan struct{})}
	c := NewClient(e.base, ClientOptions{Token: e.pair("desktop", ""), HTTPClient: &http.Client{Transport: seen}})
	done := make(chan error, 1)
	go func() {
		done <- c.Events(t.Context(), func(Event) error { return nil })
	}()
	select {
	case <-seen.ch:
	case err := <-done:
		t.Fatalf("Events ended before shutdown: %v", err)
	}
	e.s.stopOnce.Do(func() { close(e.s.stop) }) // what shutdown does first
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Events after shutdown began = %v, want nil (the daemon ended the stream)", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the event stream outlived the shutdown")
	}
}

// TestWriteEventRebuildsHints: each hint is rebuilt field by field for its
// type, so a field the source set that its type does not carry never
// reaches the stream, and a type snugd does not know is not forwarded.
//
// conformance: P1-R7-02
func TestWriteEventRebuildsHints(t *testing.T) {
	tests := []struct {
		hint hints.Hint
		want string
	}{
		{hints.Hint{Type: hints.ConnectionChanged, AppID: "app1", Slot: "mail", ID: "injected"},
			"event: connection-changed\ndata: {\"appId\":\"app1\",\"slot\":\"mail\"}\n\n"},
		{hints.Hint{Type: hints.ConfirmPending, ID: "c1", AppID: "app1", Slot: "mail"},
			"event: confirm-pending\ndata: {\"id\":\"c1\"}\n\n"},
		{hints.Hint{Type: hints.FlowUpdated, ID: "f1", AppID: "app1"},
			"event: flow-updated\ndata: {\"flowId\":\"f1\"}\n\n"},
		{hints.Hint{Type: hints.HelperChanged, ID: "h1", Slot: "mail"},
			"event: helper-changed\ndata: {\"helperId\":\"h1\"}\n\n"},
		{hints.Hint{Type: hints.ConnectionChanged, AppID: "a\n\nevent: confirm-pending", Slot: "mail"},
			"event: connection-changed\ndata: {\"appId\":\"a\\n\\nevent: confirm-pending\",\"slot\":\"mail\"}\n\n"},
		{hints.Hint{Type: "secret-delivery", ID: "x", AppID: "app1"}, ""},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		if err := writeEvent(echo.NewResponse(rec, echo.New()), tc.hint); err != nil {
			t.Fatalf("writeEvent(%+v) = %v", tc.hint, err)
		}
		if got := rec.Body.String(); got != tc.want {
			t.Errorf("writeEvent(%+v) wrote %q, want %q", tc.hint, got, tc.want)
		}
	}
}

// headersSeen is a RoundTripper that closes ch when the first response's
// headers have arrived.
type headersSeen struct {
	rt   http.RoundTripper
	once sync.Once
	ch   chan struct{}
}

func (h *headersSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(r)
	if err == nil {
		h.once.Do(func() { close(h.ch) })
	}
	return resp, err
}
