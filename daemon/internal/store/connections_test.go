package store

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

func declared(app, slot string) Connection {
	return Connection{
		AppID: app, Slot: slot,
		RequirementJSON:    `{"slot":"` + slot + `","kind":"api_key"}`,
		RequirementVersion: 1,
		Provenance:         ProvenanceUser,
		Status:             StatusDeclared,
		AllowedHosts:       "[]",
	}
}

// conformance: P3-C12.2-19
func TestUpsertAndReadConnection(t *testing.T) {
	c := newClock()
	s := openStore(t, func(o *Options) { o.Now = c.Now })
	approvedAt := time.Date(2026, 4, 1, 8, 0, 0, 987654321, time.UTC)
	row := declared("app-1", "github")
	row.Status, row.ApprovedAt = StatusApproved, &approvedAt
	row.Confidence = ptr(0.75)
	row.PendingRequirementJSON = ptr(`{"slot":"github","kind":"bearer_token"}`)
	row.AllowedHosts = `["api.github.com"]`
	var stored Connection
	update(t, s, func(tx *Tx) error {
		var err error
		stored, err = tx.UpsertConnection(row)
		return err
	})
	if want := approvedAt.Truncate(time.Millisecond); !stored.ApprovedAt.Equal(want) || approvedAt.Nanosecond() != 987654321 {
		t.Errorf("stored ApprovedAt = %v, want %v (and the caller's value untouched)", stored.ApprovedAt, want)
	}
	if want := c.Now().Truncate(time.Millisecond); !stored.CreatedAt.Equal(want) || !stored.UpdatedAt.Equal(want) {
		t.Errorf("CreatedAt, UpdatedAt = %v, %v, want the transaction time %v", stored.CreatedAt, stored.UpdatedAt, want)
	}
	view(t, s, func(tx *Tx) error {
		got, err := tx.Connection("app-1", "github")
		if err != nil {
			return err
		}
		if !sameConnection(got, stored) {
			t.Errorf("Connection() = %+v, want %+v", got, stored)
		}
		if !got.NeedsReapproval() {
			t.Error("approved row with a pending requirement: NeedsReapproval() = false")
		}
		var raw struct{ approved, created, imported string }
		tx.queryRow("SELECT approved_at, created_at, typeof(imported) FROM snug_connections").Scan(&raw.approved, &raw.created, &raw.imported)
		if raw.approved != "2026-04-01T08:00:00.987Z" || raw.created != "2026-05-01T10:00:00.123Z" || raw.imported != "integer" {
			t.Errorf("stored columns = %+v, want RFC 3339 UTC milliseconds and an integer flag", raw)
		}
		return nil
	})

	// Replacing keeps CreatedAt and moves UpdatedAt.
	c.Advance(time.Minute)
	update(t, s, func(tx *Tx) error {
		cur, err := tx.Connection("app-1", "github")
		if err != nil {
			return err
		}
		cur.PendingRequirementJSON = nil
		_, err = tx.UpsertConnection(cur)
		return err
	})
	view(t, s, func(tx *Tx) error {
		got, _ := tx.Connection("app-1", "github")
		if !got.CreatedAt.Equal(stored.CreatedAt) || !got.UpdatedAt.After(stored.UpdatedAt) || got.PendingRequirementJSON != nil {
			t.Errorf("after replace: %+v", got)
		}
		if got.NeedsReapproval() {
			t.Error("NeedsReapproval() = true without a pending requirement")
		}
		return nil
	})
}

