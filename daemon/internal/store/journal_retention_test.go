package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestJournalRetentionPlans proves retention cannot degrade into a scan:
// on a new store, and on one reopened after Close ran PRAGMA optimize on a
// near-empty journal (statistics of one row, what once turned the
// per-insert DELETE into a full scan), every retention statement still
// searches the rowid or a named index. A scan of a whole index is a scan
// too; the one statement allowed to scan is journalFattest, which walks
// its index from the top and stops at the first row.
func TestJournalRetentionPlans(t *testing.T) {
	for _, reopened := range []bool{false, true} {
		s := openStore(t)
		update(t, s, func(tx *Tx) error {
			_, err := tx.InsertJournal(JournalEntry{AppID: "a", Outcome: "sent"})
			return err
		})
		if reopened {
			dir := s.Dir()
			s.Close()
			s = openStore(t, func(o *Options) { o.Dir = dir })
		}
		update(t, s, func(tx *Tx) error { // the writer's plans: retention runs there
			checkRetentionPlans(t, tx)
			return nil
		})
	}
}

func checkRetentionPlans(t *testing.T, tx *Tx) {
	t.Helper()
	for query, args := range retentionStatements {
		got := queryPlan(t, tx, query, args...)
		for _, line := range got {
			if strings.HasPrefix(line, "SCAN ") && (query != journalFattest || !strings.Contains(line, "INDEX snugd_journal_counts_n")) {
				t.Errorf("plan of %q = %q: a scan", query, got)
			}
		}
		joined := strings.Join(got, "; ")
		if len(got) > 0 && !strings.Contains(joined, "PRIMARY KEY") && !strings.Contains(joined, "INDEX") {
			t.Errorf("plan of %q = %q: neither the rowid nor an index", query, got)
		}
	}
}

func queryPlan(t *testing.T, tx *Tx, query string, args ...any) []string {
	t.Helper()
	rows, err := tx.query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain %q: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return plan
}

