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

// journalTally reads, for app's executor entries, how many rows there
// are and what the retention counter says, and the global size counter
// against the table's size.
func journalTally(t *testing.T, s *Store, app string) (rows, counted, size, total int) {
	t.Helper()
	view(t, s, func(tx *Tx) error {
		if err := tx.queryRow(`SELECT COUNT(*) FROM snugd_journal WHERE app_id = ? AND user_act = 0`, app).Scan(&rows); err != nil {
			return err
		}
		if err := tx.queryRow(`SELECT COALESCE((SELECT n FROM snugd_journal_counts WHERE app_id = ? AND user_act = 0), 0)`, app).Scan(&counted); err != nil {
			return err
		}
		if err := tx.queryRow(`SELECT COALESCE((SELECT n FROM snugd_journal_size WHERE id = 1), 0)`).Scan(&size); err != nil {
			return err
		}
		return tx.queryRow(`SELECT COUNT(*) FROM snugd_journal`).Scan(&total)
	})
	return rows, counted, size, total
}

// TestJournalUncountedStaysExact: entries appended uncounted are counted
// by the next pass (CountJournal) or the next exact insert, even across a
// reopen that stands for a crash between the two: the counters always
// end equal to the table, and the per-app bound holds after a pass.
func TestJournalUncountedStaysExact(t *testing.T) {
	dir := t.TempDir() + "/data"
	s, err := Open(t.Context(), Options{Dir: dir, JournalKeepPerApp: 50})
	if err != nil {
		t.Fatal(err)
	}
	e := JournalEntry{AppID: "app", Host: "api.example.com", Method: "GET", Outcome: "sent"}
	update(t, s, func(tx *Tx) error { _, err := tx.InsertJournal(e); return err }) // counted the old way
	update(t, s, func(tx *Tx) error { return tx.CountJournal() })                  // sets the mark
	batch := []JournalEntry{e, e, e, e, e, e, e}
	for i := range 30 {
		update(t, s, func(tx *Tx) error {
			if _, err := tx.InsertJournalsUncounted(batch); err != nil {
				return err
			}
			if i%9 == 8 {
				return tx.CountJournal()
			}
			return nil
		})
	}
	update(t, s, func(tx *Tx) error { return tx.CountJournal() })
	if rows, counted, size, total := journalTally(t, s, "app"); rows != 50 || counted != 50 || size != total {
		t.Fatalf("after a pass: %d rows, counted %d, size %d of %d; want 50, 50, equal", rows, counted, size, total)
	}
	// Appended uncounted, then "crashed": the reopened store's next exact
	// insert counts them all.
	for range 3 {
		update(t, s, func(tx *Tx) error { _, err := tx.InsertJournalsUncounted(batch); return err })
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(t.Context(), Options{Dir: dir, JournalKeepPerApp: 50}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rows, counted, _, _ := journalTally(t, s, "app"); rows != 71 || counted != 50 {
		t.Fatalf("before the next pass: %d rows, counted %d; want 71 and 50", rows, counted)
	}
	update(t, s, func(tx *Tx) error { _, err := tx.InsertJournal(e); return err })
	if rows, counted, size, total := journalTally(t, s, "app"); rows != 50 || counted != 50 || size != total {
		t.Fatalf("after the next exact insert: %d rows, counted %d, size %d of %d; want 50, 50, equal", rows, counted, size, total)
	}
}
