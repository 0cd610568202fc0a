package store

import (
	"bytes"
	"testing"
)

// TestAppOwnersMigrationKeepsASingleHostsApps: apps written before
// ownership was recorded stay their host's when exactly one host is
// paired (there is no other they can be from); with two, they are the
// administrator's.
func TestAppOwnersMigrationKeepsASingleHostsApps(t *testing.T) {
	for _, hosts := range []int{1, 2} {
		s := openStore(t)
		dir := s.Dir()
		update(t, s, func(tx *Tx) error {
			for i := range hosts {
				if _, err := tx.InsertHost(Host{ID: "h_" + string(rune('a'+i)), Name: "host", Surface: "desktop", TokenHash: bytes.Repeat([]byte{byte(i + 1)}, 32)}); err != nil {
					return err
				}
			}
			if _, err := tx.UpsertConnection(declared("old-app", "mail")); err != nil {
				return err
			}
			_, err := tx.exec("DROP INDEX snugd_pairings_pending; DROP INDEX snugd_pairings_pending_expiry; DROP INDEX snugd_pairings_done; DROP TABLE snugd_invitations; ALTER TABLE snugd_pairings DROP COLUMN invited; DROP TABLE snugd_journal_size; DROP TABLE snugd_journal_counts; DROP INDEX snugd_journal_retain; ALTER TABLE snugd_journal DROP COLUMN user_act; ALTER TABLE snugd_journal DROP COLUMN act; ALTER TABLE snugd_journal DROP COLUMN count; ALTER TABLE snugd_journal DROP COLUMN last_at; DROP TABLE snugd_replaced; DROP TABLE snugd_app_shares; DROP TABLE snugd_app_owners; ALTER TABLE snugd_journal DROP COLUMN resolved_host; CREATE INDEX snugd_journal_app ON snugd_journal (app_id, id); UPDATE snugd_meta SET value = 6 WHERE key = 'schema_version'")
			return err
		})
		s.Close()
		s = openStore(t, func(o *Options) { o.Dir = dir })
		var a AppAccess
		view(t, s, func(tx *Tx) error {
			var err error
			a, err = tx.AppAccess("old-app")
			return err
		})
		switch {
		case hosts == 1 && (!a.Claimed || a.OwnerHostID != "h_a"):
			t.Errorf("one host: access = %+v, want h_a the owner", a)
		case hosts == 2 && a.Claimed:
			t.Errorf("two hosts: access = %+v, want no owner (the administrator's)", a)
		}
		s.Close()
	}
}

// TestUnpairingClearsOwnershipAndShares: the foreign keys do it, so no
// unpairing path can leave a removed host holding an app.
func TestUnpairingClearsOwnershipAndShares(t *testing.T) {
	s := openStore(t)
	update(t, s, func(tx *Tx) error {
		for i, id := range []string{"h_a", "h_b"} {
			if _, err := tx.InsertHost(Host{ID: id, Name: "host", Surface: "desktop", TokenHash: bytes.Repeat([]byte{byte(i + 1)}, 32)}); err != nil {
				return err
			}
		}
		if _, err := tx.UpsertConnection(declared("app", "mail")); err != nil {
			return err
		}
		if err := tx.ClaimApp("app", "h_a"); err != nil {
			return err
		}
		if err := tx.ShareApp("app", "h_b"); err != nil {
			return err
		}
		if err := tx.DeleteHost("h_a"); err != nil {
			return err
		}
		return tx.DeleteHost("h_b")
	})
	view(t, s, func(tx *Tx) error {
		a, err := tx.AppAccess("app")
		if err != nil {
			return err
		}
		if !a.Claimed || a.OwnerHostID != "" || len(a.Shared) != 0 {
			t.Errorf("after unpairing both = %+v, want a claim without owner or shares", a)
		}
		return nil
	})
}
