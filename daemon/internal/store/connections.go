package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/snug/snugd/daemon/internal/ident"
	"math"
	"time"
)

// Status is a connection row's status: exactly three values.
type Status string

const (
	StatusDeclared Status = "declared"
	StatusApproved Status = "approved"
	StatusRevoked  Status = "revoked"
)

// Provenance says which channel proposed a requirement.
type Provenance string

const (
	ProvenanceRegistry  Provenance = "registry"
	ProvenanceInference Provenance = "inference"
	ProvenanceUserDocs  Provenance = "user_docs"
	ProvenanceStarter   Provenance = "starter"
	ProvenanceUser      Provenance = "user"
)

func (p Provenance) valid() bool {
	switch p {
	case ProvenanceRegistry, ProvenanceInference, ProvenanceUserDocs, ProvenanceStarter, ProvenanceUser:
		return true
	}
	return false
}

// Connection is one snug_connections row, column for column. A nil pointer
// is SQL NULL.
type Connection struct {
	AppID                  string
	Slot                   string
	RequirementJSON        string // credential-free requirement, stored byte for byte
	RequirementVersion     int64
	Provenance             Provenance
	Confidence             *float64 // display-only
	Status                 Status
	PendingRequirementJSON *string // staged change of an approved row
	Imported               bool
	AllowedHosts           string // the frozen ceiling as a JSON array, byte for byte
	ApprovedAt             *time.Time
	RevokedAt              *time.Time // the tombstone; survives reconnect
	CreatedAt              time.Time
	UpdatedAt              time.Time
}

// NeedsReapproval reports whether an approved row has a staged change: the
// derived "needs re-approval", never a fourth status.
func (c *Connection) NeedsReapproval() bool {
	return c.Status == StatusApproved && c.PendingRequirementJSON != nil
}

// check holds a row to the invariants every writer keeps, as the last line
// before storage: the spec's value sets (slot pattern, status, provenance)
// and the writers' shapes (pending only on an approved
// row; an approved row has approved_at and a revoked one revoked_at; an
// imported row is declared, since approval clears the flag and import never
// lands a row approved or revoked). The requirement schema itself is
// daemon/requirement's to check.
func (c *Connection) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: connection (%q, %q): %s", ErrInvalid, c.AppID, c.Slot, fmt.Sprintf(format, args...))
	}
	if err := ident.CheckAppID(c.AppID); err != nil {
		return bad("%v", err)
	}
	if !ident.ValidSlot(c.Slot) {
		return bad("slot does not match %s", ident.SlotPattern)
	}
	switch c.Status {
	case StatusDeclared, StatusApproved, StatusRevoked:
	default:
		return bad("status %q is not declared, approved or revoked", c.Status)
	}
	if !c.Provenance.valid() {
		return bad("provenance %q is not one of registry, inference, user_docs, starter, user", c.Provenance)
	}
	if c.RequirementVersion < 0 {
		return bad("negative requirement version")
	}
	if c.Confidence != nil && (math.IsNaN(*c.Confidence) || math.IsInf(*c.Confidence, 0)) {
		return bad("confidence is not a finite number")
	}
	if !json.Valid([]byte(c.RequirementJSON)) {
		return bad("requirement_json is not JSON")
	}
	if c.PendingRequirementJSON != nil {
		if c.Status != StatusApproved {
			return bad("a %s row cannot carry a pending requirement", c.Status)
		}
		if !json.Valid([]byte(*c.PendingRequirementJSON)) {
			return bad("pending_requirement_json is not JSON")
		}
	}
	var hosts []string
	if err := json.Unmarshal([]byte(c.AllowedHosts), &hosts); err != nil || hosts == nil {
		return bad("allowed_hosts is not a JSON array of strings")
	}
	if c.Status == StatusApproved && c.ApprovedAt == nil {
		return bad("an approved row needs approved_at")
	}
	if c.Status == StatusRevoked && c.RevokedAt == nil {
		return bad("a revoked row needs revoked_at")
	}
	if c.Imported && c.Status != StatusDeclared {
		return bad("an imported row must be declared")
	}
	return nil
}

const connectionColumns = `app_id, slot, requirement_json, requirement_version, provenance, confidence, status,
	pending_requirement_json, imported, allowed_hosts, approved_at, revoked_at, created_at, updated_at`

