package pairing

import (
	"context"
	"fmt"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
)

// Replacing a working credential: every ceremony that would replace one
// (a device relink, a Hue re-pair, a new SimpleFIN claim, a new OAuth
// sign-in) needs the caller to ask for it (replace; LAN's repin), and
// keeps the old credential in place until the new one commits, in the
// ceremony's one write, with a journal entry of the act. A cancelled,
// expired or failed replacement leaves the old credential working.

// working reports whether st holds a credential that works as far as
// snugd knows: the state says connected. An expired or failed one is
// not worth asking about.
func working(st grants.ConnState) bool {
	return st.Status == grants.ConnConnected
}

// alreadyConnected is the ALREADY_CONNECTED refusal of a ceremony started
// without replace on a working connection: what it holds, since when
// (the family's verified stamp, else when it was obtained), and how to
// replace it.
func alreadyConnected(appID, slot, what string, at ...*int64) error {
	since := ""
	for _, ms := range at {
		if ms != nil {
			since = ", since " + time.UnixMilli(*ms).UTC().Format("2006-01-02 15:04 UTC")
			break
		}
	}
	return errcode.New(errcode.AlreadyConnected, fmt.Sprintf(
		"%s/%s is already %s%s: start again with replace to replace it (the old one keeps working until the new one is stored)", appID, slot, what, since))
}

// journalReplace writes, inside a ceremony's commit, the
// credential-replace act of a replacement (nothing when the ceremony
// replaced nothing): the entry commits with the new credential or not at
// all.
func journalReplace(ctx context.Context, tx *store.Tx, c grants.Connection, replacing bool, note string) error {
	if !replacing {
		return nil
	}
	_, err := tx.InsertJournal(journal.ActEntry(ctx, journal.ActReplace, c.AppID, c.Slot, note))
	return err
}