func sameConnection(a, b Connection) bool {
	eqTime := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	eqStr := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqF := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.AppID == b.AppID && a.Slot == b.Slot && a.RequirementJSON == b.RequirementJSON &&
		a.RequirementVersion == b.RequirementVersion && a.Provenance == b.Provenance && eqF(a.Confidence, b.Confidence) &&
		a.Status == b.Status && eqStr(a.PendingRequirementJSON, b.PendingRequirementJSON) && a.Imported == b.Imported &&
		a.AllowedHosts == b.AllowedHosts && eqTime(a.ApprovedAt, b.ApprovedAt) && eqTime(a.RevokedAt, b.RevokedAt) &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func TestListAndCountConnections(t *testing.T) {
	s := openStore(t)
	revoked := declared("a", "c-revoked")
	revoked.Status, revoked.ApprovedAt, revoked.RevokedAt = StatusRevoked, ptr(time.Now()), ptr(time.Now())
	update(t, s, func(tx *Tx) error {
		for _, c := range []Connection{declared("b", "x"), declared("a", "b"), declared("a", "a"), revoked, declared("a:b", "a")} {
			if _, err := tx.UpsertConnection(c); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx *Tx) error {
		got, err := tx.Connections("a")
		if err != nil || len(got) != 3 || got[0].Slot != "a" || got[1].Slot != "b" || got[2].Slot != "c-revoked" {
			t.Errorf("Connections(a) = %d rows, %v, want a, b, c-revoked", len(got), err)
		}
		// Tombstones count toward the cap; the writers compare this number.
		if n, err := tx.CountConnections("a"); n != 3 || err != nil {
			t.Errorf("CountConnections(a) = %d, %v, want 3 (the revoked tombstone included)", n, err)
		}
		if n, _ := tx.CountConnections("nobody"); n != 0 {
			t.Errorf("CountConnections(nobody) = %d, want 0", n)
		}
		if _, err := tx.Connection("a", "zzz"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Connection(a, zzz) = %v, want ErrNotFound", err)
		}
		return nil
	})
	all, err := s.AllConnections(t.Context())
	var keys []string
	for _, c := range all {
		keys = append(keys, c.AppID+"/"+c.Slot)
	}
	if err != nil || strings.Join(keys, " ") != "a/a a/b a/c-revoked a:b/a b/x" {
		t.Errorf("AllConnections() = %q, %v", keys, err)
	}
}

// conformance: P3-C12.2-05, P3-C12.2-09, P3-C12.2-11, P3-C12.2-12
func TestUpsertConnectionRefusesInvalidRows(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Connection)
	}{
		{"mixed-case slot", func(c *Connection) { c.Slot = "Spotify" }},
		{"slot starting with a dash", func(c *Connection) { c.Slot = "-a" }},
		{"slot with an underscore", func(c *Connection) { c.Slot = "a_b" }},
		{"41-character slot", func(c *Connection) { c.Slot = strings.Repeat("a", 41) }},
		{"empty slot", func(c *Connection) { c.Slot = "" }},
		{"slot with a colon", func(c *Connection) { c.Slot = "a:b" }},
		{"non-ASCII slot", func(c *Connection) { c.Slot = "spotif\u00fd" }},
		{"empty app id", func(c *Connection) { c.AppID = "" }},
		{"129-character app id", func(c *Connection) { c.AppID = strings.Repeat("a", 129) }},
		{"app id not UTF-8", func(c *Connection) { c.AppID = "a\xff" }},
		{"status pending", func(c *Connection) { c.Status = "pending" }},
		{"status Approved", func(c *Connection) { c.Status = "Approved" }},
		{"status empty", func(c *Connection) { c.Status = "" }},
		{"provenance assistant", func(c *Connection) { c.Provenance = "assistant" }},
		{"provenance empty", func(c *Connection) { c.Provenance = "" }},
		{"pending on a declared row", func(c *Connection) { c.PendingRequirementJSON = ptr("{}") }},
		{"pending on a revoked row", func(c *Connection) {
			c.Status, c.RevokedAt, c.PendingRequirementJSON = StatusRevoked, ptr(time.Now()), ptr("{}")
		}},
		{"approved without approved_at", func(c *Connection) { c.Status = StatusApproved }},
		{"revoked without revoked_at", func(c *Connection) { c.Status = StatusRevoked }},
		{"imported approved row", func(c *Connection) {
			c.Status, c.ApprovedAt, c.Imported = StatusApproved, ptr(time.Now()), true
		}},
		{"requirement not JSON", func(c *Connection) { c.RequirementJSON = "{" }},
		{"pending not JSON", func(c *Connection) {
			c.Status, c.ApprovedAt, c.PendingRequirementJSON = StatusApproved, ptr(time.Now()), ptr("nope")
		}},
		{"allowed_hosts an object", func(c *Connection) { c.AllowedHosts = `{"a":1}` }},
		{"allowed_hosts with a number", func(c *Connection) { c.AllowedHosts = `["a", 1]` }},
		{"allowed_hosts null", func(c *Connection) { c.AllowedHosts = `null` }},
		{"allowed_hosts empty", func(c *Connection) { c.AllowedHosts = `` }},
		{"infinite confidence", func(c *Connection) { c.Confidence = ptr(math.Inf(1)) }},
		{"NaN confidence", func(c *Connection) { c.Confidence = ptr(math.NaN()) }},
		{"negative version", func(c *Connection) { c.RequirementVersion = -1 }},
	}
	s := openStore(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := declared("app", "slot")
			tc.edit(&row)
			err := s.Update(t.Context(), func(tx *Tx) error { _, err := tx.UpsertConnection(row); return err })
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("UpsertConnection(%s) = %v, want ErrInvalid", tc.name, err)
			}
		})
	}
	view(t, s, func(tx *Tx) error {
		if n, _ := tx.CountConnections("app"); n != 0 {
			t.Errorf("%d refused rows were stored", n)
		}
		return nil
	})
}

