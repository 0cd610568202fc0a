package daemon

import (
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/grants"

	_ "github.com/mattn/go-sqlite3"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/internal/testutil"
)

// sql.Open("sqlite3") for hostile user DBs

// exportOf writes d's user DB to a file and returns its path.
func exportOf(t *testing.T, d *Daemon) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "user.db")
	if err := d.records.Export(t.Context(), path); err != nil {
		t.Fatalf("Export: %v", err)
	}
	return path
}

// forge rewrites a row of d behind the writers' back.
func forge(t *testing.T, d *Daemon, app, slot string, edit func(*store.Connection)) {
	t.Helper()
	err := d.store.Update(t.Context(), func(tx *store.Tx) error {
		row, err := tx.Connection(app, slot)
		if err != nil {
			return err
		}
		edit(&row)
		return tx.ForgeConnectionForTest(row)
	})
	if err != nil {
		t.Fatalf("forge: %v", err)
	}
}

// conformance: P3-C12.4-01, P3-C12.4-02
func TestImportRestoresIdenticalGrant(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	d.grants.StagePending(ctx, "app", mustAdmit(t, req("wx", "api.example.com", "b.example.com")))
	path := exportOf(t, d)
	rep, err := d.records.Import(ctx, path)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if rep.Restored != 1 || rep.Demoted != 0 || len(rep.Dropped) != 0 {
		t.Fatalf("report = %+v, want one restored", rep)
	}
	c, _ := d.grants.Connection(ctx, "app", "wx")
	if c.Status != grants.StatusApproved || c.Imported || !c.NeedsReapproval() {
		t.Fatalf("restored row = %+v; want the local grant as it was, staged change included", c)
	}
}

