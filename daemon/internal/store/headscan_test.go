package store

import (
	"fmt"
	"slices"
	"testing"
)

// The raw head scan hands over what the database/sql scan (and so
// AppConnectionHeads, whose versions the first use compares with the
// start's) does, for every row, also rows written around the writers with
// values of other types than the schema's: a text, real or blob version
// or flag, a NUL inside a value, an empty or huge one; and the text scan
// the re-consent pass reads requirements with hands over what
// database/sql does too. A row the scan
// sees while a write transaction is open is the committed one.
func TestRawHeadsMatchTheSQLScan(t *testing.T) {
	s := openStore(t)
	update(t, s, func(tx *Tx) error {
		for _, c := range []Connection{declared("a", "mail"), declared("a", "cal")} {
			if _, err := tx.UpsertConnection(c); err != nil {
				return err
			}
		}
		return nil
	})
	forged := []string{
		`'b', 's1', '{}', 7, 'user', NULL, 'approved', '', 1, '["x.example"]', NULL, NULL, 't', 'u'`,
		`'b', 's2', 42, 2.5, 'user', NULL, 'approved', 17, '1,', '["x.example"]', NULL, NULL, 't', 'u'`,
		`'b', 's3', X'7B00FF7D', 'v', 'user', NULL, 'approved', X'', 1.0, '["x.example"]', NULL, NULL, 't', 'u'`,
		`'b', 's4', '', -9223372036854775808, 'user', NULL, 'revoked', '{"a":1}', X'31', X'5B5D', NULL, NULL, 't', ''`,
		`'b', 's5', 'x' || char(0) || 'y', 9223372036854775807, 'user', NULL, 'declared', 'p' || char(0), 2, '', NULL, NULL, 't', 'a' || char(0) || 'b'`,
		`X'62', 's6', '{}', 1, 'user', NULL, 'approved', NULL, 1, '["' || char(0) || '"]', NULL, NULL, 't', 'u'`,
		`'b', 's7', '{}', 1, 'user', NULL, 'approved', NULL, 0, '["` + string(make([]byte, 0)) + `y.example"]', NULL, NULL, 't', hex(randomblob(3000))`,
	}
	for _, v := range forged {
		if _, err := s.w.ExecContext(t.Context(), "INSERT INTO snug_connections VALUES ("+v+")"); err != nil {
			t.Fatalf("forge %s: %v", v, err)
		}
	}
	head := func(h *ConnectionHead) string {
		return fmt.Sprintf("%q %q %q %q %q(nil %v) %v", h.AppID, h.Slot, h.Status, h.AllowedHosts, h.Version, h.Version == nil, h.Imported)
	}
	var raw, viaSQL []string
	if err := s.rawHeads(t.Context(), func(h *ConnectionHead) error { raw = append(raw, head(h)); return nil }); err != nil {
		t.Fatal(err)
	}
	err := s.View(t.Context(), func(tx *Tx) error {
		return eachHead(tx, false, func(h *ConnectionHead) error { viaSQL = append(viaSQL, head(h)); return nil }, "SELECT "+headColumns+" FROM snug_connections")
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2+len(forged) || !slices.Equal(raw, viaSQL) {
		t.Fatalf("raw scan:\n%s\ndatabase/sql scan:\n%s", raw, viaSQL)
	}

	text := func(c *ConnectionText) string {
		return fmt.Sprintf("%q %q %q %q %q(nil %v)", c.AppID, c.Slot, c.Status, c.RequirementJSON, c.PendingRequirementJSON, c.PendingRequirementJSON == nil)
	}
	raw, viaSQL = nil, nil
	if err := s.rawTexts(t.Context(), func(c *ConnectionText) error { raw = append(raw, text(c)); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.View(t.Context(), func(tx *Tx) error {
		return eachText(tx, func(c *ConnectionText) error { viaSQL = append(viaSQL, text(c)); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2+len(forged) || !slices.Equal(raw, viaSQL) {
		t.Fatalf("raw text scan:\n%s\ndatabase/sql scan:\n%s", raw, viaSQL)
	}

	// Beside an open write transaction the scan reads the committed rows.
	tx, err := s.w.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(t.Context(), "DELETE FROM snug_connections"); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.rawHeads(t.Context(), func(*ConnectionHead) error { n++; return nil }); err != nil || n != len(raw) {
		t.Fatalf("beside an open write: %d rows, %v; want %d", n, err, len(raw))
	}
}
