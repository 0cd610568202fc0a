package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/journal"
)

// TestJournalRecordsUserActsApart: approve, credentials set, revoke and
// reconnect each leave one act, metadata only (the field's name, never
// its value), which the requests filter leaves out and the acts filter
// keeps.
func TestJournalRecordsUserActsApart(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	if _, err := r.d.grants.Revoke(t.Context(), "app1", "ex"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.d.grants.Reconnect(t.Context(), "app1", "ex"); err != nil {
		t.Fatal(err)
	}
	r.net(t, "app1", frame("GET", "https://"+apiHost+"/x", nil))
	acts, err := r.d.records.Journal(context.Background(), journal.JournalQuery{AppID: "app1", Kind: "acts"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range acts {
		got = append(got, e.Act)
		if e.Outcome != "act" || e.Slot != "ex" || !strings.HasPrefix(e.Note, "by the administrator") {
			t.Errorf("act entry = %+v", e)
		}
		if strings.Contains(e.Note, secretKey) {
			t.Errorf("act %s note holds the credential: %q", e.Act, e.Note)
		}
	}
	if strings.Join(got, " ") != "reconnect revoke credentials-set approve" {
		t.Errorf("acts newest first = %v, want reconnect revoke credentials-set approve", got)
	}
	if acts[2].Note != "by the administrator; fields api_key" {
		t.Errorf("credentials-set note = %q, want the field name", acts[2].Note)
	}
	reqs, _ := r.d.records.Journal(context.Background(), journal.JournalQuery{AppID: "app1", Kind: "requests"})
	if len(reqs) != 1 || reqs[0].Outcome == "act" {
		t.Errorf("requests = %+v, want the one refused request", reqs)
	}
	if _, err := r.d.records.Journal(context.Background(), journal.JournalQuery{Kind: "bogus"}); !errorsIsCode(err, errcode.BadRequest) {
		t.Errorf("kind bogus = %v, want BAD_REQUEST", err)
	}
}

// TestJournalAggregatesRepeatedRefusals: a loop of the same refused
// request is one entry with a count; another host's refusal stays its own.
func TestJournalAggregatesRepeatedRefusals(t *testing.T) {
	r := newRig(t)
	for range 30 {
		r.net(t, "app1", frame("GET", "https://evil.example.com/x", nil))
	}
	r.net(t, "app1", frame("GET", "https://other.example.com/x", nil))
	es, err := r.d.records.Journal(context.Background(), journal.JournalQuery{AppID: "app1", Kind: "requests"})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Host != "other.example.com" || es[0].Count != 1 || es[1].Host != "evil.example.com" || es[1].Count != 30 {
		t.Fatalf("journal = %+v, want other.example.com ×1 and evil.example.com ×30", es)
	}
	if es[1].LastAt.Before(es[1].At) {
		t.Errorf("lastAt %v before at %v", es[1].LastAt, es[1].At)
	}
}

// TestJournalRecordsConfirmDecisions: a confirm the user decides is an
// act naming the decision, who decided and what was asked (method and
// host, never the URL's path or the body).
func TestJournalRecordsConfirmDecisions(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if cs := r.d.exec.Confirms(context.Background()); len(cs) > 0 {
				r.d.exec.DecideConfirm(cs[0].ID, false, fetch.RememberOnce)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	if res, _ := r.net(t, "app1", post(`{"n":"body-canary"}`)); res.Code != errcode.NetConfirmDenied {
		t.Fatalf("denied POST = %s, want NET_CONFIRM_DENIED", res.Code)
	}
	acts, err := r.d.records.Journal(context.Background(), journal.JournalQuery{AppID: "app1", Kind: "acts"})
	if err != nil || len(acts) == 0 {
		t.Fatalf("acts = %v, %v", acts, err)
	}
	e := acts[0]
	if e.Act != "confirm-deny" || e.Slot != "ex" || e.Note != "by the administrator; POST "+apiHost+", once" {
		t.Errorf("confirm act = %+v", e)
	}
}
