package daemon

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/registry"
)

// setRecord writes the re-consent record as a pass under digest would.
func setRecord(t *testing.T, d *Daemon, digest string) {
	t.Helper()
	if err := d.store.Update(t.Context(), func(tx *store.Tx) error { return tx.PutReconsentRecord(digest) }); err != nil {
		t.Fatal(err)
	}
}

// oldPins approves a Spotify row and forges it to scopes the registry no
// longer pins, as a row approved under an older registry holds; it
// returns the forged requirement.
func oldPins(t *testing.T, d *Daemon) string {
	t.Helper()
	ctx := t.Context()
	if _, err := d.proposers.ProposeDirective(ctx, "app", directiveJSON(t, spotifyish("music"), nil), false); err != nil {
		t.Fatal(err)
	}
	c, err := d.grants.Approve(ctx, "app", "music")
	if err != nil {
		t.Fatal(err)
	}
	old := c.Requirement
	old.Scopes = []string{"user-read-playback-state"}
	forge(t, d, "app", "music", func(c *store.Connection) { c.RequirementJSON = old.Canonical() })
	return old.Canonical()
}

// A start under the registry the last completed pass ran under does no
// per-row work: every writer since resolved against that registry. A
// row the pass would act on (here forged, then the record put back as if
// nothing had happened) is left alone, which shows no row was checked.
//
// conformance: P3-C12.12-10
func TestReconsentSkippedUnderTheSameRegistry(t *testing.T) {
	open := reopener(t)
	d := open()
	if d.proposers.ReconsentRows() != 0 {
		t.Fatalf("first start checked %d rows of an empty database", d.proposers.ReconsentRows())
	}
	oldJSON := oldPins(t, d)
	setRecord(t, d, grants.ReconsentDigest(d.registry, testBuild))
	d.Close()

	d = open()
	if d.proposers.ReconsentRows() != 0 {
		t.Fatalf("a start under an unchanged registry checked %d rows", d.proposers.ReconsentRows())
	}
	c, err := d.grants.Connection(t.Context(), "app", "music")
	if err != nil {
		t.Fatal(err)
	}
	if c.RequirementJSON != oldJSON || c.NeedsReapproval() {
		t.Fatalf("after a start under the same registry: pending %q; want no pass, nothing staged", c.PendingJSON)
	}
	d.Close()
}

// An upgrade to a registry whose pins moved (the record names another
// registry) runs the pass: the approved row's re-resolution is staged for
// re-approval, and the record then names this registry, so the next
// start checks nothing.
//
// conformance: P3-C12.12-10
func TestReconsentRunsAfterAnUpgrade(t *testing.T) {
	open := reopener(t)
	d := open()
	oldJSON := oldPins(t, d)
	setRecord(t, d, "the digest of an older registry")
	d.Close()

	d = open()
	if d.proposers.ReconsentRows() != 1 {
		t.Fatalf("the upgrade's start checked %d rows, want 1", d.proposers.ReconsentRows())
	}
	c, err := d.grants.Connection(t.Context(), "app", "music")
	if err != nil {
		t.Fatal(err)
	}
	if c.RequirementJSON != oldJSON || !c.NeedsReapproval() || len(c.Pending.Scopes) != 3 {
		t.Fatalf("after the upgrade: requirement %q, pending %q; want the old grant serving and the new pins staged", c.RequirementJSON, c.PendingJSON)
	}
	rec, err := store.Read(t.Context(), d.store, (*store.Tx).ReconsentRecord)
	if err != nil || rec != grants.ReconsentDigest(d.registry, testBuild) {
		t.Fatalf("record after the pass = %q, %v; want this registry's digest", rec, err)
	}
	d.Close()

	d = open()
	defer d.Close()
	if d.proposers.ReconsentRows() != 0 {
		t.Fatalf("the start after a completed pass checked %d rows", d.proposers.ReconsentRows())
	}
}

