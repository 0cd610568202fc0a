package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Invitation is an administrator's pairing invitation (snugd_invitations):
// one host may pair with it, once, under Name, before ExpiresAt. Hash is
// the SHA-256 of the invitation; the invitation itself is never stored.
type Invitation struct {
	ID        string
	Hash      []byte
	Name      string
	Surface   Surface
	ExpiresAt time.Time
	CreatedAt time.Time
	UsedAt    *time.Time // nil while unused
	PairingID string     // the pairing it was used for; "" before
}

const invitationColumns = "id, hash, name, surface, expires_at, created_at, used_at, pairing_id"

// InsertInvitation stores a new invitation, stamping CreatedAt with the
// transaction's time when it is zero. A duplicate ID or hash fails.
func (tx *Tx) InsertInvitation(inv Invitation) (Invitation, error) {
	if inv.ID == "" || len(inv.Hash) == 0 || inv.ExpiresAt.IsZero() {
		return Invitation{}, fmt.Errorf("%w: an invitation needs an id, a hash and an expiry", ErrInvalid)
	}
	if inv.CreatedAt.IsZero() {
		inv.CreatedAt = tx.now
	}
	inv.CreatedAt = inv.CreatedAt.UTC().Truncate(time.Millisecond)
	inv.ExpiresAt = inv.ExpiresAt.UTC().Truncate(time.Millisecond)
	inv.UsedAt = truncated(inv.UsedAt)
	_, err := tx.exec("INSERT INTO snugd_invitations ("+invitationColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		inv.ID, inv.Hash, inv.Name, string(inv.Surface), FormatTime(inv.ExpiresAt), FormatTime(inv.CreatedAt),
		formatTimePtr(inv.UsedAt), nullIfEmpty(inv.PairingID))
	if err != nil {
		return Invitation{}, fmt.Errorf("insert invitation %q: %w", inv.ID, err)
	}
	return inv, nil
}

// InvitationByHash returns the invitation whose value hashes to hash, used
// or not, expired or not, or ErrNotFound. The lookup goes through an index,
// so its timing depends on the hash, which reveals nothing usable (the
// hash of 256 random bits cannot be inverted).
func (tx *Tx) InvitationByHash(hash []byte) (Invitation, error) {
	return queryOne(tx, "get invitation", "invitation", scanInvitation,
		"SELECT "+invitationColumns+" FROM snugd_invitations WHERE hash = ?", hash)
}

// LiveInvitations lists the invitations not yet used whose expiry is
// ahead of the transaction's time, oldest first.
func (tx *Tx) LiveInvitations() ([]Invitation, error) {
	return queryAll(tx, "list invitations", scanInvitation,
		"SELECT "+invitationColumns+" FROM snugd_invitations WHERE used_at IS NULL AND expires_at > ? ORDER BY created_at, id",
		FormatTime(tx.now))
}

// UseInvitation marks invitation id used, at the transaction's time, for
// pairing pairingID. It is a compare-and-set: ErrConflict when the
// invitation is used or expired already, ErrNotFound when there is none,
// so an invitation is used at most once.
func (tx *Tx) UseInvitation(id, pairingID string) error {
	res, err := tx.exec("UPDATE snugd_invitations SET used_at = ?, pairing_id = ? WHERE id = ? AND used_at IS NULL AND expires_at > ?",
		FormatTime(tx.now), pairingID, id, FormatTime(tx.now))
	if err != nil {
		return fmt.Errorf("invitation %q: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var one int
	if err := tx.queryRow("SELECT 1 FROM snugd_invitations WHERE id = ?", id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("invitation %q: %w", id, ErrNotFound)
	} else if err != nil {
		return fmt.Errorf("invitation %q: %w", id, err)
	}
	return fmt.Errorf("invitation %q is used or expired: %w", id, ErrConflict)
}

// DeleteInvitation removes invitation id (withdrawn), or returns
// ErrNotFound.
func (tx *Tx) DeleteInvitation(id string) error {
	return tx.expectOne(fmt.Sprintf("invitation %q", id), "DELETE FROM snugd_invitations WHERE id = ?", id)
}

// DeleteInvitationsBefore removes every invitation that is no longer live
// (used, or expired at the transaction's time) and was created before t,
// and returns how many it removed.
func (tx *Tx) DeleteInvitationsBefore(t time.Time) (int64, error) {
	res, err := tx.exec("DELETE FROM snugd_invitations WHERE (used_at IS NOT NULL OR expires_at <= ?) AND created_at < ?",
		FormatTime(tx.now), FormatTime(t))
	if err != nil {
		return 0, fmt.Errorf("delete invitations: %w", err)
	}
	return res.RowsAffected()
}

func scanInvitation(rows *sql.Rows) (Invitation, error) {
	var (
		inv              Invitation
		surface          string
		expires, created string
		used, pairing    sql.NullString
	)
	if err := rows.Scan(&inv.ID, &inv.Hash, &inv.Name, &surface, &expires, &created, &used, &pairing); err != nil {
		return Invitation{}, fmt.Errorf("read invitation: %w", err)
	}
	inv.Surface, inv.PairingID = Surface(surface), pairing.String
	var errs [3]error
	inv.ExpiresAt, errs[0] = ParseTime(expires)
	inv.CreatedAt, errs[1] = ParseTime(created)
	inv.UsedAt, errs[2] = parseTimePtr(used)
	if err := errors.Join(errs[:]...); err != nil {
		return Invitation{}, fmt.Errorf("read invitation %q: %w", inv.ID, err)
	}
	return inv, nil
}
