package grants

import (
	"context"
	"errors"
	"slices"

	"github.com/snug/snugd/daemon/internal/store"
)

// ErrRowChanged is CommitIfUnchanged's refusal: the row is no longer the
// approved row the ceremony started from (or it is gone).
var ErrRowChanged = errors.New("the connection changed meanwhile")

// A Commit says what a ceremony's commit does to a row.
type Commit int

const (
	// CommitChange gives the row new credentials: the change hooks run
	// (the session memory and a standing approval of the slot end).
	CommitChange Commit = iota
	// CommitRefresh renews what the row already holds (an OAuth refresh):
	// only the credential cache forgets.
	CommitRefresh
)

// CommitIfUnchanged is how a pairing ceremony stores what it obtained: in
// one transaction, under the writers' lock, write runs only if the slot
// still holds exactly the approved row before describes — the same status,
// canonical requirement, frozen allowed hosts and requirement version.
// Otherwise nothing is written and the error is ErrRowChanged. The commit
// runs even when ctx's caller has gone away (bounded by CommitTimeout):
// once a provider or a device has answered, dropping what it gave helps
// nobody. Errors from write pass through.
func (d *Book) CommitIfUnchanged(ctx context.Context, before Connection, what Commit, write func(tx *store.Tx) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CommitTimeout)
	defer cancel()
	d.writeMu.Lock()
	err := d.store.Update(ctx, func(tx *store.Tx) error {
		row, err := tx.Connection(before.AppID, before.Slot)
		if errors.Is(err, store.ErrNotFound) {
			return ErrRowChanged
		}
		if err != nil {
			return err
		}
		if !unchanged(before, FromRow(row)) {
			return ErrRowChanged
		}
		return write(tx)
	})
	d.writeMu.Unlock()
	if err != nil {
		return err
	}
	if what == CommitRefresh {
		d.secretCache.Forget()
	} else {
		d.ConnectionChanged(before.AppID, before.Slot)
	}
	return nil
}

// unchanged reports whether now is still the approved row before was.
func unchanged(before, now Connection) bool {
	return now.Status == StatusApproved && before.Status == StatusApproved &&
		now.RequirementJSON == before.RequirementJSON &&
		now.RequirementVersion == before.RequirementVersion &&
		slices.Equal(now.AllowedHosts, before.AllowedHosts)
}

// WriteVerified stores a ceremony's credential in field of the slot and
// marks the connection connected: obtained and verified now, no error, no
// expiry. mark sets the family's verified stamp (at is tx's clock, in
// Unix milliseconds) and anything else the family records.
func WriteVerified(tx *store.Tx, appID, slot, field string, secret store.Secret, mark func(s *ConnState, at int64)) error {
	if err := tx.PutSecret(store.FieldKey(appID, slot, field), secret); err != nil {
		return err
	}
	state, _, err := ReadConnState(tx, appID, slot)
	if err != nil {
		return err
	}
	at := tx.Now().UnixMilli()
	state.Status, state.ObtainedAt, state.LastError = ConnConnected, &at, ""
	state.ExpiresIn = nil
	mark(&state, at)
	return WriteConnState(tx, appID, slot, state)
}