// conformance: P3-C12.4-03, P3-C12.4-04, P3-C12.4-05, P3-C12.2-13
func TestImportLandsChangedRowsDeclared(t *testing.T) {
	src := newTestDaemon(t)
	ctx := t.Context()
	approved(t, src, "app", req("wx", "api.example.com"))
	approved(t, src, "app", req("wy", "api.example.com"))
	// The file claims a wider ceiling than its requirement derives.
	forge(t, src, "app", "wy", func(c *store.Connection) { c.AllowedHosts = `["api.example.com","evil.example.com"]` })
	path := exportOf(t, src)

	d := newTestDaemon(t)
	approved(t, d, "app", req("wx", "api.example.com", "old.example.com"))
	rep, err := d.records.Import(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Restored != 0 || rep.Demoted != 2 || len(rep.Dropped) != 0 {
		t.Fatalf("report = %+v, want two demoted", rep)
	}
	for _, slot := range []string{"wx", "wy"} {
		c, _ := d.grants.Connection(ctx, "app", slot)
		if c.Status != grants.StatusDeclared || !c.Imported || c.ApprovedAt != nil {
			t.Fatalf("%s = %+v, want declared, imported, approved_at cleared", slot, c)
		}
		if got := strings.Join(c.AllowedHosts, ","); got != "api.example.com" {
			t.Fatalf("%s allowed hosts = %q, want recomputed from the requirement", slot, got)
		}
		if d.appRows("app").Rows[slotIndex(slot)].Approved() {
			t.Fatalf("%s: an imported row grants", slot)
		}
	}
	// Approval clears imported.
	if c, err := d.grants.Approve(ctx, "app", "wy"); err != nil || c.Imported {
		t.Fatalf("approve of an imported row = %+v, %v", c, err)
	}
}

func slotIndex(slot string) int {
	if slot == "wx" {
		return 0
	}
	return 1
}

// conformance: P3-C12.4-06, P3-C12.4-07, P3-C12.8-01
func TestImportDropsUnusableRows(t *testing.T) {
	src := newTestDaemon(t)
	ctx := t.Context()
	for _, slot := range []string{"bad-json", "bad-template", "other-slot", "ok"} {
		src.putDeclared(ctx, "app", mustAdmit(t, req(slot, "api.example.com")))
	}
	forge(t, src, "app", "bad-json", func(c *store.Connection) { c.RequirementJSON = `{"slot":"bad-json","kind":"oauth1"}` })
	badTemplate := req("bad-template", "api.example.com")
	badTemplate["request"] = map[string]any{"headerTemplate": map[string]any{"X-Sig": "{{hmac_sha256(api_secrt, request.body)}}"}}
	forge(t, src, "app", "bad-template", func(c *store.Connection) { c.RequirementJSON = string(mustJSON(t, badTemplate)) })
	forge(t, src, "app", "other-slot", func(c *store.Connection) { c.RequirementJSON = string(mustJSON(t, req("ok", "api.example.com"))) })
	path := exportOf(t, src)

	d := newTestDaemon(t)
	rep, err := d.records.Import(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Demoted != 1 || len(rep.Dropped) != 3 {
		t.Fatalf("report = %+v, want 1 landed and 3 dropped", rep)
	}
	for _, dr := range rep.Dropped {
		if dr.AppID != "app" || dr.Reason == "" {
			t.Fatalf("dropped row %+v lacks its name or reason", dr)
		}
		if _, err := d.grants.Connection(ctx, "app", dr.Slot); err == nil {
			t.Fatalf("dropped row %s was inserted", dr.Slot)
		}
	}
	if !strings.Contains(rep.Dropped[1].Reason, "template") {
		t.Fatalf("bad template reason = %q, want the lint's rule", rep.Dropped[1].Reason)
	}
}

// conformance: P3-C12.2-15
func TestImportNeverOverwritesRevokedAndKeepsTombstones(t *testing.T) {
	src := newTestDaemon(t)
	ctx := t.Context()
	src.putDeclared(ctx, "app", mustAdmit(t, req("gone", "api.example.com")))
	src.putDeclared(ctx, "app", mustAdmit(t, req("back", "new.example.com")))
	path := exportOf(t, src)

	d := newTestDaemon(t)
	approved(t, d, "app", req("gone", "api.example.com"))
	d.grants.Revoke(ctx, "app", "gone")
	approved(t, d, "app", req("back", "api.example.com"))
	d.grants.Revoke(ctx, "app", "back")
	d.grants.Reconnect(ctx, "app", "back")
	rep, err := d.records.Import(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Demoted != 1 || len(rep.Dropped) != 1 || rep.Dropped[0].Slot != "gone" {
		t.Fatalf("report = %+v, want the revoked row refused", rep)
	}
	if c, _ := d.grants.Connection(ctx, "app", "gone"); c.Status != grants.StatusRevoked {
		t.Fatalf("import overwrote a revoked row: %s", c.Status)
	}
	if c, _ := d.grants.Connection(ctx, "app", "back"); c.RevokedAt == nil || !c.Imported {
		t.Fatalf("reconnected row after import = %+v; want its tombstone kept", c)
	}
}

func TestImportSlotCap(t *testing.T) {
	src := newTestDaemon(t)
	ctx := t.Context()
	src.putDeclared(ctx, "app", mustAdmit(t, req("ninth", "api.example.com")))
	path := exportOf(t, src)
	d := newTestDaemon(t)
	for i := range grants.MaxSlotsPerApp {
		d.putDeclared(ctx, "app", mustAdmit(t, req("s"+string(rune('0'+i)), "api.example.com")))
	}
	rep, err := d.records.Import(ctx, path)
	if err != nil || len(rep.Dropped) != 1 {
		t.Fatalf("import over the cap = %+v, %v; want the new slot dropped", rep, err)
	}
}

func TestImportRefusesNonUserDB(t *testing.T) {
	d := newTestDaemon(t)
	path := filepath.Join(t.TempDir(), "x.db")
	os.WriteFile(path, []byte("not sqlite"), 0o600)
	_, err := d.records.Import(t.Context(), path)
	testutil.WantCode(t, err, errcode.ImportInvalid)
}

// conformance: P3-C13-06, P3-C13-07, P1-SEC-03
func TestExportCarriesNoSecret(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	const secret = "export-must-not-carry-this-value"
	d.grants.SetCredentials(ctx, "app", "wx", map[string]string{"api_key": secret})
	path := exportOf(t, d)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, needle := range []string{secret, "auth:app", "snugd_"} {
		if strings.Contains(string(b), needle) {
			t.Fatalf("export contains %q", needle)
		}
	}
}

// An imported file's snug_secrets never cross: import reads connection rows
// only, so a pushed or copied database brings no credential with it.
//
// conformance: P3-C13-05, P3-C13-10
func TestImportIgnoresTheFilesSecrets(t *testing.T) {
	src := newTestDaemon(t)
	ctx := t.Context()
	approved(t, src, "app", req("wx", "api.example.com"))
	if err := src.grants.SetCredentials(ctx, "app", "wx", map[string]string{"api_key": "from-the-other-device"}); err != nil {
		t.Fatal(err)
	}
	srcDB := src.DBPath()
	src.Close()
	raw, err := os.ReadFile(srcDB)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "whole.db")
	os.WriteFile(path, raw, 0o600)

	d := newTestDaemon(t)
	if _, err := d.records.Import(ctx, path); err != nil {
		t.Fatalf("Import: %v", err)
	}
	if s, _ := d.grants.SlotSecrets(ctx, "app", "wx"); len(s) != 0 {
		t.Fatalf("import brought %d secrets along", len(s))
	}
}

// conformance: P3-C12.2-06
func TestStoredRequirementRevalidatedOnRead(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	approved(t, d, "app", req("wx", "api.example.com"))
	forge(t, d, "app", "wx", func(c *store.Connection) { c.RequirementJSON = `{"slot":"wx"}` })
	if err := d.rebuildIndex(ctx); err != nil {
		t.Fatal(err)
	}
	c, _ := d.grants.Connection(ctx, "app", "wx")
	if c.Requirement != nil || len(c.Invalid) == 0 {
		t.Fatalf("a schema-invalid stored requirement read as valid: %+v", c)
	}
	if d.appRows("app").Rows[0].Approved() {
		t.Fatal("an approved row with an invalid stored requirement grants")
	}
}

// An imported file is one more way a requirement reaches snugd, and the
// borrow ban binds every requirement, whatever its channel: a row
// that names a registry provider while pointing at hosts of its own lands
// with the registry's pinned values, never its own, and a claimed
// provenance "registry" buys a row nothing.
//
// conformance: P3-C12.12-01
func TestImportAppliesTheBorrowBan(t *testing.T) {
	src := newTestDaemon(t)
	ctx := t.Context()
	for _, slot := range []string{"music", "plain", "both"} {
		src.putDeclared(ctx, "app", mustAdmit(t, req(slot, "api.example.com")))
	}
	forge(t, src, "app", "music", func(c *store.Connection) {
		c.RequirementJSON = string(mustJSON(t, spotifyish("music")))
		c.Provenance = store.ProvenanceUser
	})
	// Spotify's name on GitHub's host: two entries, refused, never chosen.
	both := spotifyish("both")
	both["declaredApiHosts"] = []any{"api.github.com"}
	forge(t, src, "app", "both", func(c *store.Connection) { c.RequirementJSON = string(mustJSON(t, both)) })
	// Not a registry provider at all, but the file says the registry
	// pinned it.
	forge(t, src, "app", "plain", func(c *store.Connection) { c.Provenance = store.ProvenanceRegistry })
	path := exportOf(t, src)

	d := newTestDaemon(t)
	rep, err := d.records.Import(ctx, path)
	if err != nil || rep.Demoted != 2 || len(rep.Dropped) != 1 || rep.Dropped[0].Slot != "both" || !strings.Contains(rep.Dropped[0].Reason, "registry.conflict") {
		t.Fatalf("Import = %+v, %v; want two rows landed and the conflicting one dropped", rep, err)
	}
	c, _ := d.grants.Connection(ctx, "app", "music")
	if c.Requirement == nil || c.Requirement.Provider.Name != "Spotify" || slices.Contains(c.AllowedHosts, "collector.example.com") {
		t.Fatalf("imported Spotify-named row = %+v; want the registry's pinned values", c.Requirement)
	}
	rv, _ := d.proposers.Review(ctx, "app", "music")
	if !rv.Borrowed || slices.Contains(rv.Hosts, "collector.example.com") {
		t.Fatalf("review of the imported row = %+v; want the borrow disclosed and the pinned hosts", rv)
	}
	a, err := d.grants.Approve(ctx, "app", "music")
	if err != nil || strings.Join(a.AllowedHosts, ",") != "accounts.spotify.com,api.spotify.com" {
		t.Fatalf("Approve = %v, %v; want the registry's hosts frozen", a.AllowedHosts, err)
	}

	p, _ := d.grants.Connection(ctx, "app", "plain")
	if p.Provenance == grants.ProvenanceRegistry {
		t.Fatal("an imported row kept a claimed provenance registry the registry never resolved")
	}
	if rv, _ := d.proposers.Review(ctx, "app", "plain"); rv.Posture != grants.PostureStrong || rv.Borrowed {
		t.Fatalf("review of a row claiming registry provenance = %+v; want strong posture, no borrow", rv)
	}
}

// A user DB names each (app_id, slot) once: it is the table's primary key.
// A hostile file can drop the key and list a slot twice, once byte-identical
// to the local grant and once not; which copy won used to depend on the
// order of the rows. Every copy of such a slot is dropped and reported, and
// the local row stays as it is.
//
// conformance: P3-C12.4-06, P3-C12.4-07
func TestImportDropsDuplicatedSlots(t *testing.T) {
	src := newTestDaemon(t)
	ctx := t.Context()
	approved(t, src, "app", req("wx", "api.example.com"))
	src.putDeclared(ctx, "app", mustAdmit(t, req("ok", "api.example.com")))
	path := exportOf(t, src)
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	// The same slot again, asking for another host; the first copy is the
	// local grant's bytes, so branch 1 would restore it and the second
	// would demote it.
	other := string(mustJSON(t, req("wx", "evil.example.com")))
	if _, err := db.Exec(`ALTER TABLE snug_connections RENAME TO keyed;
		CREATE TABLE snug_connections AS SELECT * FROM keyed;
		DROP TABLE keyed;
		INSERT INTO snug_connections SELECT app_id, slot, ?, requirement_version, provenance, confidence, status,
			pending_requirement_json, imported, allowed_hosts, approved_at, revoked_at, created_at, updated_at
			FROM snug_connections WHERE slot = 'wx'`, other); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for _, order := range []string{"as written", "reversed"} {
		t.Run(order, func(t *testing.T) {
			d := newTestDaemon(t)
			approved(t, d, "app", req("wx", "api.example.com"))
			if order == "reversed" {
				// Put the differing copy first.
				db, _ := sql.Open("sqlite3", path)
				if _, err := db.Exec(`CREATE TABLE r AS SELECT * FROM snug_connections ORDER BY rowid DESC;
					DELETE FROM snug_connections; INSERT INTO snug_connections SELECT * FROM r; DROP TABLE r`); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
			rep, err := d.records.Import(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Restored != 0 || rep.Demoted != 1 || len(rep.Dropped) != 2 {
				t.Fatalf("report = %+v; want both copies of wx dropped and ok landed", rep)
			}
			for _, dr := range rep.Dropped {
				if dr.Slot != "wx" || !strings.Contains(dr.Reason, "more than once") {
					t.Fatalf("dropped %+v; want wx, named as listed twice", dr)
				}
			}
			c, _ := d.grants.Connection(ctx, "app", "wx")
			if c.Status != grants.StatusApproved || c.Imported || strings.Join(c.AllowedHosts, ",") != "api.example.com" {
				t.Fatalf("local wx after import = %s, imported %v, hosts %v; want the local grant untouched", c.Status, c.Imported, c.AllowedHosts)
			}
		})
	}
}

// Import publishes the grant index of the apps it changed from its own
// transaction, as every writer does. It used to commit and then re-read
// every row of every app, so a row of an unrelated app that does not read
// back (here a timestamp spelled outside the store's format) failed the
// import after its demotions were committed: the index kept serving a grant
// that storage had already taken back.
func TestImportIndexFollowsItsCommit(t *testing.T) {
	src := newTestDaemon(t)
	ctx := t.Context()
	approved(t, src, "app", req("wx", "api.example.com", "b.example.com"))
	path := exportOf(t, src)

	d := newTestDaemon(t)
	approved(t, d, "app", req("wx", "api.example.com"))
	d.putDeclared(ctx, "other", mustAdmit(t, req("s", "api.example.com")))
	db, err := sql.Open("sqlite3", d.DBPath())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE snug_connections SET created_at = 'yesterday' WHERE app_id = 'other'`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err = d.records.Import(ctx, path)
	var status string
	verr := d.store.View(ctx, func(tx *store.Tx) error {
		c, err := tx.Connection("app", "wx")
		status = string(c.Status)
		return err
	})
	if verr != nil {
		t.Fatal(verr)
	}
	if g := d.appRows("app").Row("wx"); g.Approved() != (status == string(grants.StatusApproved)) {
		t.Fatalf("after Import (err %v): storage says %s, the index grants %v", err, status, g.Approved())
	}
}
