package daemon

import (
	"context"
	"testing"

	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
)

// ownedApp pairs a host and has it write appID's first row, which claims
// the app for it; it returns the host's context.
func ownedApp(t *testing.T, d *Daemon, appID string) context.Context {
	t.Helper()
	h, err := d.hosts.Authenticate(t.Context(), pairHost(t, d, hostauth.SurfaceDesktop, ""), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := hostauth.WithHost(t.Context(), h.ID)
	if _, err := d.proposers.ProposeUser(ctx, appID, "wx", mustJSON(t, req("wx", "api.example.com"))); err != nil {
		t.Fatalf("ProposeUser(%s): %v", appID, err)
	}
	return ctx
}

// fillJournal writes n request entries of appID straight to the store.
func fillJournal(t *testing.T, d *Daemon, appID string, n int) {
	t.Helper()
	es := make([]store.JournalEntry, n)
	for i := range es {
		es[i] = store.JournalEntry{At: d.now(), AppID: appID, Slot: "wx", Host: "api.example.com", Method: "GET", Outcome: "sent", Status: 200}
	}
	err := d.store.Update(t.Context(), func(tx *store.Tx) error {
		_, err := tx.InsertJournals(es)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A host reads the journal entries of its own apps only, chosen in the
// statement: its first page holds every one of them however many entries
// other hosts' apps have, and a page is short only at the end.
func TestJournalPageIsTheCallersOwn(t *testing.T) {
	d := newTestDaemon(t)
	mine := ownedApp(t, d, "mine")
	theirs := ownedApp(t, d, "theirs")
	fillJournal(t, d, "mine", 3)
	fillJournal(t, d, "theirs", 10000)

	page, err := d.records.Journal(mine, journal.JournalQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page {
		if e.AppID != "mine" {
			t.Fatalf("host of mine reads an entry of %q", e.AppID)
		}
	}
	// 3 request entries and the act of the row it wrote.
	if len(page) < 3 || len(page) >= 100 {
		t.Fatalf("first page of mine's host = %d entries, want its 3 entries and its act, short of the 100 limit (next = 0)", len(page))
	}

	// Paging a host's view: full pages, then the short last one.
	fillJournal(t, d, "theirs", 150)
	page, err = d.records.Journal(theirs, journal.JournalQuery{Limit: 100})
	if err != nil || len(page) != 100 {
		t.Fatalf("Journal(theirs, limit 100) = %d entries, %v; want a full page", len(page), err)
	}
	for _, e := range page {
		if e.AppID != "theirs" {
			t.Fatalf("host of theirs reads an entry of %q", e.AppID)
		}
	}

	// The administrator reads everything.
	all, err := d.records.Journal(t.Context(), journal.JournalQuery{Limit: 1000})
	if err != nil || len(all) != 1000 {
		t.Fatalf("Journal(administrator, limit 1000) = %d entries, %v; want 1000", len(all), err)
	}
}