// UpsertConnection inserts c, or replaces the row with its (AppID, Slot),
// after checking the invariants above (ErrInvalid). It stamps UpdatedAt with
// the transaction's time, and CreatedAt too when c.CreatedAt is zero, and
// returns the row as stored. Which transitions are legal is the writers'
// business; the store writes what it is given.
func (tx *Tx) UpsertConnection(c Connection) (Connection, error) {
	if err := c.check(); err != nil {
		return Connection{}, err
	}
	return tx.upsertConnection(c)
}

// ForgeConnectionForTest writes c without the invariant checks, as a
// tampered or foreign database file would hold it. Only tests call it: they
// prove that the writers, the index and import re-validate what they read
// instead of trusting storage. A forged row was resolved against no
// registry, as a row an older snugd wrote under other pins, so it also
// forgets the pin re-consent's record: the next start checks every row.
func (tx *Tx) ForgeConnectionForTest(c Connection) error {
	if _, err := tx.upsertConnection(c); err != nil {
		return err
	}
	return tx.ForgetReconsentRecord()
}

func (tx *Tx) upsertConnection(c Connection) (Connection, error) {
	c.UpdatedAt = tx.now
	if c.CreatedAt.IsZero() {
		c.CreatedAt = tx.now
	}
	c.CreatedAt = c.CreatedAt.UTC().Truncate(time.Millisecond)
	c.ApprovedAt, c.RevokedAt = truncated(c.ApprovedAt), truncated(c.RevokedAt)
	var confidence any
	if c.Confidence != nil {
		confidence = *c.Confidence
	}
	var pending any
	if c.PendingRequirementJSON != nil {
		pending = *c.PendingRequirementJSON
	}
	_, err := tx.exec(`INSERT INTO snug_connections (`+connectionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (app_id, slot) DO UPDATE SET
			requirement_json = excluded.requirement_json,
			requirement_version = excluded.requirement_version,
			provenance = excluded.provenance,
			confidence = excluded.confidence,
			status = excluded.status,
			pending_requirement_json = excluded.pending_requirement_json,
			imported = excluded.imported,
			allowed_hosts = excluded.allowed_hosts,
			approved_at = excluded.approved_at,
			revoked_at = excluded.revoked_at,
			created_at = excluded.created_at,
			updated_at = excluded.updated_at`,
		c.AppID, c.Slot, c.RequirementJSON, c.RequirementVersion, string(c.Provenance), confidence, string(c.Status),
		pending, c.Imported, c.AllowedHosts, formatTimePtr(c.ApprovedAt), formatTimePtr(c.RevokedAt),
		FormatTime(c.CreatedAt), FormatTime(c.UpdatedAt))
	if err != nil {
		return Connection{}, fmt.Errorf("upsert connection (%q, %q): %w", c.AppID, c.Slot, err)
	}
	return c, nil
}

// truncated returns a copy of *t at the store's precision (nil for nil), so
// the row returned is the row a later read returns.
func truncated(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Millisecond)
	return &u
}

// Connection returns the row (appID, slot), or ErrNotFound.
func (tx *Tx) Connection(appID, slot string) (Connection, error) {
	return queryOne(tx, fmt.Sprintf("get connection (%q, %q)", appID, slot), fmt.Sprintf("connection (%q, %q)", appID, slot),
		scanConnection, "SELECT "+connectionColumns+" FROM snug_connections WHERE app_id = ? AND slot = ?", appID, slot)
}

// Connections returns every row of appID, tombstones included, by slot.
func (tx *Tx) Connections(appID string) ([]Connection, error) {
	return queryAll(tx, fmt.Sprintf("list connections of %q", appID), scanConnection,
		"SELECT "+connectionColumns+" FROM snug_connections WHERE app_id = ? ORDER BY slot", appID)
}

// AllConnections returns every row, by app and slot, in one query: what the
// daemon's in-memory grant index is built from.
func (tx *Tx) AllConnections() ([]Connection, error) {
	return queryAll(tx, "list connections", scanConnection, "SELECT "+connectionColumns+" FROM snug_connections ORDER BY app_id, slot")
}

// ConnectionHead is one row as EachConnectionHead and AppConnectionHeads
// hand it over: the columns the grant index holds, and those that tell
// one version of the row from another (every writer stamps updated_at,
// and bumps requirement_version when the requirement changes). Every
// slice is valid only during the callback.
type ConnectionHead struct {
	AppID, Slot, Status, AllowedHosts []byte
	Imported                          bool
	// Version is imported, requirement_version and updated_at in one
	// text ("1,3,2026-05-01T10:00:00.123Z"): one column costs the scan
	// less than three.
	Version []byte
	// RequirementJSON is the requirement, from AppConnectionHeads only.
	RequirementJSON []byte
}

const headColumns = "app_id, slot, status, allowed_hosts, imported || ',' || requirement_version || ',' || updated_at"

// EachConnectionHead calls fn with every row, in storage order (not by
// app), in one read transaction, without reading a requirement or
// building a Connection per row: the start's index build reads 100,000
// rows through it. An error from fn stops the scan and is returned.
func (s *Store) EachConnectionHead(ctx context.Context, fn func(*ConnectionHead) error) error {
	return s.View(ctx, func(tx *Tx) error {
		return eachHead(tx, false, fn, "SELECT "+headColumns+" FROM snug_connections")
	})
}

// AppConnectionHeads calls fn with every row of appID, by slot, its
// requirement included, in one read transaction.
func (s *Store) AppConnectionHeads(ctx context.Context, appID string, fn func(*ConnectionHead) error) error {
	return s.View(ctx, func(tx *Tx) error {
		return eachHead(tx, true, fn, "SELECT "+headColumns+", requirement_json FROM snug_connections WHERE app_id = ? ORDER BY slot", appID)
	})
}

func eachHead(tx *Tx, withRequirement bool, fn func(*ConnectionHead) error, query string, args ...any) error {
	rows, err := tx.query(query, args...)
	if err != nil {
		return fmt.Errorf("scan connections: %w", err)
	}
	defer rows.Close()
	var (
		h                                     ConnectionHead
		app, slot, status, hosts, version, rq sql.RawBytes
	)
	dest := []any{&app, &slot, &status, &hosts, &version}
	if withRequirement {
		dest = append(dest, &rq)
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("scan connections: %w", err)
		}
		h.AppID, h.Slot, h.Status, h.AllowedHosts, h.Version, h.RequirementJSON = app, slot, status, hosts, version, rq
		h.Imported = len(version) > 1 && version[0] == '1' && version[1] == ','
		if err := fn(&h); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan connections: %w", err)
	}
	return nil
}

// ConnectionText is one row as EachConnectionText hands it over: its key,
// status and requirement texts. Every slice is valid only during the
// callback; PendingRequirementJSON is nil when the column is NULL.
type ConnectionText struct {
	AppID, Slot, Status                     []byte
	RequirementJSON, PendingRequirementJSON []byte
}

// EachConnectionText calls fn with every row, in storage order, in one
// read transaction, without building a Connection per row: the start's pin
// re-consent pass filters 100,000 rows through it and reads in full only
// the few it must check. An error from fn stops the scan and is returned.
func (s *Store) EachConnectionText(ctx context.Context, fn func(*ConnectionText) error) error {
	return s.View(ctx, func(tx *Tx) error { return eachText(tx, fn) })
}

// eachText is EachConnectionText through database/sql.
func eachText(tx *Tx, fn func(*ConnectionText) error) error {
	rows, err := tx.query("SELECT app_id, slot, status, requirement_json, pending_requirement_json, pending_requirement_json IS NOT NULL FROM snug_connections")
	if err != nil {
		return fmt.Errorf("scan connection requirements: %w", err)
	}
	defer rows.Close()
	var (
		c                            ConnectionText
		app, slot, status, req, pend sql.RawBytes
		hasPending                   bool
	)
	for rows.Next() {
		if err := rows.Scan(&app, &slot, &status, &req, &pend, &hasPending); err != nil {
			return fmt.Errorf("scan connection requirements: %w", err)
		}
		c.AppID, c.Slot, c.Status, c.RequirementJSON, c.PendingRequirementJSON = app, slot, status, req, nil
		if hasPending {
			c.PendingRequirementJSON = pend
			if c.PendingRequirementJSON == nil {
				c.PendingRequirementJSON = []byte{}
			}
		}
		if err := fn(&c); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("scan connection requirements: %w", err)
	}
	return nil
}

// CountConnections counts every row of appID, revoked tombstones included:
// the number the per-app slot cap is checked against.
func (tx *Tx) CountConnections(appID string) (int, error) {
	var n int
	if err := tx.queryRow("SELECT count(*) FROM snug_connections WHERE app_id = ?", appID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count connections of %q: %w", appID, err)
	}
	return n, nil
}

// AllConnections is View + Tx.AllConnections.
func (s *Store) AllConnections(ctx context.Context) ([]Connection, error) {
	return Read(ctx, s, (*Tx).AllConnections)
}

func scanConnection(rows *sql.Rows) (Connection, error) {
	var (
		c                          Connection
		provenance, status         string
		confidence                 sql.NullFloat64
		pending, approved, revoked sql.NullString
		created, updated           string
	)
	if err := rows.Scan(&c.AppID, &c.Slot, &c.RequirementJSON, &c.RequirementVersion, &provenance, &confidence,
		&status, &pending, &c.Imported, &c.AllowedHosts, &approved, &revoked, &created, &updated); err != nil {
		return Connection{}, fmt.Errorf("read connection: %w", err)
	}
	c.Provenance, c.Status = Provenance(provenance), Status(status)
	if confidence.Valid {
		c.Confidence = &confidence.Float64
	}
	if pending.Valid {
		c.PendingRequirementJSON = &pending.String
	}
	var errs [4]error
	c.ApprovedAt, errs[0] = parseTimePtr(approved)
	c.RevokedAt, errs[1] = parseTimePtr(revoked)
	c.CreatedAt, errs[2] = ParseTime(created)
	c.UpdatedAt, errs[3] = ParseTime(updated)
	if err := errors.Join(errs[:]...); err != nil {
		return Connection{}, fmt.Errorf("read connection (%q, %q): %w", c.AppID, c.Slot, err)
	}
	return c, nil
}

func formatTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return FormatTime(*t)
}

func parseTimePtr(ns sql.NullString) (*time.Time, error) {
	if !ns.Valid {
		return nil, nil
	}
	t, err := ParseTime(ns.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// StagedOrigin is the channel a staged change came from: its provenance
// and confidence, which the row's own columns (describing requirement_json)
// cannot hold until re-approval promotes the change.
type StagedOrigin struct {
	Provenance Provenance
	Confidence *float64 // display-only
}

// PutStagedOrigin records where the staged change pendingJSON of (appID,
// slot) came from, replacing any earlier record.
func (tx *Tx) PutStagedOrigin(appID, slot, pendingJSON string, o StagedOrigin) error {
	if !o.Provenance.valid() || (o.Confidence != nil && (math.IsNaN(*o.Confidence) || math.IsInf(*o.Confidence, 0))) {
		return fmt.Errorf("%w: staged origin (%q, %q): provenance %q or confidence out of range", ErrInvalid, appID, slot, o.Provenance)
	}
	var confidence any
	if o.Confidence != nil {
		confidence = *o.Confidence
	}
	_, err := tx.exec(`INSERT INTO snugd_staged (app_id, slot, pending_json, provenance, confidence) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (app_id, slot) DO UPDATE SET pending_json = excluded.pending_json,
			provenance = excluded.provenance, confidence = excluded.confidence`,
		appID, slot, pendingJSON, string(o.Provenance), confidence)
	if err != nil {
		return fmt.Errorf("record staged origin (%q, %q): %w", appID, slot, err)
	}
	return nil
}

// StagedOrigin returns where the staged change pendingJSON of (appID, slot)
// came from. ok is false when nothing is recorded for exactly that change.
func (tx *Tx) StagedOrigin(appID, slot, pendingJSON string) (o StagedOrigin, ok bool, err error) {
	var (
		prov       string
		confidence sql.NullFloat64
	)
	err = tx.queryRow("SELECT provenance, confidence FROM snugd_staged WHERE app_id = ? AND slot = ? AND pending_json = ?",
		appID, slot, pendingJSON).Scan(&prov, &confidence)
	if errors.Is(err, sql.ErrNoRows) {
		return StagedOrigin{}, false, nil
	}
	if err != nil {
		return StagedOrigin{}, false, fmt.Errorf("read staged origin (%q, %q): %w", appID, slot, err)
	}
	o.Provenance = Provenance(prov)
	if confidence.Valid {
		o.Confidence = &confidence.Float64
	}
	return o, true, nil
}

// DeleteStagedOrigin forgets the staged origin of (appID, slot), if any.
func (tx *Tx) DeleteStagedOrigin(appID, slot string) error {
	if _, err := tx.exec("DELETE FROM snugd_staged WHERE app_id = ? AND slot = ?", appID, slot); err != nil {
		return fmt.Errorf("forget staged origin (%q, %q): %w", appID, slot, err)
	}
	return nil
}
