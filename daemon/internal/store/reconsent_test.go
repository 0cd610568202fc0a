package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func reconsentRecord(t *testing.T, s *Store) string {
	t.Helper()
	var rec string
	view(t, s, func(tx *Tx) error {
		var err error
		rec, err = tx.ReconsentRecord()
		return err
	})
	return rec
}

// TestReconsentRecord: the record is what the last Put wrote, and Forget
// and a forged row drop it.
func TestReconsentRecord(t *testing.T) {
	s := openStore(t)
	if got := reconsentRecord(t, s); got != "" {
		t.Fatalf("a new database's record = %q, want none", got)
	}
	update(t, s, func(tx *Tx) error { return tx.PutReconsentRecord("d1") })
	update(t, s, func(tx *Tx) error { return tx.PutReconsentRecord("d2") })
	if got := reconsentRecord(t, s); got != "d2" {
		t.Fatalf("record = %q, want d2", got)
	}
	if err := s.Update(t.Context(), func(tx *Tx) error { return tx.PutReconsentRecord("") }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an empty digest = %v, want ErrInvalid", err)
	}
	update(t, s, func(tx *Tx) error { return tx.ForgetReconsentRecord() })
	if got := reconsentRecord(t, s); got != "" {
		t.Fatalf("record after Forget = %q, want none", got)
	}
	update(t, s, func(tx *Tx) error { return tx.PutReconsentRecord("d3") })
	update(t, s, func(tx *Tx) error { return tx.ForgeConnectionForTest(declared("app", "mail")) })
	if got := reconsentRecord(t, s); got != "" {
		t.Fatalf("record after a forged row = %q, want none: no pass checked that row", got)
	}
}

// TestReconsentMigration rolls a database back to schema 10 holding a key
// of the record's name (no pass of schema 11 wrote it) and reopens it:
// migration 11 drops it, so the first start of this schema runs the pass.
func TestReconsentMigration(t *testing.T) {
	s := openStore(t)
	dir := s.Dir()
	update(t, s, func(tx *Tx) error {
		if _, err := tx.UpsertConnection(declared("app", "mail")); err != nil {
			return err
		}
		if err := tx.PutReconsentRecord("written-by-no-pass"); err != nil {
			return err
		}
		_, err := tx.exec("DROP INDEX snugd_pairings_pending; DROP INDEX snugd_pairings_pending_expiry; DROP INDEX snugd_pairings_done; CREATE INDEX snugd_journal_app ON snugd_journal (app_id, id); UPDATE snugd_meta SET value = 10 WHERE key = 'schema_version'")
		return err
	})
	s.Close()
	s = openStore(t, func(o *Options) { o.Dir = dir })
	if got := reconsentRecord(t, s); got != "" {
		t.Fatalf("record after migrating from schema 10 = %q, want none", got)
	}
	var v int
	var n int
	view(t, s, func(tx *Tx) error {
		if err := tx.queryRow("SELECT value FROM snugd_meta WHERE key = 'schema_version'").Scan(&v); err != nil {
			return err
		}
		return tx.queryRow("SELECT count(*) FROM snug_connections").Scan(&n)
	})
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if v != len(ms) || n != 1 {
		t.Fatalf("after migrating: schema %d with %d rows, want %d with 1", v, n, len(ms))
	}
}

