package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/journal"
)

// TestJournalSaysWhoDenied: a user's deny, a confirm nobody answered and a
// caller that went away are journaled with different notes; an allow names
// the user. A connection-URL request keeps its symbolic host and records
// the host it went to beside it, for the administrator.
func TestJournalSaysWhoDenied(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = 200 * time.Millisecond })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})

	// Nobody answers: the timeout denies.
	if res, _ := r.net(t, "app1", post(`{"n":1}`)); res.Code != errcode.NetConfirmDenied {
		t.Fatalf("unanswered POST = %s, want NET_CONFIRM_DENIED", res.Code)
	}
	// The caller goes away while the confirm waits.
	ctx, cancel := context.WithCancel(context.Background())
	ch := r.parkedNet(ctx, t, "app1", post(`{"n":2}`))
	waitConfirms(t, r.d, 1)
	cancel()
	<-ch
	// The user denies, then allows, through a connection URL.
	stop := make(chan struct{})
	decide := func(allow bool) {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if cs := r.d.exec.Confirms(context.Background()); len(cs) > 0 {
					r.d.exec.DecideConfirm(cs[0].ID, allow, fetch.RememberOnce)
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	defer close(stop)
	decide(false)
	if res, _ := r.net(t, "app1", frame("POST", "snug-connection://ex/send", map[string]any{"body": `{"n":3}`})); res.Code != errcode.NetConfirmDenied {
		t.Fatalf("denied POST = %s, want NET_CONFIRM_DENIED", res.Code)
	}
	decide(true)
	if res, _ := r.net(t, "app1", frame("POST", "snug-connection://ex/send", map[string]any{"body": `{"n":4}`})); res.Code != "" {
		t.Fatalf("allowed POST = %s, want a response", res.Code)
	}

	es, err := r.d.records.Journal(context.Background(), journal.JournalQuery{AppID: "app1", Kind: "requests"})
	if err != nil || len(es) != 4 {
		t.Fatalf("Journal = %d entries, %v; want 4", len(es), err)
	}
	want := []struct{ host, resolved, note string }{ // newest first
		{"snug-connection://ex", apiHost, "approved by the user"},
		{"snug-connection://ex", apiHost, fetch.DeniedByUser},
		{apiHost, "", fetch.DeniedByCaller},
		{apiHost, "", fetch.DeniedByTimeout},
	}
	for i, w := range want {
		if e := es[i]; e.Host != w.host || e.ResolvedHost != w.resolved || e.Note != w.note {
			t.Errorf("entry %d = host %q resolved %q note %q; want %q %q %q", i, e.Host, e.ResolvedHost, e.Note, w.host, w.resolved, w.note)
		}
	}
}
