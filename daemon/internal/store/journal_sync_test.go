package store

import (
	"sync"
	"testing"
)

// syncModeIn reads the writer connection's synchronous setting inside a
// write transaction: 1 NORMAL, 2 FULL.
func syncModeIn(t *testing.T, update func(fn func(*Tx) error) error) int {
	t.Helper()
	var mode int
	if err := update(func(tx *Tx) error { return tx.queryRow("PRAGMA synchronous").Scan(&mode) }); err != nil {
		t.Fatal(err)
	}
	return mode
}

// TestJournalCommitsRelaxed: UpdateJournal's transactions run with
// synchronous=NORMAL, and every Update, right after one or among many,
// with FULL: the writers, custody and pairing never commit unsynced.
func TestJournalCommitsRelaxed(t *testing.T) {
	s := openStore(t)
	ctx := t.Context()
	full := func(fn func(*Tx) error) error { return s.Update(ctx, fn) }
	relaxed := func(fn func(*Tx) error) error { return s.UpdateJournal(ctx, fn) }
	const normalMode, fullMode = 1, 2
	if got := syncModeIn(t, full); got != fullMode {
		t.Fatalf("Update's synchronous = %d, want %d (FULL)", got, fullMode)
	}
	for range 2 {
		if got := syncModeIn(t, relaxed); got != normalMode {
			t.Fatalf("UpdateJournal's synchronous = %d, want %d (NORMAL)", got, normalMode)
		}
	}
	if got := syncModeIn(t, full); got != fullMode {
		t.Fatalf("Update after UpdateJournal: synchronous = %d, want %d (FULL)", got, fullMode)
	}
	// Interleaved from many goroutines: each transaction sees its own mode.
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			update, want := full, fullMode
			if i%2 == 0 {
				update, want = relaxed, normalMode
			}
			var mode int
			if err := update(func(tx *Tx) error { return tx.queryRow("PRAGMA synchronous").Scan(&mode) }); err != nil {
				t.Error(err)
			} else if mode != want {
				t.Errorf("transaction %d: synchronous = %d, want %d", i, mode, want)
			}
		})
	}
	wg.Wait()
}

// BenchmarkJournalCommit is one entry in a transaction of its own, as
// the journal commits a lone request's row: relaxed (UpdateJournal,
// synchronous=NORMAL) against FULL (Update).
func BenchmarkJournalCommit(b *testing.B) {
	for _, bc := range []struct {
		name  string
		relax bool
	}{{"normal", true}, {"full", false}} {
		b.Run(bc.name, func(b *testing.B) {
			s := openStore(b)
			e := JournalEntry{AppID: "app", Slot: "mail", Host: "api.example.com", Method: "GET", Outcome: "sent", Status: 200}
			update := s.Update
			if bc.relax {
				update = s.UpdateJournal
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := update(b.Context(), func(tx *Tx) error {
					_, err := tx.InsertJournals([]JournalEntry{e})
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOnCommitMayWrite: an OnCommit function runs once the writer
// connection is released, so it may write itself (the writer is held
// for the whole transaction, to keep its synchronous mode).
func TestOnCommitMayWrite(t *testing.T) {
	s := openStore(t)
	ran := false
	err := s.Update(t.Context(), func(tx *Tx) error {
		tx.OnCommit(func() {
			if err := s.UpdateJournal(t.Context(), func(*Tx) error { return nil }); err != nil {
				t.Errorf("a write from OnCommit = %v", err)
			}
			ran = true
		})
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("Update = %v, OnCommit ran %v", err, ran)
	}
}
