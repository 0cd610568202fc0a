package daemon

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/snug/snugd/daemon/grants"
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
func unloaded(a *grants.AppGrants) bool {
	for i := range a.Rows {
		if a.Rows[i].Parsed.Lazy == nil || a.Rows[i].Parsed.Req != nil {
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
	a := d.appRows("app")
	if a == nil || len(a.Rows) != 3 || !unloaded(a) {
		t.Fatalf("start entry = %+v; want three rows, none parsed", a)
	}
	if a.Rows[0].Slot != "cal" || a.Rows[1].Slot != "mail" || a.Rows[2].Slot != "wx" {
		t.Fatalf("rows not in slot order: %s %s %s", a.Rows[0].Slot, a.Rows[1].Slot, a.Rows[2].Slot)
	}
	g := a.Row("wx")
	if !g.Approved() || !g.InCeiling("api.example.com") || g.InCeiling("mail.example.com") || !g.Injects || g.Templates == nil {
		t.Fatalf("wx after load: approved %v, ceiling %v, injects %v", g.Approved(), g.Ceiling, g.Injects)
	}
	cal := a.Row("cal")
	if cal.Approved() || !cal.ClaimsHost("cal.example.com") || len(cal.Ceiling) != 0 {
		t.Fatalf("declared cal after load: approved %v, claims %v, ceiling %v", cal.Approved(), cal.Claims, cal.Ceiling)
	}
	// The whole app loaded at once: the other rows are parsed too.
	if m := &a.Rows[1]; m.Parsed.Req == nil {
		t.Fatal("mail was not loaded with its app")
	}
	// The same as the index a writer would build from the stored rows.
	rows, err := d.store.AllConnections(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := grants.BuildAppGrants(rows)
	for i := range want.Rows {
		w, g := &want.Rows[i], &a.Rows[i]
		if w.Slot != g.Slot || w.Approved() != g.Approved() || w.Req.Canonical() != g.Requirement().Canonical() || w.Imported != g.Imported {
			t.Fatalf("row %s differs from a writer's build", w.Slot)
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
	a := d.appRows("app")
	if g := a.Row("wx"); g.Approved() || g.Requirement() != nil || !g.InCeiling("api.example.com") {
		t.Fatalf("an invalid approved row grants: approved %v", g.Approved())
	}
	if !a.Row("mail").Approved() {
		t.Fatal("a valid neighbour of an invalid row does not grant")
	}
	if facts := d.records.Facts("app"); len(facts) != 2 {
		t.Fatalf("facts = %+v; want the two valid rows only", facts)
	}
}

// Many requests' first use of one app at once: one load, every reader
// sees it whole (run under -race).
func TestStartIndexConcurrentFirstUse(t *testing.T) {
	d := restarted(t, nil)
	idx := d.grants.Snapshot()
	var wg sync.WaitGroup
	got := make([]*requirement.Requirement, 16)
	for i := range got {
		wg.Go(func() {
			a := idx.Apps["app"]
			for j := range a.Rows {
				g := &a.Rows[j]
				switch i % 3 {
				case 0:
					if g.Approved() && g.InCeiling("api.example.com") {
						got[i] = g.Req
					}
				case 1:
					if g.ClaimsHost("api.example.com") {
						got[i] = g.Req
					}
				default:
					if r := a.Row("wx"); r.Req != nil && r.Templates != nil {
						got[i] = r.Req
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
	old := d.grants.Snapshot()
	if _, err := d.grants.Revoke(ctx, "app", "wx"); err != nil {
		t.Fatal(err)
	}
	a := d.appRows("app")
	if a == old.Apps["app"] || a.Rows[2].Parsed.Lazy != nil {
		t.Fatal("the revoke did not publish an entry of its own")
	}
	if g := a.Row("wx"); g.Approved() || g.Status != grants.StatusRevoked {
		t.Fatalf("wx after revoke: status %s, approved %v", g.Status, g.Approved())
	}
	// The old snapshot loads now, after the commit: wx changed under it.
	if g := old.Apps["app"].Row("wx"); g.Approved() {
		t.Fatal("a stale entry granted a row that changed since the scan")
	}
	if !old.Apps["app"].Row("mail").Approved() {
		t.Fatal("the stale entry lost a row that did not change")
	}
}

// A failed load grants nothing: here the store is closed before the first
// use.
func TestStartIndexFailedLoadGrantsNothing(t *testing.T) {
	d := restarted(t, nil)
	idx := d.grants.Snapshot()
	d.store.Close()
	a := idx.Apps["app"]
	for i := range a.Rows {
		if g := &a.Rows[i]; g.Approved() || g.ClaimsHost("api.example.com") || g.Requirement() != nil {
			t.Fatalf("row %s of a failed load grants or claims", g.Slot)
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
		fast, ok := grants.DecodeHostsFast(col)
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
	idx, err := grants.StartIndex(t.Context(), st, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.Apps) != 200 {
		t.Fatalf("%d apps, want 200", len(idx.Apps))
	}
	for app, a := range idx.Apps {
		want := 7
		if app == "a000" {
			want = 8
		}
		if len(a.Rows) != want {
			t.Fatalf("%s: %d rows, want %d", app, len(a.Rows), want)
		}
		for i := range a.Rows {
			if g := &a.Rows[i]; g.Slot != fmt.Sprintf("s%d", i) || g.Lazy.App != app {
				t.Fatalf("%s: row %d is %s of %s", app, i, g.Slot, g.Lazy.App)
			}
		}
	}
}