// A pass that does not complete leaves the old record: the next start
// runs it again. Here the pass meets a forged row it cannot write (an app
// id no writer accepts): the start goes on, the row keeps what it has,
// the good row's change is staged, and the record stays the old one.
func TestReconsentRedoneAfterAnIncompletePass(t *testing.T) {
	open := reopener(t)
	d := open()
	ctx := t.Context()
	oldPins(t, d)
	bad := store.Connection{AppID: "zz\u200b", Slot: "music", RequirementJSON: string(mustJSON(t, spotifyish("music"))),
		RequirementVersion: 1, Provenance: store.ProvenanceUser, Status: store.StatusDeclared, AllowedHosts: "[]"}
	if err := d.store.Update(ctx, func(tx *store.Tx) error { return tx.ForgeConnectionForTest(bad) }); err != nil {
		t.Fatal(err)
	}
	setRecord(t, d, "the digest of an older registry")
	dir := d.DataDir()
	d.Close()

	d, err := New(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatalf("one row the pass cannot rewrite stopped the start: %v", err)
	}
	run(t, d)
	if c, _ := d.grants.Connection(ctx, "app", "music"); !c.NeedsReapproval() {
		t.Fatal("the good row's moved pin was not staged beside the refused row")
	}
	d.Close()
	st, err := store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := store.Read(ctx, st, (*store.Tx).ReconsentRecord)
	if err != nil || rec != "the digest of an older registry" {
		t.Fatalf("record after a failed pass = %q, %v; want the old one", rec, err)
	}
	// The administrator revokes the forged row (the pass skips revoked
	// rows), keeping the old record, and starts again.
	err = st.Update(ctx, func(tx *store.Tx) error {
		bad.Status = store.StatusRevoked
		if err := tx.ForgeConnectionForTest(bad); err != nil {
			return err
		}
		return tx.PutReconsentRecord("the digest of an older registry")
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	d = open()
	defer d.Close()
	c, _ := d.grants.Connection(ctx, "app", "music")
	if d.proposers.ReconsentRows() != 2 || !c.NeedsReapproval() {
		t.Fatalf("after an incomplete pass: %d rows checked, staged %v; want the pass run again over both rows", d.proposers.ReconsentRows(), c.NeedsReapproval())
	}
}

// Reconnect revives a requirement no pass checked while it was revoked:
// it forgets the record, so the next start checks every row.
func TestReconnectForgetsTheReconsentRecord(t *testing.T) {
	open := reopener(t)
	d := open()
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	if _, err := d.grants.Revoke(ctx, "app", "wx"); err != nil {
		t.Fatal(err)
	}
	setRecord(t, d, grants.ReconsentDigest(d.registry, testBuild))
	if _, err := d.grants.Reconnect(ctx, "app", "wx"); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d = open()
	defer d.Close()
	if d.proposers.ReconsentRows() != 1 {
		t.Fatalf("the start after a reconnect checked %d rows, want 1", d.proposers.ReconsentRows())
	}
}

// The pass remembers only what needs nothing: two apps holding the same
// requirement under old pins are both staged, and a requirement that
// does not validate, met twice, is skipped twice.
func TestReconsentActsOnEveryCopy(t *testing.T) {
	open := reopener(t)
	d := open()
	ctx := t.Context()
	for _, app := range []string{"app", "other"} {
		if _, err := d.proposers.ProposeDirective(ctx, app, directiveJSON(t, spotifyish("music"), nil), false); err != nil {
			t.Fatal(err)
		}
		c, err := d.grants.Approve(ctx, app, "music")
		if err != nil {
			t.Fatal(err)
		}
		old := c.Requirement
		old.Scopes = []string{"user-read-playback-state"}
		forge(t, d, app, "music", func(c *store.Connection) { c.RequirementJSON = old.Canonical() })
		approved(t, d, app, req("wx", "api.example.com"))
		forge(t, d, app, "wx", func(c *store.Connection) { c.RequirementJSON = `{"slot":"wx"}` })
	}
	d.Close()

	d = open()
	defer d.Close()
	for _, app := range []string{"app", "other"} {
		if c, err := d.grants.Connection(ctx, app, "music"); err != nil || !c.NeedsReapproval() {
			t.Fatalf("%s: staged %v, %v; want the new pins staged on every copy", app, c.NeedsReapproval(), err)
		}
		if c, _ := d.grants.Connection(ctx, app, "wx"); c.NeedsReapproval() || c.Requirement != nil {
			t.Fatalf("%s: an invalid row was acted on", app)
		}
	}
}

// A build is identified by a clean VCS revision alone: one that carries
// none (built outside a checkout, as scripts/deb.sh allows, or with
// -buildvcs=false), or that comes from a modified tree, says nothing in
// its build info that tells it apart from another such build, so it gets
// a digest no other start shares, and every start of it runs the pass
// (an upgrade whose Resolve borrows differently under the same registry
// must never skip it). An identified build's digest is stable, and
// another revision's differs.
//
// conformance: P3-C12.12-10
func TestReconsentDigestOfTheBuild(t *testing.T) {
	reg, err := registry.Load()
	if err != nil {
		t.Fatal(err)
	}
	main := debug.Module{Path: "github.com/snug/snugd", Version: "v1.2.3"}
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, ""},
		{"no VCS", &debug.BuildInfo{Main: main}, ""},
		{"modified tree", &debug.BuildInfo{Main: main, Settings: vcs("vcs.revision", "0123abcd", "vcs.modified", "true")}, ""},
		{"no modified flag", &debug.BuildInfo{Main: main, Settings: vcs("vcs.revision", "0123abcd")}, ""},
		{"empty revision", &debug.BuildInfo{Main: main, Settings: vcs("vcs.revision", "", "vcs.modified", "false")}, ""},
		{"clean", &debug.BuildInfo{Main: main, Settings: vcs("vcs", "git", "vcs.revision", "0123abcd", "vcs.modified", "false")}, "github.com/snug/snugd@v1.2.3 vcs.revision=0123abcd"},
	} {
		if got := grants.BuildIdentity(tc.bi); got != tc.want {
			t.Errorf("BuildIdentity(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if first, second := grants.ReconsentDigest(reg, ""), grants.ReconsentDigest(reg, ""); first == second {
		t.Error("two starts of an unidentified build share a digest: the second skips the pass")
	}
	const a, b = "github.com/snug/snugd@v1.2.3 vcs.revision=0123abcd", "github.com/snug/snugd@v1.2.3 vcs.revision=4567cdef"
	if first, second := grants.ReconsentDigest(reg, a), grants.ReconsentDigest(reg, a); first != second {
		t.Error("an identified build's digest is not stable")
	}
	if grants.ReconsentDigest(reg, a) == grants.ReconsentDigest(reg, b) {
		t.Error("two revisions share a digest")
	}
	// The running test binary carries no revision: it is unidentified.
	if bi, _ := debug.ReadBuildInfo(); grants.BuildIdentity(bi) != "" {
		t.Errorf("the test binary is identified as %q", grants.BuildIdentity(bi))
	}
}

// Every start of an unidentified build runs the pass, even under the
// registry and build info the last completed pass ran under: the row
// forged after the first start's pass, with that pass's record put back
// as if nothing had happened, is acted on.
//
// conformance: P3-C12.12-10
func TestReconsentRunsForAnUnidentifiedBuild(t *testing.T) {
	open := reopenerAs(t, "")
	d := open()
	rec, err := store.Read(t.Context(), d.store, (*store.Tx).ReconsentRecord)
	if err != nil || rec == "" {
		t.Fatalf("record after the first start = %q, %v", rec, err)
	}
	oldPins(t, d)
	setRecord(t, d, rec)
	d.Close()

	d = open()
	defer d.Close()
	if d.proposers.ReconsentRows() != 1 {
		t.Fatalf("an unidentified build's start checked %d rows, want 1", d.proposers.ReconsentRows())
	}
	if c, err := d.grants.Connection(t.Context(), "app", "music"); err != nil || !c.NeedsReapproval() {
		t.Fatalf("staged %v, %v; want the new pins staged", c.NeedsReapproval(), err)
	}
}

// After an upgrade the pass still acts on every row whose stored text
// triggers an entry, however it is spelled: the pre-filter that spares it
// the parse of the other rows (Registry.MayTrigger) skips none of these.
// The rows are written around the writers, as a row restored from an old
// backup or edited by hand is: a host in upper case, in fullwidth letters
// or behind a JSON escape, the entry named by its id in lower case or by
// an alias in capitals, and an approved row whose staged change alone
// reaches a pinned host. A trailing dot is refused by the parser, so that
// row is left as it is, as it was before the pre-filter; and a row that
// names no entry is left alone and parsed by nobody.
//
// conformance: P3-C12.12-10
func TestReconsentNonCanonicalStoredText(t *testing.T) {
	open := reopener(t)
	d := open()
	ctx := t.Context()
	text := func(name, host string) string {
		r := req("x", host)
		r["provider"] = map[string]any{"name": name}
		return string(mustJSON(t, r))
	}
	declaredRows := map[string]string{
		"upper":      text("Acme", "API.SPOTIFY.COM"),
		"fullwidth":  text("Acme", "api.ｓｐｏｔｉｆｙ.com"),
		"escaped":    strings.Replace(text("Acme", "api.spotify.com"), "api.spotify", `api.\u0073potify`, 1),
		"id":         text("spotify", "api.acme.example"),
		"alias":      text("SPOTIFY WEB API", "api.acme.example"),
		"dot":        text("Acme", "api.spotify.com."),
		"unrelated":  text("Acme", "api.acme.example"),
		"name-escap": strings.Replace(text("Spotify", "api.acme.example"), `"Spotify"`, `"Sp\u006ftify"`, 1),
	}
	for slot, raw := range declaredRows {
		raw = strings.Replace(raw, `"slot":"x"`, `"slot":"`+slot+`"`, 1)
		declaredRows[slot] = raw
		c := store.Connection{AppID: "app", Slot: slot, RequirementJSON: raw, RequirementVersion: 1,
			Provenance: store.ProvenanceUser, Status: store.StatusDeclared, AllowedHosts: "[]"}
		if err := d.store.Update(ctx, func(tx *store.Tx) error { return tx.ForgeConnectionForTest(c) }); err != nil {
			t.Fatal(err)
		}
	}
	approved(t, d, "other", req("wx", "api.example.com"))
	forgePending(t, d, "other", "wx", []byte(strings.Replace(text("Acme", "API.Spotify.com"), `"slot":"x"`, `"slot":"wx"`, 1)))
	setRecord(t, d, "the digest of an older registry")
	d.Close()

	d = open()
	defer d.Close()
	if d.proposers.ReconsentRows() != len(declaredRows)+1 {
		t.Fatalf("the upgrade's start checked %d rows, want %d", d.proposers.ReconsentRows(), len(declaredRows)+1)
	}
	for slot, raw := range declaredRows {
		c, err := d.grants.Connection(ctx, "app", slot)
		if err != nil {
			t.Fatal(err)
		}
		acted := c.RequirementJSON != raw
		if want := slot != "dot" && slot != "unrelated"; acted != want {
			t.Errorf("%s: re-resolved %v, want %v (stored %s, now %s)", slot, acted, want, raw, c.RequirementJSON)
		}
		if acted && (c.Requirement == nil || c.Requirement.Provider.Name != "Spotify" || c.Status != grants.StatusDeclared) {
			t.Errorf("%s: re-resolved to %s (%s), not to the registry's Spotify, declared", slot, c.RequirementJSON, c.Status)
		}
	}
	c, err := d.grants.Connection(ctx, "other", "wx")
	if err != nil || !c.NeedsReapproval() || c.Pending == nil || c.Pending.Provider.Name != "Spotify" {
		t.Fatalf("approved row with a staged change to a pinned host: pending %q, %v; want the registry's Spotify staged", c.PendingJSON, err)
	}
	if c.Status != grants.StatusApproved || c.Requirement == nil || c.Requirement.Provider.Name != "Example" {
		t.Fatalf("the approved row's grant changed: %s %s", c.Status, c.RequirementJSON)
	}
}
