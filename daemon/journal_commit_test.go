package daemon

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
)

// journalRows reads the stored journal without flushing the batcher.
func journalRows(t *testing.T, st *store.Store) int {
	t.Helper()
	var rows []store.JournalEntry
	if err := st.View(context.Background(), func(tx *store.Tx) error {
		var err error
		rows, err = tx.Journal(store.JournalQuery{Limit: 1000})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// TestJournalBatcherLingers: entries that arrive within the linger share
// one write, which happens once the linger ends, without any flush; a
// flush writes at once; closing writes what still lingers.
func TestJournalBatcherLingers(t *testing.T) {
	st, err := store.Open(t.Context(), store.Options{Dir: t.TempDir() + "/data"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entry := func(i int) store.JournalEntry {
		return store.JournalEntry{At: time.Unix(1_800_000_000+int64(i), 0), AppID: "app1", Slot: "s", Host: "api.example.com", Method: "GET", Outcome: "sent", Status: 200}
	}
	synctest.Test(t, func(t *testing.T) {
		b := journal.NewJournalBatcher(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { b.Run(ctx); close(done) }()

		b.Add(entry(1))
		time.Sleep(journal.JournalLinger / 2)
		b.Add(entry(2))
		synctest.Wait()
		if n := journalRows(t, st); n != 0 {
			t.Fatalf("%d entries written inside the linger, want none yet", n)
		}
		time.Sleep(journal.JournalLinger)
		synctest.Wait()
		if n := journalRows(t, st); n != 2 {
			t.Fatalf("%d entries written after the linger, want 2", n)
		}

		b.Add(entry(3))
		b.Flush() // a reader: no linger
		if n := journalRows(t, st); n != 3 {
			t.Fatalf("%d entries after a flush, want 3", n)
		}

		b.Add(entry(4))
		synctest.Wait()
		cancel()
		<-done
		if n := journalRows(t, st); n != 4 {
			t.Fatalf("%d entries after close, want 4: the lingering one was lost", n)
		}
	})
}
