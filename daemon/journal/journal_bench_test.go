package journal

import (
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
)

// BenchmarkCommit is one executor request's row through Commit, alone
// (no other commit in flight), as at 1 concurrent: the row's
// transaction, and every journalCountEvery rows a retention pass that,
// past the per-app bound, drops as many old rows as it counts.
func BenchmarkCommit(b *testing.B) {
	st, err := store.Open(b.Context(), store.Options{Dir: filepath.Join(b.TempDir(), "data"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	e := store.JournalEntry{At: time.Now(), AppID: "app1", Slot: "api", Host: "api.example.com", Method: "GET", Outcome: "sent", Status: 200, Duration: 3 * time.Millisecond}
	// The app's bound reached (store.DefaultJournalKeepPerApp): retention
	// drops as many rows as the loop adds.
	if err := st.UpdateJournal(b.Context(), func(tx *store.Tx) error {
		_, err := tx.InsertJournals(slices.Repeat([]store.JournalEntry{e}, store.DefaultJournalKeepPerApp))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	j := NewJournal(st, time.Now, slog.New(slog.DiscardHandler))
	b.ReportAllocs()
	for b.Loop() {
		e.At = time.Now()
		if _, err := j.Commit(e); err != nil {
			b.Fatal(err)
		}
	}
}
