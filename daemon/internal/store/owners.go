package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// AppAccess is who may reach an app over the host API: its
// owner and the hosts it is shared with. Claimed is false when no host
// ever claimed it (rows from before ownership was recorded, from the ctl
// channel or from an import); OwnerHostID is "" when no claim was made or
// the owner was unpaired. Either way such an app with rows is the
// administrator's.
type AppAccess struct {
	Claimed     bool
	OwnerHostID string
	Shared      []string // host ids, sorted
}

// AppAccess reads who may reach appID.
func (tx *Tx) AppAccess(appID string) (AppAccess, error) {
	var (
		a     AppAccess
		owner sql.NullString
	)
	err := tx.queryRow("SELECT host_id FROM snugd_app_owners WHERE app_id = ?", appID).Scan(&owner)
	switch {
	case err == nil:
		a.Claimed, a.OwnerHostID = true, owner.String
	case !errors.Is(err, sql.ErrNoRows):
		return AppAccess{}, fmt.Errorf("read owner of app %q: %w", appID, err)
	}
	rows, err := tx.query("SELECT host_id FROM snugd_app_shares WHERE app_id = ? ORDER BY host_id", appID)
	if err != nil {
		return AppAccess{}, fmt.Errorf("read shares of app %q: %w", appID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return AppAccess{}, err
		}
		a.Shared = append(a.Shared, h)
	}
	return a, rows.Err()
}

// ClaimApp records hostID as appID's owner. It is a no-op when the app
// already has an owner record (a claim, even one whose host was unpaired,
// is never taken over by a write).
func (tx *Tx) ClaimApp(appID, hostID string) error {
	if !tx.writable {
		return ErrReadOnly
	}
	_, err := tx.exec("INSERT INTO snugd_app_owners (app_id, host_id, claimed_at) VALUES (?, ?, ?) ON CONFLICT (app_id) DO NOTHING",
		appID, hostID, FormatTime(tx.now))
	if err != nil {
		return fmt.Errorf("claim app %q: %w", appID, err)
	}
	return nil
}

// ShareApp gives hostID access to appID. ErrNotFound when no such host is
// paired.
func (tx *Tx) ShareApp(appID, hostID string) error {
	if !tx.writable {
		return ErrReadOnly
	}
	var n int
	if err := tx.queryRow("SELECT count(*) FROM snugd_hosts WHERE id = ?", hostID).Scan(&n); err != nil {
		return fmt.Errorf("share app %q: %w", appID, err)
	}
	if n == 0 {
		return fmt.Errorf("share app %q with host %q: %w", appID, hostID, ErrNotFound)
	}
	_, err := tx.exec("INSERT INTO snugd_app_shares (app_id, host_id, shared_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
		appID, hostID, FormatTime(tx.now))
	if err != nil {
		return fmt.Errorf("share app %q: %w", appID, err)
	}
	return nil
}

// UnshareApp takes appID away from hostID: its share, and its ownership
// when it is the owner (the app is then the administrator's). It reports
// whether the host had any access.
func (tx *Tx) UnshareApp(appID, hostID string) (bool, error) {
	if !tx.writable {
		return false, ErrReadOnly
	}
	r1, err := tx.exec("DELETE FROM snugd_app_shares WHERE app_id = ? AND host_id = ?", appID, hostID)
	if err != nil {
		return false, fmt.Errorf("unshare app %q: %w", appID, err)
	}
	r2, err := tx.exec("UPDATE snugd_app_owners SET host_id = NULL WHERE app_id = ? AND host_id = ?", appID, hostID)
	if err != nil {
		return false, fmt.Errorf("unshare app %q: %w", appID, err)
	}
	n1, _ := r1.RowsAffected()
	n2, _ := r2.RowsAffected()
	return n1+n2 > 0, nil
}
