package grants

import (
	"context"
	"fmt"

	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
)

// Journal returns one page of the journal as ctx's caller may read it,
// newest first, after flushing the entries still queued: the
// administrator reads every entry; a paired host the entries of the apps
// it may reach (owners.go), never the daemon's own. The page is chosen
// in one statement, so it is full when more entries are visible, and its
// last ID is the honest start of the next.
func (d *Records) Journal(ctx context.Context, q journal.JournalQuery) ([]journal.JournalEntry, error) {
	q.VisibleTo = ""
	if host, ok := hostauth.CallerHost(ctx); ok {
		if host == "" {
			return []journal.JournalEntry{}, nil // no identity: nothing of anyone's
		}
		q.VisibleTo = host
	}
	return d.journal.Query(ctx, q)
}

// journaled wraps a connection writer's decision so that the act is
// journaled in the writer's own transaction: the row and its act commit
// together or not at all.
func journaled(ctx context.Context, act string, decide func(*store.Tx, *store.Connection) (*store.Connection, error)) func(*store.Tx, *store.Connection) (*store.Connection, error) {
	return func(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
		next, err := decide(tx, cur)
		if err != nil {
			return nil, err
		}
		if _, err := tx.InsertJournal(journal.ActEntry(ctx, act, next.AppID, next.Slot, "")); err != nil {
			return nil, err
		}
		return next, nil
	}
}

// journalImport journals an import: one act in all (what it restored,
// demoted and dropped) and one per row it landed, under that row's app,
// in one transaction.
func (d *Records) journalImport(ctx context.Context, r ImportReport) {
	es := []store.JournalEntry{journal.ActEntry(ctx, journal.ActImport, "", "", fmt.Sprintf("restored %d, demoted %d, dropped %d", r.Restored, r.Demoted, len(r.Dropped)))}
	for _, l := range r.Landed {
		note := "landed declared"
		if l.Replaced {
			note += ", replaced the local row"
		}
		if l.CredentialsCleared {
			note += ", credentials cleared"
		}
		es = append(es, journal.ActEntry(ctx, journal.ActImport, l.AppID, l.Slot, note))
	}
	now := d.journal.Now()
	for i := range es {
		es[i].At = now
	}
	err := d.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		_, err := tx.InsertJournals(es)
		return err
	})
	if err != nil {
		d.log.Error("write journal entry", "outcome", store.OutcomeAct, "act", journal.ActImport, "err", err)
	}
}