// TestJournalFloodLeavesAnotherAppsEntries: one app writing far past its
// bound loses only its own oldest entries; another app's entries and the
// flooding app's own user acts stay.
func TestJournalFloodLeavesAnotherAppsEntries(t *testing.T) {
	s := openStore(t, func(o *Options) { o.JournalKeep = 40; o.JournalKeepPerApp = 10 })
	update(t, s, func(tx *Tx) error {
		for i := range 3 {
			if _, err := tx.InsertJournal(JournalEntry{AppID: "quiet", Outcome: "sent", Note: fmt.Sprint("q", i)}); err != nil {
				return err
			}
		}
		if _, err := tx.InsertJournal(JournalEntry{AppID: "loud", Outcome: OutcomeAct, Act: "approve", Note: "by ctl"}); err != nil {
			return err
		}
		if _, err := tx.InsertJournal(JournalEntry{Outcome: OutcomeAct, Act: "host-pair", Note: "h_1"}); err != nil {
			return err
		}
		return nil
	})
	for range 50 { // many transactions, as the batcher writes them
		update(t, s, func(tx *Tx) error {
			for range 20 {
				if _, err := tx.InsertJournal(JournalEntry{AppID: "loud", Outcome: "refused", Gate: "host", Code: "NET_HOST_NOT_ALLOWED"}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	view(t, s, func(tx *Tx) error {
		quiet, _ := tx.Journal(JournalQuery{AppID: "quiet"})
		if len(quiet) != 3 {
			t.Errorf("quiet app keeps %d entries after the flood, want its 3", len(quiet))
		}
		loud, _ := tx.Journal(JournalQuery{AppID: "loud", Limit: 1000})
		var acts, refusals int
		for _, e := range loud {
			if e.Outcome == OutcomeAct {
				acts++
			} else {
				refusals++
			}
		}
		if acts != 1 || refusals != 10 {
			t.Errorf("loud app keeps %d acts and %d refusals, want 1 and its newest 10", acts, refusals)
		}
		all, _ := tx.Journal(JournalQuery{Limit: 1000})
		hostActs := 0
		for _, e := range all {
			if e.Act == "host-pair" && e.AppID == "" {
				hostActs++
			}
		}
		if len(all) != 15 || hostActs != 1 {
			t.Errorf("journal holds %d entries, %d host-pair acts, want 15 and 1", len(all), hostActs)
		}
		var counted, size int
		tx.queryRow("SELECT sum(n) FROM snugd_journal_counts").Scan(&counted)
		tx.queryRow("SELECT n FROM snugd_journal_size").Scan(&size)
		if counted != 15 || size != 15 {
			t.Errorf("counts say %d, size %d, want 15 (the rows)", counted, size)
		}
		return nil
	})
}

// TestJournalGlobalCapTakesFromTheFattest: past the global cap, many apps'
// floods cost the biggest classes, not a small app's entries.
func TestJournalGlobalCapTakesFromTheFattest(t *testing.T) {
	s := openStore(t, func(o *Options) { o.JournalKeep = 30; o.JournalKeepPerApp = 20 })
	update(t, s, func(tx *Tx) error {
		for range 2 {
			if _, err := tx.InsertJournal(JournalEntry{AppID: "small", Outcome: "sent"}); err != nil {
				return err
			}
		}
		for i := range 200 {
			if _, err := tx.InsertJournal(JournalEntry{AppID: fmt.Sprint("flood", i%4), Outcome: "refused"}); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx *Tx) error {
		small, _ := tx.Journal(JournalQuery{AppID: "small"})
		all, _ := tx.Journal(JournalQuery{Limit: 1000})
		if len(small) != 2 || len(all) != 30 {
			t.Errorf("small keeps %d (want 2), journal holds %d (want the cap, 30)", len(small), len(all))
		}
		return nil
	})
}

func TestJournalBumpCountsRepeats(t *testing.T) {
	s := openStore(t)
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var id int64
	update(t, s, func(tx *Tx) error {
		e, err := tx.InsertJournal(JournalEntry{At: at, AppID: "a", Outcome: "refused", Code: "X"})
		id = e.ID
		if err != nil {
			return err
		}
		for i := range 4 {
			if ok, err := tx.BumpJournal(id, 1, at.Add(time.Duration(i+1)*time.Second)); !ok || err != nil {
				t.Errorf("BumpJournal = %v, %v", ok, err)
			}
		}
		if ok, err := tx.BumpJournal(id+99, 1, at); ok || err != nil {
			t.Errorf("BumpJournal(missing) = %v, %v, want false", ok, err)
		}
		return nil
	})
	view(t, s, func(tx *Tx) error {
		e, err := tx.JournalEntry(id)
		if err != nil || e.Count != 5 || !e.LastAt.Equal(at.Add(4*time.Second)) || !e.At.Equal(at) {
			t.Errorf("entry = %+v, %v, want count 5, last 4 s after the first", e, err)
		}
		return nil
	})
}

// BenchmarkInsertJournal measures one entry appended to a journal at its
// per-app bound, in batches of 256 as the batcher writes them: the
// retention cost is the same whatever the journal holds.
func BenchmarkInsertJournal(b *testing.B) {
	s, err := Open(b.Context(), Options{Dir: b.TempDir() + "/data", JournalKeepPerApp: 2000})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	e := JournalEntry{AppID: "app", Slot: "mail", Host: "api.example.com", Method: "GET", Outcome: "sent", Status: 200}
	fill := func(n int) {
		batch := make([]JournalEntry, n)
		for i := range batch {
			batch[i] = e
		}
		err := s.Update(b.Context(), func(tx *Tx) error {
			_, err := tx.InsertJournals(batch)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	fill(2000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 256 {
		fill(min(256, b.N-i))
	}
}

// TestJournalOneAppIndexMigration rolls a database back to schema 12
// (snugd_journal_app beside snugd_journal_retain) and reopens it:
// migration 13 drops the index, the rows stay, and one app's page of
// both kinds still comes newest first, merged from its two classes and
// paged by Before.
func TestJournalOneAppIndexMigration(t *testing.T) {
	s := openStore(t)
	dir := s.Dir()
	var want []int64 // app a's ids, newest first
	update(t, s, func(tx *Tx) error {
		for i := range 12 {
			e := JournalEntry{AppID: "a", Outcome: "sent"}
			switch {
			case i%3 == 1:
				e = JournalEntry{AppID: "a", Outcome: OutcomeAct, Act: "approve"}
			case i%4 == 3:
				e.AppID = "b"
			}
			e, err := tx.InsertJournal(e)
			if err != nil {
				return err
			}
			if e.AppID == "a" {
				want = append([]int64{e.ID}, want...)
			}
		}
		_, err := tx.exec("CREATE INDEX snugd_journal_app ON snugd_journal (app_id, id); UPDATE snugd_meta SET value = 12 WHERE key = 'schema_version'")
		return err
	})
	s.Close()
	s = openStore(t, func(o *Options) { o.Dir = dir })
	var (
		v, n        int
		first, next []JournalEntry
	)
	view(t, s, func(tx *Tx) error {
		if err := tx.queryRow("SELECT value FROM snugd_meta WHERE key = 'schema_version'").Scan(&v); err != nil {
			return err
		}
		if err := tx.queryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'snugd_journal_app'").Scan(&n); err != nil {
			return err
		}
		var err error
		if first, err = tx.Journal(JournalQuery{AppID: "a", Limit: 5}); err != nil {
			return err
		}
		next, err = tx.Journal(JournalQuery{AppID: "a", Limit: 5, Before: first[len(first)-1].ID})
		return err
	})
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if v != len(ms) || n != 0 {
		t.Fatalf("after migrating from schema 12: schema %d, snugd_journal_app present %d times, want schema %d and none", v, n, len(ms))
	}
	if got := ids(append(first, next...)); !slices.Equal(got, want[:10]) {
		t.Errorf("app a's first two pages of 5 = %v, want %v (newest first, acts and requests merged)", got, want[:10])
	}
}
