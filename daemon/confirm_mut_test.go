package daemon

import (
	"context"
	"testing"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/journal"
)

// TestWithdrawnConfirmJournaled: a confirm withdrawn by its host's
// unpairing or by the shutdown is journaled with that note, as a user's,
// a caller's or a timeout's denial is with its own.
//
// conformance: P3-X14-27
func TestWithdrawnConfirmJournaled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		withdraw func(t *testing.T, w *withdrawRig)
		msg      string
		note     string
	}{
		{"unpaired", func(t *testing.T, w *withdrawRig) {
			if err := w.d.deleteHost(t.Context(), w.hostID); err != nil {
				t.Fatal(err)
			}
		}, "unpaired", fetch.DeniedByUnpair},
		{"shutdown", func(_ *testing.T, w *withdrawRig) { w.d.BeginShutdown() }, "shutting down", fetch.DeniedByShutdown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWithdrawRig(t)
			tc.withdraw(t, w)
			w.denied(t, tc.msg)
			es, err := w.d.records.Journal(context.Background(), journal.JournalQuery{AppID: "app1", Kind: "requests"})
			if err != nil || len(es) != 1 {
				t.Fatalf("Journal = %d entries, %v; want 1", len(es), err)
			}
			if es[0].Note != tc.note {
				t.Errorf("journal note = %q, want %q", es[0].Note, tc.note)
			}
		})
	}
}
