package store

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestInvitationUsedOnce: UseInvitation is a compare-and-set, so an
// invitation pairs one request at most, and not after its expiry.
func TestInvitationUsedOnce(t *testing.T) {
	c := newClock()
	s := openStore(t, func(o *Options) { o.Now = c.Now })
	hash := bytes.Repeat([]byte{7}, 32)
	update(t, s, func(tx *Tx) error {
		for _, id := range []string{"i1", "i2"} {
			h := append([]byte{}, hash...)
			h[0] = id[1]
			if _, err := tx.InsertInvitation(Invitation{ID: id, Hash: h, Name: "Laptop", Surface: SurfaceDesktop, ExpiresAt: c.Now().Add(10 * time.Minute)}); err != nil {
				return err
			}
		}
		for _, id := range []string{"p1", "p2"} {
			if _, err := tx.InsertPairing(Pairing{ID: id, Code: "C" + id, Challenge: "c", Surface: SurfaceDesktop, State: PairingApproved, Invited: true, ExpiresAt: c.Now().Add(time.Minute)}); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, s, func(tx *Tx) error {
		if err := tx.UseInvitation("i1", "p1"); err != nil {
			t.Errorf("UseInvitation(i1) = %v, want nil", err)
		}
		if err := tx.UseInvitation("i1", "p2"); !errors.Is(err, ErrConflict) {
			t.Errorf("second UseInvitation(i1) = %v, want ErrConflict", err)
		}
		if err := tx.UseInvitation("nope", "p2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("UseInvitation(unknown) = %v, want ErrNotFound", err)
		}
		got, err := tx.InvitationByHash(append([]byte{'1'}, hash[1:]...))
		if err != nil || got.ID != "i1" || got.UsedAt == nil || got.PairingID != "p1" || got.Name != "Laptop" {
			t.Errorf("InvitationByHash(i1) = %+v, %v, want used for p1", got, err)
		}
		p, err := tx.Pairing("p1")
		if err != nil || !p.Invited || p.State != PairingApproved {
			t.Errorf("Pairing(p1) = %+v, %v, want an invited approved request", p, err)
		}
		live, err := tx.LiveInvitations()
		if err != nil || len(live) != 1 || live[0].ID != "i2" {
			t.Errorf("LiveInvitations() = %+v, %v, want i2 only", live, err)
		}
		return nil
	})
	c.Advance(10 * time.Minute) // i2 expires exactly now
	update(t, s, func(tx *Tx) error {
		if err := tx.UseInvitation("i2", "p2"); !errors.Is(err, ErrConflict) {
			t.Errorf("UseInvitation(expired i2) = %v, want ErrConflict", err)
		}
		if live, _ := tx.LiveInvitations(); len(live) != 0 {
			t.Errorf("LiveInvitations() after expiry = %+v, want none", live)
		}
		n, err := tx.DeleteInvitationsBefore(tx.Now().Add(time.Second))
		if err != nil || n != 2 {
			t.Errorf("DeleteInvitationsBefore() = %d, %v, want 2", n, err)
		}
		return nil
	})
}

// TestInvitationsMigrationKeepsPairings: migration 10 on a database with
// pairing requests leaves them as they were, none of them invited.
func TestInvitationsMigrationKeepsPairings(t *testing.T) {
	c := newClock()
	s := openStore(t, func(o *Options) { o.Now = c.Now })
	dir := s.Dir()
	update(t, s, func(tx *Tx) error {
		if _, err := tx.InsertPairing(Pairing{ID: "p1", Code: "C1", Challenge: "c", Name: "old", Surface: SurfaceDesktop, ExpiresAt: c.Now().Add(time.Minute)}); err != nil {
			return err
		}
		_, err := tx.exec("DROP INDEX snugd_pairings_pending; DROP INDEX snugd_pairings_pending_expiry; DROP INDEX snugd_pairings_done; DROP TABLE snugd_invitations; ALTER TABLE snugd_pairings DROP COLUMN invited; CREATE INDEX snugd_journal_app ON snugd_journal (app_id, id); UPDATE snugd_meta SET value = 9 WHERE key = 'schema_version'")
		return err
	})
	s.Close()
	s = openStore(t, func(o *Options) { o.Dir = dir; o.Now = c.Now })
	view(t, s, func(tx *Tx) error {
		p, err := tx.Pairing("p1")
		if err != nil || p.Invited || p.State != PairingPending || p.Name != "old" {
			t.Errorf("Pairing(p1) after migration 10 = %+v, %v, want the pending request, not invited", p, err)
		}
		live, err := tx.LiveInvitations()
		if err != nil || len(live) != 0 {
			t.Errorf("LiveInvitations() after migration 10 = %+v, %v, want an empty table", live, err)
		}
		return nil
	})
}
