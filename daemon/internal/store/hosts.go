package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Surface is what kind of host a paired client is.
type Surface string

const (
	SurfaceWeb     Surface = "web"
	SurfaceDesktop Surface = "desktop"
)

// Host is a paired host (snugd_hosts). TokenHash is the SHA-256 of the host
// token; the token itself is never stored.
type Host struct {
	ID         string
	Name       string
	Surface    Surface
	Origin     string // the exact origin a browser host is bound to; "" for desktop hosts
	TokenHash  []byte
	CreatedAt  time.Time
	LastSeenAt *time.Time
}

const hostColumns = "id, name, surface, origin, token_hash, created_at, last_seen_at"

// InsertHost stores a newly paired host, stamping CreatedAt with the
// transaction's time when it is zero. A duplicate ID or token hash fails.
func (tx *Tx) InsertHost(h Host) (Host, error) {
	if h.ID == "" || len(h.TokenHash) == 0 {
		return Host{}, fmt.Errorf("%w: a host needs an id and a token hash", ErrInvalid)
	}
	if h.CreatedAt.IsZero() {
		h.CreatedAt = tx.now
	}
	h.CreatedAt = h.CreatedAt.UTC().Truncate(time.Millisecond)
	h.LastSeenAt = truncated(h.LastSeenAt)
	_, err := tx.exec("INSERT INTO snugd_hosts ("+hostColumns+") VALUES (?, ?, ?, ?, ?, ?, ?)",
		h.ID, h.Name, string(h.Surface), h.Origin, h.TokenHash, FormatTime(h.CreatedAt), formatTimePtr(h.LastSeenAt))
	if err != nil {
		return Host{}, fmt.Errorf("insert host %q: %w", h.ID, err)
	}
	return h, nil
}

// Host returns the host with id, or ErrNotFound.
func (tx *Tx) Host(id string) (Host, error) {
	return tx.oneHost("SELECT "+hostColumns+" FROM snugd_hosts WHERE id = ?", id)
}

// HostByTokenHash returns the host whose token hashes to hash, or
// ErrNotFound. The lookup goes through an index, so its timing depends on
// the hash; that reveals nothing usable, since the hash of a 256-bit random
// token cannot be inverted into a token.
func (tx *Tx) HostByTokenHash(hash []byte) (Host, error) {
	return tx.oneHost("SELECT "+hostColumns+" FROM snugd_hosts WHERE token_hash = ?", hash)
}

// Hosts lists every paired host, oldest first.
func (tx *Tx) Hosts() ([]Host, error) {
	return queryAll(tx, "list hosts", scanHost, "SELECT "+hostColumns+" FROM snugd_hosts ORDER BY created_at, id")
}

// TouchHost sets a host's last_seen_at to the transaction's time.
func (tx *Tx) TouchHost(id string) error {
	return tx.expectOne(fmt.Sprintf("host %q", id), "UPDATE snugd_hosts SET last_seen_at = ? WHERE id = ?", FormatTime(tx.now), id)
}

// DeleteHost unpairs a host; its pairings keep their history with host_id
// cleared. It returns ErrNotFound for an unknown id.
func (tx *Tx) DeleteHost(id string) error {
	return tx.expectOne(fmt.Sprintf("host %q", id), "DELETE FROM snugd_hosts WHERE id = ?", id)
}

func (tx *Tx) oneHost(query string, arg any) (Host, error) {
	return queryOne(tx, "get host", "host", scanHost, query, arg)
}

func scanHost(rows *sql.Rows) (Host, error) {
	var (
		h        Host
		surface  string
		created  string
		lastSeen sql.NullString
	)
	if err := rows.Scan(&h.ID, &h.Name, &surface, &h.Origin, &h.TokenHash, &created, &lastSeen); err != nil {
		return Host{}, fmt.Errorf("read host: %w", err)
	}
	h.Surface = Surface(surface)
	var errs [2]error
	h.CreatedAt, errs[0] = ParseTime(created)
	h.LastSeenAt, errs[1] = parseTimePtr(lastSeen)
	if err := errors.Join(errs[:]...); err != nil {
		return Host{}, fmt.Errorf("read host %q: %w", h.ID, err)
	}
	return h, nil
}

// expectOne runs a write that must touch exactly one row; none is
// ErrNotFound, naming what.
func (tx *Tx) expectOne(what, query string, args ...any) error {
	res, err := tx.exec(query, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	} else if n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}

// PairingState is where a host pairing request stands.
type PairingState string