// TestEachConnectionHead: every row, its head columns as stored; one
// app's with its requirement.
func TestEachConnectionHead(t *testing.T) {
	s := openStore(t)
	update(t, s, func(tx *Tx) error {
		imported := declared("b", "mail")
		imported.Imported = true
		for _, c := range []Connection{imported, declared("a", "mail"), declared("a", "cal")} {
			if _, err := tx.UpsertConnection(c); err != nil {
				return err
			}
		}
		return nil
	})
	head := func(h *ConnectionHead) string {
		return fmt.Sprintf("%s/%s %s %s %s %v %s", h.AppID, h.Slot, h.Status, h.AllowedHosts, h.Version, h.Imported, h.RequirementJSON)
	}
	var got []string
	err := s.EachConnectionHead(t.Context(), func(h *ConnectionHead) error {
		got = append(got, head(h))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	at := "2026-05-01T10:00:00.123Z"
	want := []string{
		"a/cal declared [] 0,1," + at + " false ",
		"a/mail declared [] 0,1," + at + " false ",
		"b/mail declared [] 1,1," + at + " true ",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("heads = %q, want %q", got, want)
	}
	got = nil
	err = s.AppConnectionHeads(t.Context(), "a", func(h *ConnectionHead) error {
		got = append(got, head(h))
		return nil
	})
	want = []string{
		"a/cal declared [] 0,1," + at + " false" + ` {"slot":"cal","kind":"api_key"}`,
		"a/mail declared [] 0,1," + at + " false" + ` {"slot":"mail","kind":"api_key"}`,
	}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("app heads = %q, %v; want %q", got, err, want)
	}
	stop := errors.New("stop")
	if err := s.EachConnectionHead(t.Context(), func(*ConnectionHead) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("an error from the callback = %v, want it back", err)
	}
}

// TestConnectionHeadsAgree: the start's scan and the per-app one hand
// over the same heads, so the versions the first use compares with the
// start's are written alike, for every row, also rows written around the
// writers with values of other types than the schema's: a text, real or
// blob version or flag, a NUL inside a value, an empty or huge one. The
// scan beside an open write transaction reads the committed rows.
func TestConnectionHeadsAgree(t *testing.T) {
	s := openStore(t)
	update(t, s, func(tx *Tx) error {
		_, err := tx.UpsertConnection(declared("b", "mail"))
		return err
	})
	forged := []string{
		`'b', 's1', '{}', 7, 'user', NULL, 'approved', '', 1, '["x.example"]', NULL, NULL, 't', 'u'`,
		`'b', 's2', 42, 2.5, 'user', NULL, 'approved', 17, '1,', '["x.example"]', NULL, NULL, 't', 'u'`,
		`'b', 's3', X'7B00FF7D', 'v', 'user', NULL, 'approved', X'', 1.0, '["x.example"]', NULL, NULL, 't', 'u'`,
		`'b', 's4', '', -9223372036854775808, 'user', NULL, 'revoked', '{"a":1}', X'31', X'5B5D', NULL, NULL, 't', ''`,
		`'b', 's5', 'x' || char(0) || 'y', 9223372036854775807, 'user', NULL, 'declared', 'p' || char(0), 2, '', NULL, NULL, 't', 'a' || char(0) || 'b'`,
		`'b', 's6', '{}', 1, 'user', NULL, 'approved', NULL, 1, '["' || char(0) || '"]', NULL, NULL, 't', 'u'`,
		`'b', 's7', '{}', 1, 'user', NULL, 'approved', NULL, 0, '["y.example"]', NULL, NULL, 't', hex(randomblob(3000))`,
	}
	for _, v := range forged {
		if _, err := s.w.ExecContext(t.Context(), "INSERT INTO snug_connections VALUES ("+v+")"); err != nil {
			t.Fatalf("forge %s: %v", v, err)
		}
	}
	head := func(h *ConnectionHead) string {
		return fmt.Sprintf("%q %q %q %q %q(nil %v) %v", h.AppID, h.Slot, h.Status, h.AllowedHosts, h.Version, h.Version == nil, h.Imported)
	}
	var all, app []string
	if err := s.EachConnectionHead(t.Context(), func(h *ConnectionHead) error { all = append(all, head(h)); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.AppConnectionHeads(t.Context(), "b", func(h *ConnectionHead) error { app = append(app, head(h)); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	if len(all) != 1+len(forged) || !slices.Equal(all, app) {
		t.Fatalf("EachConnectionHead:\n%s\nAppConnectionHeads:\n%s", all, app)
	}
	if !strings.Contains(all[2], `"1,,2.5,u"(nil false) true`) {
		t.Errorf("heads %s: want s2's version joined as || joins it", all)
	}

	tx, err := s.w.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(t.Context(), "DELETE FROM snug_connections"); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.EachConnectionHead(t.Context(), func(*ConnectionHead) error { n++; return nil }); err != nil || n != len(all) {
		t.Fatalf("beside an open write: %d rows, %v; want %d", n, err, len(all))
	}
}
