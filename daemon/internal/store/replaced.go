package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Replaced is the local row an imported row replaced, as it
// was just before the import.
type Replaced struct {
	RequirementJSON    string
	RequirementVersion int64
	Status             Status
	AllowedHosts       string
	GrantedAt          *time.Time
	// CredentialsCleared reports whether the import wiped the slot's
	// credential slice because the row it brought differs.
	CredentialsCleared bool
	ReplacedAt         time.Time
}

// PutReplaced records what (appID, slot) was before an import replaced it,
// replacing an earlier record.
func (tx *Tx) PutReplaced(appID, slot string, r Replaced) error {
	if !tx.writable {
		return ErrReadOnly
	}
	_, err := tx.exec(`INSERT INTO snugd_replaced (app_id, slot, requirement_json, requirement_version, status, allowed_hosts, approved_at, credentials_cleared, replaced_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (app_id, slot) DO UPDATE SET requirement_json = excluded.requirement_json,
			requirement_version = excluded.requirement_version, status = excluded.status,
			allowed_hosts = excluded.allowed_hosts, approved_at = excluded.approved_at,
			credentials_cleared = excluded.credentials_cleared, replaced_at = excluded.replaced_at`,
		appID, slot, r.RequirementJSON, r.RequirementVersion, string(r.Status), r.AllowedHosts, formatTimePtr(r.GrantedAt),
		r.CredentialsCleared, FormatTime(tx.now))
	if err != nil {
		return fmt.Errorf("record replaced row (%q, %q): %w", appID, slot, err)
	}
	return nil
}

// ReplacedRow returns what an import replaced in (appID, slot); ok is
// false when nothing is recorded.
func (tx *Tx) ReplacedRow(appID, slot string) (r Replaced, ok bool, err error) {
	var (
		status, at string
		approved   sql.NullString
	)
	err = tx.queryRow(`SELECT requirement_json, requirement_version, status, allowed_hosts, approved_at, credentials_cleared, replaced_at
		FROM snugd_replaced WHERE app_id = ? AND slot = ?`, appID, slot).
		Scan(&r.RequirementJSON, &r.RequirementVersion, &status, &r.AllowedHosts, &approved, &r.CredentialsCleared, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Replaced{}, false, nil
	}
	if err != nil {
		return Replaced{}, false, fmt.Errorf("read replaced row (%q, %q): %w", appID, slot, err)
	}
	r.Status = Status(status)
	if r.GrantedAt, err = parseTimePtr(approved); err != nil {
		return Replaced{}, false, fmt.Errorf("read replaced row (%q, %q): %w", appID, slot, err)
	}
	if r.ReplacedAt, err = ParseTime(at); err != nil {
		return Replaced{}, false, fmt.Errorf("read replaced row (%q, %q): %w", appID, slot, err)
	}
	return r, true, nil
}

// DeleteReplaced forgets what an import replaced in (appID, slot).
func (tx *Tx) DeleteReplaced(appID, slot string) error {
	if !tx.writable {
		return ErrReadOnly
	}
	if _, err := tx.exec("DELETE FROM snugd_replaced WHERE app_id = ? AND slot = ?", appID, slot); err != nil {
		return fmt.Errorf("forget replaced row (%q, %q): %w", appID, slot, err)
	}
	return nil
}