const (
	PairingPending  PairingState = "pending"
	PairingApproved PairingState = "approved"
	PairingDenied   PairingState = "denied"
	PairingExpired  PairingState = "expired"
	PairingRedeemed PairingState = "redeemed"
)

// Pairing is a host pairing request (snugd_pairings). Challenge is
// BASE64URL(SHA256(verifier)); the verifier never reaches snugd until
// redemption and is not stored.
type Pairing struct {
	ID        string
	Code      string // what the user approves; unique among pending requests
	Challenge string
	Name      string
	Surface   Surface
	Origin    string
	State     PairingState
	HostID    string // the host redemption created; "" before, or after unpairing
	// Invited is true for a request recorded with an administrator's
	// invitation (snugd_invitations): approved when it was recorded.
	Invited   bool
	ExpiresAt time.Time
	CreatedAt time.Time
}

const pairingColumns = "id, code, challenge, name, surface, origin, state, host_id, invited, expires_at, created_at"

// InsertPairing stores a new request, stamping CreatedAt when it is zero. A
// duplicate ID, or a code already used by a pending request, fails.
func (tx *Tx) InsertPairing(p Pairing) (Pairing, error) {
	if p.ID == "" || p.Code == "" || p.Challenge == "" || p.ExpiresAt.IsZero() {
		return Pairing{}, fmt.Errorf("%w: a pairing needs an id, a code, a challenge and an expiry", ErrInvalid)
	}
	if p.State == "" {
		p.State = PairingPending
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = tx.now
	}
	p.CreatedAt = p.CreatedAt.UTC().Truncate(time.Millisecond)
	p.ExpiresAt = p.ExpiresAt.UTC().Truncate(time.Millisecond)
	_, err := tx.exec("INSERT INTO snugd_pairings ("+pairingColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		p.ID, p.Code, p.Challenge, p.Name, string(p.Surface), p.Origin, string(p.State), nullIfEmpty(p.HostID),
		p.Invited, FormatTime(p.ExpiresAt), FormatTime(p.CreatedAt))
	if err != nil {
		return Pairing{}, fmt.Errorf("insert pairing %q: %w", p.ID, err)
	}
	return p, nil
}

// Pairing returns the request with id, or ErrNotFound.
func (tx *Tx) Pairing(id string) (Pairing, error) {
	return tx.onePairing("SELECT "+pairingColumns+" FROM snugd_pairings WHERE id = ?", id)
}

// PendingPairingByCode returns the pending request with code, or
// ErrNotFound. Expiry is the caller's to judge (or ExpirePairings').
func (tx *Tx) PendingPairingByCode(code string) (Pairing, error) {
	return tx.onePairing(queryPendingPairingByCode, code)
}

// Pairings lists every request, newest first. It reads the whole table,
// which PrunePairings keeps small; a request path or a status read uses
// PendingPairings, LivePairings or CountLivePairings, which go through an
// index.
func (tx *Tx) Pairings() ([]Pairing, error) {
	return queryAll(tx, "list pairings", scanPairing, "SELECT "+pairingColumns+" FROM snugd_pairings ORDER BY created_at DESC, id")
}

// The pairing queries of the request paths and the status read. Each
// names the index it goes through (INDEXED BY: a missing index is an
// error, never a scan of the table); TestPairingQueriesBounded reads their
// plans.
const (
	queryPendingPairings      = "SELECT " + pairingColumns + " FROM snugd_pairings INDEXED BY snugd_pairings_pending WHERE state = 'pending' AND surface = ? ORDER BY created_at, id"
	queryLivePairings         = "SELECT " + pairingColumns + " FROM snugd_pairings INDEXED BY snugd_pairings_pending_expiry WHERE state = 'pending' AND expires_at > ? ORDER BY created_at DESC, id"
	queryCountLivePairings    = "SELECT count(*) FROM snugd_pairings INDEXED BY snugd_pairings_pending_expiry WHERE state = 'pending' AND expires_at > ?"
	queryExpirePairings       = "UPDATE snugd_pairings INDEXED BY snugd_pairings_pending_expiry SET state = 'expired' WHERE state = 'pending' AND expires_at <= ?"
	queryDeletePairingsBefore = "DELETE FROM snugd_pairings INDEXED BY snugd_pairings_done WHERE state <> 'pending' AND created_at < ?"
	queryPrunePairings        = `DELETE FROM snugd_pairings WHERE rowid IN (
		SELECT rowid FROM snugd_pairings INDEXED BY snugd_pairings_done
		WHERE state <> 'pending' AND state <> 'approved'
		ORDER BY created_at DESC LIMIT -1 OFFSET ?)`
	queryPendingPairingByCode = "SELECT " + pairingColumns + " FROM snugd_pairings WHERE code = ? AND state = 'pending'"
)

