package daemon

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
)

// journalRows reads the stored journal straight from the store: what a
// crash right now would leave.
func journalRows(t testing.TB, st *store.Store) []store.JournalEntry {
	t.Helper()
	var rows []store.JournalEntry
	if err := st.View(context.Background(), func(tx *store.Tx) error {
		var err error
		rows, err = tx.Journal(store.JournalQuery{Limit: 1000})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestJournalCommitsBeforeReturn: an entry is committed when Commit
// returns, whoever else commits at the same time (entries that arrive
// while a commit is in flight share the next one), with no service
// running and no flush; repeated refusals still fold into one entry with
// a count.
func TestJournalCommitsBeforeReturn(t *testing.T) {
	st, err := store.Open(t.Context(), store.Options{Dir: t.TempDir() + "/data"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j := journal.NewJournal(st, time.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	entry := func(i int) store.JournalEntry {
		return store.JournalEntry{At: time.Unix(1_800_000_000+int64(i), 0), AppID: "app1", Slot: "s", Host: "api.example.com", Method: "GET", Outcome: "sent", Status: 200}
	}
	id, err := j.Commit(entry(0))
	if err != nil || id <= 0 {
		t.Fatalf("Commit = %d, %v", id, err)
	}
	if rows := journalRows(t, st); len(rows) != 1 || rows[0].ID != id {
		t.Fatalf("after Commit the store holds %+v, want entry %d", rows, id)
	}

	const n = 64
	var wg sync.WaitGroup
	ids := make([]int64, n)
	for i := range n {
		wg.Go(func() {
			id, err := j.Commit(entry(i + 1))
			if err != nil {
				t.Errorf("Commit(%d) = %v", i+1, err)
			}
			ids[i] = id
			// Committed when Commit returns: the entry is in the store.
			var got store.JournalEntry
			if err := st.View(context.Background(), func(tx *store.Tx) error {
				var err error
				got, err = tx.JournalEntry(id)
				return err
			}); err != nil || !got.At.Equal(entry(i+1).At) {
				t.Errorf("entry %d right after its Commit = %+v, %v", id, got, err)
			}
		})
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, id := range ids {
		if id <= 0 || seen[id] {
			t.Fatalf("Commit ids %v: want distinct positive ids", ids)
		}
		seen[id] = true
	}
	if rows := journalRows(t, st); len(rows) != n+1 {
		t.Fatalf("%d entries stored, want %d", len(rows), n+1)
	}

	refusal := store.JournalEntry{At: time.Unix(1_800_000_100, 0), AppID: "app1", Slot: "s", Host: "evil.example", Method: "GET", Outcome: "refused", Gate: "ceiling", Code: "NET_HOST_BLOCKED"}
	first, err := j.Commit(refusal)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		refusal.At = refusal.At.Add(time.Second)
		again, err := j.Commit(refusal)
		if err != nil || again != first {
			t.Fatalf("repeat %d = %d, %v; want it counted on entry %d", i, again, err, first)
		}
	}
	var got store.JournalEntry
	if err := st.View(t.Context(), func(tx *store.Tx) error { got, err = tx.JournalEntry(first); return err }); err != nil {
		t.Fatal(err)
	}
	if got.Count != 4 || !got.LastAt.Equal(refusal.At) {
		t.Errorf("folded refusal = count %d, last %v; want 4, %v", got.Count, got.LastAt, refusal.At)
	}
}

// TestNetAnswersAfterItsRowCommitted: when the executor answers a GET its
// row is already in the store, not queued; a POST's row is in the store
// (outcome sent-unknown) while the upstream is still handling it, and the
// same row is completed with the outcome once it answered.
func TestNetAnswersAfterItsRowCommitted(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	r.autoDecide(t, true, fetch.RememberOnce)

	res, _ := r.net(t, "app1", frame("GET", "https://api.example.com/v1/items", nil))
	if res.Code != "" || res.Status != 200 {
		t.Fatalf("GET = %+v", res)
	}
	rows := journalRows(t, r.d.store)
	if len(rows) == 0 || rows[0].Method != "GET" || rows[0].Outcome != "sent" || rows[0].Status != 200 {
		t.Fatalf("newest row right after the GET answered = %+v, want its sent row", rows)
	}

	var during []store.JournalEntry
	r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
		during = journalRows(t, r.d.store) // the upstream has the request: its row must exist
		w.WriteHeader(201)
	})
	res, _ = r.net(t, "app1", frame("POST", "https://api.example.com/v1/items", map[string]any{"body": `{"a":1}`}))
	if res.Code != "" || res.Status != 201 {
		t.Fatalf("POST = %+v", res)
	}
	if len(during) == 0 || during[0].Method != "POST" || during[0].Outcome != store.OutcomeSentUnknown || during[0].Status != 0 {
		t.Fatalf("newest row while the upstream handled the POST = %+v, want its %s row", during, store.OutcomeSentUnknown)
	}
	after := journalRows(t, r.d.store)
	if len(after) != len(during) || after[0].ID != during[0].ID || after[0].Outcome != "sent" || after[0].Status != 201 || after[0].Note != "approved by the user" {
		t.Fatalf("newest row after the POST = %+v, want row %d completed as sent 201", after[0], during[0].ID)
	}
}
