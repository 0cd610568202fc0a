package daemon

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/requirement"
)

// restarted returns a daemon on a data directory holding two approved
// rows of app ("wx" on api.example.com, "mail" on mail.example.com) and a
// declared one ("cal", on cal.example.com), after edit ran on the first
// daemon, and reopened: its index entries are the start's, unloaded.
func restarted(t *testing.T, edit func(d *Daemon)) *Daemon {
	t.Helper()
	open := reopener(t)
	d := open()
	approved(t, d, "app", req("wx", "api.example.com"))
	approved(t, d, "app", req("mail", "mail.example.com"))
	if _, err := d.putDeclared(t.Context(), "app", mustAdmit(t, req("cal", "cal.example.com"))); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(d)
	}
	d.Close()
	d = open()
	t.Cleanup(func() { d.Close() })
	return d
}

// unloaded reports whether the app's entry has not been loaded yet: a
// start's entry before its first use. It reads the parsed fields without
// load, which only a test on one goroutine may do.
func unloaded(a *appGrants) bool {
	for i := range a.rows {
		if a.rows[i].parsed.lazy == nil || a.rows[i].parsed.req != nil {
			return false
		}
	}
	return true
}

// The start parses nothing: an entry it built holds no requirement until
// the first use of the app, which loads the app's rows once and grants as
// an eagerly built index would.
func TestStartIndexLoadsOnFirstUse(t *testing.T) {
	d := restarted(t, nil)
	a := d.grants("app")
	if a == nil || len(a.rows) != 3 || !unloaded(a) {
		t.Fatalf("start entry = %+v; want three rows, none parsed", a)
	}
	if a.rows[0].slot != "cal" || a.rows[1].slot != "mail" || a.rows[2].slot != "wx" {
		t.Fatalf("rows not in slot order: %s %s %s", a.rows[0].slot, a.rows[1].slot, a.rows[2].slot)
	}
	g := a.row("wx")
	if !g.approved() || !g.inCeiling("api.example.com") || g.inCeiling("mail.example.com") || !g.injects || g.templates == nil {
		t.Fatalf("wx after load: approved %v, ceiling %v, injects %v", g.approved(), g.ceiling, g.injects)
	}
	cal := a.row("cal")
	if cal.approved() || !cal.claimsHost("cal.example.com") || len(cal.ceiling) != 0 {
		t.Fatalf("declared cal after load: approved %v, claims %v, ceiling %v", cal.approved(), cal.claims, cal.ceiling)
	}
	// The whole app loaded at once: the other rows are parsed too.
	if m := &a.rows[1]; m.parsed.req == nil {
		t.Fatal("mail was not loaded with its app")
	}
	// The same as the index a writer would build from the stored rows.
	rows, err := d.store.AllConnections(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := buildAppGrants(rows)
	for i := range want.rows {
		w, g := &want.rows[i], &a.rows[i]
		if w.slot != g.slot || w.approved() != g.approved() || w.req.Canonical() != g.requirement().Canonical() || w.imported != g.imported {
			t.Fatalf("row %s differs from a writer's build", w.slot)
		}
	}
}

// A row whose stored requirement no longer validates still grants nothing
// when it is parsed on first use, and its neighbours still grant.
func TestStartIndexInvalidRowGrantsNothing(t *testing.T) {
	d := restarted(t, func(d *Daemon) {
		forge(t, d, "app", "wx", func(c *store.Connection) {
			c.RequirementJSON = `{"slot":"wx","kind":"api_key","declaredApiHosts":["api.example.com"],"fields":"not a list"}`
		})
	})
	a := d.grants("app")
	if g := a.row("wx"); g.approved() || g.requirement() != nil || !g.inCeiling("api.example.com") {
		t.Fatalf("an invalid approved row grants: approved %v", g.approved())
	}
	if !a.row("mail").approved() {
		t.Fatal("a valid neighbour of an invalid row does not grant")
	}
	if facts := d.Facts("app"); len(facts) != 2 {
		t.Fatalf("facts = %+v; want the two valid rows only", facts)
	}
}

// Many requests' first use of one app at once: one load, every reader
// sees it whole (run under -race).
func TestStartIndexConcurrentFirstUse(t *testing.T) {
	d := restarted(t, nil)
	idx := d.index.Load()
	var wg sync.WaitGroup
	got := make([]*requirement.Requirement, 16)
	for i := range got {
		wg.Go(func() {
			a := idx.apps["app"]
			for j := range a.rows {
				g := &a.rows[j]
				switch i % 3 {
				case 0:
					if g.approved() && g.inCeiling("api.example.com") {
						got[i] = g.req
					}
				case 1:
					if g.claimsHost("api.example.com") {
						got[i] = g.req
					}
				default:
					if r := a.row("wx"); r.req != nil && r.templates != nil {
						got[i] = r.req
					}
				}
			}
		})
	}
	wg.Wait()
	for i, r := range got {
		if r == nil || r != got[0] {
			t.Fatalf("reader %d saw %p, reader 0 %p: want one load, seen by all", i, r, got[0])
		}
	}
}

// A writer's publication replaces the start's entry with one it built
// parsed; a snapshot taken before it keeps the start's entry, and when
// that one loads after the writer's commit, the changed row grants
// nothing in it rather than the new version under the old one's name.
func TestStartIndexWriterReplacesEntry(t *testing.T) {
	d := restarted(t, nil)
	ctx := t.Context()
	old := d.index.Load()
	if _, err := d.Revoke(ctx, "app", "wx"); err != nil {
		t.Fatal(err)
	}
	a := d.grants("app")
	if a == old.apps["app"] || a.rows[2].parsed.lazy != nil {
		t.Fatal("the revoke did not publish an entry of its own")
	}
	if g := a.row("wx"); g.approved() || g.status != StatusRevoked {
		t.Fatalf("wx after revoke: status %s, approved %v", g.status, g.approved())
	}
	// The old snapshot loads now, after the commit: wx changed under it.
	if g := old.apps["app"].row("wx"); g.approved() {
		t.Fatal("a stale entry granted a row that changed since the scan")
	}
	if !old.apps["app"].row("mail").approved() {
		t.Fatal("the stale entry lost a row that did not change")
	}
}

// A failed load grants nothing: here the store is closed before the first
// use.
func TestStartIndexFailedLoadGrantsNothing(t *testing.T) {
	d := restarted(t, nil)
	idx := d.index.Load()
	d.store.Close()
	a := idx.apps["app"]
	for i := range a.rows {
		if g := &a.rows[i]; g.approved() || g.claimsHost("api.example.com") || g.requirement() != nil {
			t.Fatalf("row %s of a failed load grants or claims", g.slot)
		}
	}
}

// FuzzDecodeHosts: the fast path reads an allowed_hosts column to exactly
// what encoding/json reads, whenever it accepts one.
func FuzzDecodeHosts(f *testing.F) {
	for _, s := range []string{`[]`, `["api.example.com"]`, `["a.example","b.example"]`, `["a,b"]`, `[","]`, `["a" ,"b"]`,
		`["\u0061"]`, `[""]`, `["a"]x`, `"a"`, `["a""b"]`, `[1]`, `null`, "[\"\xff\"]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, col string) {
		fast, ok := decodeHostsFast(col)
		if !ok {
			return
		}
		var want []string
		if err := json.Unmarshal([]byte(col), &want); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", col, err)
		}
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(fast, want) || fast == nil {
			t.Fatalf("fast path read %q as %q, encoding/json as %q", col, fast, want)
		}
	})
}