func TestUpsertConnectionAcceptsEveryLegalShape(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		edit func(*Connection)
	}{
		{"declared", func(c *Connection) {}},
		{"declared, imported", func(c *Connection) { c.Imported = true }},
		{"declared after reconnect keeps revoked_at", func(c *Connection) { c.RevokedAt, c.ApprovedAt = &now, &now }},
		{"approved", func(c *Connection) { c.Status, c.ApprovedAt = StatusApproved, &now }},
		{"approved with pending", func(c *Connection) {
			c.Status, c.ApprovedAt, c.PendingRequirementJSON = StatusApproved, &now, ptr("{}")
		}},
		{"revoked", func(c *Connection) { c.Status, c.ApprovedAt, c.RevokedAt = StatusRevoked, &now, &now }},
		{"every provenance", func(c *Connection) { c.Provenance = ProvenanceRegistry }},
		{"inference", func(c *Connection) { c.Provenance, c.Confidence = ProvenanceInference, ptr(0.0) }},
		{"user_docs", func(c *Connection) { c.Provenance = ProvenanceUserDocs }},
		{"starter", func(c *Connection) { c.Provenance = ProvenanceStarter }},
		{"40-character slot", func(c *Connection) { c.Slot = "a" + strings.Repeat("-", 38) + "9" }},
		{"one-character slot", func(c *Connection) { c.Slot = "0" }},
		{"128-character app id with colons and percent", func(c *Connection) { c.AppID = strings.Repeat("a:%_", 32) }},
	}
	s := openStore(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row := declared("app", "slot")
			tc.edit(&row)
			update(t, s, func(tx *Tx) error { _, err := tx.UpsertConnection(row); return err })
		})
	}
}

func TestStagedOrigin(t *testing.T) {
	s := openStore(t)
	update(t, s, func(tx *Tx) error {
		if err := tx.PutStagedOrigin("app", "s", `{"v":1}`, StagedOrigin{Provenance: ProvenanceUser}); err != nil {
			return err
		}
		// A later change replaces the record.
		return tx.PutStagedOrigin("app", "s", `{"v":2}`, StagedOrigin{Provenance: ProvenanceInference, Confidence: ptr(0.5)})
	})
	view(t, s, func(tx *Tx) error {
		if o, ok, err := tx.StagedOrigin("app", "s", `{"v":2}`); err != nil || !ok || o.Provenance != ProvenanceInference || *o.Confidence != 0.5 {
			t.Errorf("StagedOrigin(v2) = %+v, %v, %v; want inference 0.5", o, ok, err)
		}
		// A record describes exactly its own change.
		for _, q := range [][3]string{{"app", "s", `{"v":1}`}, {"app", "s", `{"v": 2}`}, {"app", "t", `{"v":2}`}, {"other", "s", `{"v":2}`}} {
			if o, ok, err := tx.StagedOrigin(q[0], q[1], q[2]); err != nil || ok {
				t.Errorf("StagedOrigin%q = %+v, %v, %v; want nothing", q, o, ok, err)
			}
		}
		return nil
	})
	update(t, s, func(tx *Tx) error { return tx.DeleteStagedOrigin("app", "s") })
	view(t, s, func(tx *Tx) error {
		if _, ok, _ := tx.StagedOrigin("app", "s", `{"v":2}`); ok {
			t.Error("StagedOrigin after DeleteStagedOrigin found a record")
		}
		return nil
	})
	err := s.Update(t.Context(), func(tx *Tx) error {
		return tx.PutStagedOrigin("app", "s", "{}", StagedOrigin{Provenance: "assistant"})
	})
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("PutStagedOrigin(provenance assistant) = %v, want ErrInvalid", err)
	}
}