// PendingPairings lists the pending requests of surface, oldest first,
// expired or not, through an index: only pending rows are read.
func (tx *Tx) PendingPairings(surface Surface) ([]Pairing, error) {
	return queryAll(tx, "list pending pairings", scanPairing, queryPendingPairings, string(surface))
}

// LivePairings lists the pending requests whose expiry is after t, newest
// first, through an index: only live rows are read.
func (tx *Tx) LivePairings(t time.Time) ([]Pairing, error) {
	return queryAll(tx, "list live pairings", scanPairing, queryLivePairings, FormatTime(t))
}

// CountLivePairings counts the pending requests whose expiry is after t,
// from an index alone.
func (tx *Tx) CountLivePairings(t time.Time) (int, error) {
	var n int
	err := tx.queryRow(queryCountLivePairings, FormatTime(t)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count live pairings: %w", err)
	}
	return n, nil
}

// PrunePairings deletes the finished requests (denied, expired,
// redeemed) past the newest keep, and returns how many it deleted. Pending
// and approved requests are never pruned. Run on every write that adds a
// request, it holds the finished ones to keep, so the table stays small
// however many requests arrive; it walks, through an index, only the
// requests that are not pending, which it keeps few.
func (tx *Tx) PrunePairings(keep int) (int64, error) {
	if keep < 0 {
		return 0, fmt.Errorf("%w: keep %d pairings", ErrInvalid, keep)
	}
	res, err := tx.exec(queryPrunePairings, keep)
	if err != nil {
		return 0, fmt.Errorf("prune pairings: %w", err)
	}
	return res.RowsAffected()
}

// SetPairingState moves request id from state from to state to, recording
// hostID ("" keeps the current one). It is a compare-and-set: ErrNotFound
// when there is no such request, ErrConflict when it is not in from, so a
// request is approved, denied or redeemed at most once.
func (tx *Tx) SetPairingState(id string, from, to PairingState, hostID string) error {
	res, err := tx.exec(`UPDATE snugd_pairings SET state = ?, host_id = coalesce(?, host_id) WHERE id = ? AND state = ?`,
		string(to), nullIfEmpty(hostID), id, string(from))
	if err != nil {
		return fmt.Errorf("pairing %q: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	if _, err := tx.Pairing(id); err != nil {
		return err
	}
	return fmt.Errorf("pairing %q is not %s: %w", id, from, ErrConflict)
}

// ExpirePairings marks every pending request whose expiry has passed (at the
// transaction's time) expired, and returns how many it marked.
func (tx *Tx) ExpirePairings() (int64, error) {
	res, err := tx.exec(queryExpirePairings, FormatTime(tx.now))
	if err != nil {
		return 0, fmt.Errorf("expire pairings: %w", err)
	}
	return res.RowsAffected()
}

// DeletePairing removes request id, or returns ErrNotFound.
func (tx *Tx) DeletePairing(id string) error {
	return tx.expectOne(fmt.Sprintf("pairing %q", id), "DELETE FROM snugd_pairings WHERE id = ?", id)
}

// DeletePairingsBefore removes every request that is no longer pending and
// was created before t, and returns how many it removed.
func (tx *Tx) DeletePairingsBefore(t time.Time) (int64, error) {
	res, err := tx.exec(queryDeletePairingsBefore, FormatTime(t))
	if err != nil {
		return 0, fmt.Errorf("delete pairings: %w", err)
	}
	return res.RowsAffected()
}

func (tx *Tx) onePairing(query string, arg any) (Pairing, error) {
	return queryOne(tx, "get pairing", "pairing", scanPairing, query, arg)
}

func scanPairing(rows *sql.Rows) (Pairing, error) {
	var (
		p                Pairing
		surface, state   string
		hostID           sql.NullString
		expires, created string
	)
	if err := rows.Scan(&p.ID, &p.Code, &p.Challenge, &p.Name, &surface, &p.Origin, &state, &hostID, &p.Invited, &expires, &created); err != nil {
		return Pairing{}, fmt.Errorf("read pairing: %w", err)
	}
	p.Surface, p.State, p.HostID = Surface(surface), PairingState(state), hostID.String
	var errs [2]error
	p.ExpiresAt, errs[0] = ParseTime(expires)
	p.CreatedAt, errs[1] = ParseTime(created)
	if err := errors.Join(errs[:]...); err != nil {
		return Pairing{}, fmt.Errorf("read pairing %q: %w", p.ID, err)
	}
	return p, nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