// The start's scan keeps each app's rows apart however they arrive: apps
// met in one run share chunks (here across a chunk's end), and apps whose
// rows interleave in storage order get their own; every app ends with
// exactly its rows, in slot order.
func TestStartIndexRowsApartInStorageOrder(t *testing.T) {
	st, err := store.Open(t.Context(), store.Options{Dir: t.TempDir() + "/data"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	row := func(app string, slot int) store.Connection {
		s := fmt.Sprintf("s%d", slot)
		return store.Connection{AppID: app, Slot: s, RequirementJSON: fmt.Sprintf(startRequirement, s, "api.example.com", "api.example.com"),
			RequirementVersion: 1, Provenance: store.ProvenanceUser, Status: store.StatusDeclared, AllowedHosts: "[]"}
	}
	var order []store.Connection
	for a := range 150 { // 1,050 rows in runs, then 350 interleaved
		for s := range 7 {
			order = append(order, row(fmt.Sprintf("a%03d", a), 6-s))
		}
	}
	for s := range 7 {
		for a := 150; a < 200; a++ {
			order = append(order, row(fmt.Sprintf("a%03d", a), s))
		}
	}
	order = append(order, row("a000", 7)) // the first app, once more at the end
	err = st.Update(t.Context(), func(tx *store.Tx) error {
		for _, c := range order {
			if _, err := tx.UpsertConnection(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := startIndex(t.Context(), st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.apps) != 200 {
		t.Fatalf("%d apps, want 200", len(idx.apps))
	}
	for app, a := range idx.apps {
		want := 7
		if app == "a000" {
			want = 8
		}
		if len(a.rows) != want {
			t.Fatalf("%s: %d rows, want %d", app, len(a.rows), want)
		}
		for i := range a.rows {
			if g := &a.rows[i]; g.slot != fmt.Sprintf("s%d", i) || g.lazy.app != app {
				t.Fatalf("%s: row %d is %s of %s", app, i, g.slot, g.lazy.app)
			}
		}
	}
}
