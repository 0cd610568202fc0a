package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/starter"
	"github.com/snug/snugd/internal/testutil"
)

// spotifyish names Spotify but points everything at hosts of its own.
func spotifyish(slot string) map[string]any {
	return map[string]any{
		"slot":             slot,
		"provider":         map[string]any{"name": "spotify"},
		"kind":             "api_key",
		"fields":           []any{map[string]any{"key": "api_key", "label": "Key", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}},
		"scopes":           []any{"user-modify-playback-state"},
		"declaredApiHosts": []any{"collector.example.com"},
	}
}

func directiveJSON(t *testing.T, r any, extra map[string]any) []byte {
	t.Helper()
	d := map[string]any{"v": 1, "kind": "connection_requirement", "requirement": r}
	for k, v := range extra {
		d[k] = v
	}
	return mustJSON(t, d)
}

// conformance: P3-C12.1-02, P3-C12.1-04, P3-C12.1-05, P3-C12.1-06, P3-C12.10-05
func TestProposeUser(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	pr, err := d.proposers.ProposeUser(ctx, "app", "wx", mustJSON(t, req("wx", "api.example.com")))
	if err != nil || pr.Staged || pr.Connection.Provenance != grants.ProvenanceUser || pr.Connection.Status != grants.StatusDeclared || pr.Connection.Confidence != nil {
		t.Fatalf("ProposeUser = %+v, %v", pr, err)
	}
	_, err = d.proposers.ProposeUser(ctx, "app", "other", mustJSON(t, req("wx", "api.example.com")))
	testutil.WantCode(t, err, errcode.SlotMismatch)

	d.grants.Approve(ctx, "app", "wx")
	pr, err = d.proposers.ProposeUser(ctx, "app", "wx", mustJSON(t, req("wx", "api.example.com", "b.example.com")))
	if err != nil || !pr.Staged || pr.Connection.Status != grants.StatusApproved || !pr.Connection.NeedsReapproval() {
		t.Fatalf("proposal on an approved row = %+v, %v; want staged", pr, err)
	}
	d.grants.Revoke(ctx, "app", "wx")
	_, err = d.proposers.ProposeUser(ctx, "app", "wx", mustJSON(t, req("wx", "api.example.com")))
	testutil.WantCode(t, err, errcode.ConnectionRevoked)

	withLayer := req("wy", "api.example.com")
	withLayer["userLayer"] = map[string]any{"kind": "api_key", "declaredApiHosts": []any{"api.example.com"}}
	_, err = d.proposers.ProposeUser(ctx, "app", "wy", mustJSON(t, withLayer))
	testutil.WantCode(t, err, errcode.RequirementInvalid)
}

// conformance: P3-C12.13-01, P3-C12.13-02, P3-C12.13-03, P3-C12.13-04, P3-C12.10-02, P3-C12.10-04, P3-C12.10-06, P3-C12.2-10
func TestProposeDirective(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	for name, raw := range map[string][]byte{
		"v2":          mustJSON(t, map[string]any{"v": 2, "kind": "connection_requirement", "requirement": req("wx", "api.example.com")}),
		"other kind":  mustJSON(t, map[string]any{"v": 1, "kind": "grant", "requirement": req("wx", "api.example.com")}),
		"unknown key": directiveJSON(t, req("wx", "api.example.com"), map[string]any{"approve": true}),
		"no req":      mustJSON(t, map[string]any{"v": 1, "kind": "connection_requirement"}),
		"array":       []byte(`[]`),
	} {
		_, err := d.proposers.ProposeDirective(ctx, "app", raw, false)
		if code, _ := errcode.CodeOf(err); code != errcode.DirectiveInvalid {
			t.Errorf("%s: ProposeDirective = %v, want DIRECTIVE_INVALID", name, err)
		}
	}

	claims := map[string]any{"confidence": 0.99, "provenance": "registry"}
	pr, err := d.proposers.ProposeDirective(ctx, "app", directiveJSON(t, req("wx", "api.example.com"), claims), false)
	if err != nil {
		t.Fatal(err)
	}
	c := pr.Connection
	if c.Provenance != grants.ProvenanceInference || c.Confidence == nil || *c.Confidence != grants.ConfidenceInference {
		t.Fatalf("stored provenance/confidence = %s/%v; want computed inference/%v", c.Provenance, *c.Confidence, grants.ConfidenceInference)
	}
	if pr.ClaimedProvenance != "registry" || *pr.ClaimedConfidence != 0.99 {
		t.Fatalf("claimed values = %q/%v, want them returned for display", pr.ClaimedProvenance, pr.ClaimedConfidence)
	}
	// A claimed "registry" earns no stronger treatment: the row still needs
	// the same approval, and its confidence plays no part in it.
	if _, err := d.grants.Approve(ctx, "app", "wx"); err != nil {
		t.Fatal(err)
	}

	pr, err = d.proposers.ProposeDirective(ctx, "app", directiveJSON(t, req("wy", "api.example.com"), nil), true)
	if err != nil || pr.Connection.Provenance != grants.ProvenanceUserDocs {
		t.Fatalf("user-docs directive = %+v, %v", pr, err)
	}

	// userLayer is refused on the assistant and user-docs channels, even
	// when it points at the genuine provider.
	layered := req("wz", "api.spotify.com")
	layered["userLayer"] = map[string]any{"kind": "api_key", "declaredApiHosts": []any{"api.spotify.com"}}
	for _, docs := range []bool{false, true} {
		_, err := d.proposers.ProposeDirective(ctx, "app", directiveJSON(t, layered, nil), docs)
		testutil.WantCode(t, err, errcode.RequirementInvalid)
	}
}

// conformance: P3-C12.12-01, P3-C12.12-03, P3-C12.12-04, P3-C12.12-05, P3-C12.12-08, P3-C12.1-10
func TestDirectiveBorrow(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	pr, err := d.proposers.ProposeDirective(ctx, "app", directiveJSON(t, spotifyish("music"), nil), false)
	if err != nil {
		t.Fatal(err)
	}
	c := pr.Connection
	if !pr.Borrowed || pr.Disclosure == "" || pr.EntryID != "spotify" || c.Provenance != grants.ProvenanceRegistry || *c.Confidence != grants.ConfidenceRegistry {
		t.Fatalf("borrowed proposal = %+v", pr)
	}
	r := c.Requirement
	if r.Provider.Name != "Spotify" || slices.Contains(r.DeclaredAPIHosts, "collector.example.com") || slices.Contains(r.Scopes, "user-modify-playback-state") {
		t.Fatalf("declared values survived the borrow: %+v", r)
	}
	approvedRow, err := d.grants.Approve(ctx, "app", "music")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(approvedRow.AllowedHosts, ","); got != "accounts.spotify.com,api.spotify.com" {
		t.Fatalf("ceiling = %s, want the registry's hosts only", got)
	}
	rv, _ := d.proposers.Review(ctx, "app", "music")
	if !rv.Borrowed || rv.Disclosure == "" || rv.Posture != grants.PosturePinned {
		t.Fatalf("review = %+v, want the borrow disclosed", rv)
	}
}

// conformance: P3-C12.1-11, P3-C12.1-12, P3-C12.1-13
func TestInstallStarter(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	cat, err := starter.Load()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := cat.Lookup("weather")
	if !ok {
		t.Fatal("no weather starter")
	}
	sum := sha256.Sum256(m.HTML)
	good := hex.EncodeToString(sum[:])
	changed := sha256.Sum256(append(slices.Clone(m.HTML), ' '))
	bad := hex.EncodeToString(changed[:])
	for name, in := range map[string]grants.StarterInstall{
		"unknown source":  {Source: "weather2", FactorySHA256: good, CurrentSHA256: good},
		"factory changed": {Source: "weather", FactorySHA256: bad, CurrentSHA256: good},
		"current changed": {Source: "weather", FactorySHA256: good, CurrentSHA256: bad},
	} {
		_, err := d.proposers.InstallStarter(ctx, "app", in)
		testutil.WantCode(t, err, errcode.StarterNotVouched)
		if cs, _ := d.grants.Connections(ctx, "app"); len(cs) != 0 {
			t.Fatalf("%s: an unvouched install wrote %d rows", name, len(cs))
		}
	}
	prs, err := d.proposers.InstallStarter(ctx, "app", grants.StarterInstall{Source: "weather", FactorySHA256: good, CurrentSHA256: good})
	if err != nil || len(prs) != len(m.Requirements) {
		t.Fatalf("vouched install = %v, %v", prs, err)
	}
	for _, pr := range prs {
		if pr.Connection.Provenance != grants.ProvenanceStarter || pr.Connection.Status != grants.StatusDeclared {
			t.Fatalf("starter row = %+v", pr.Connection)
		}
	}
}

// conformance: P3-C12.13-05
func TestPickOption(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	gh := map[string]any{
		"slot":             "gh",
		"provider":         map[string]any{"name": "GitHub"},
		"kind":             "bearer_token",
		"fields":           []any{map[string]any{"key": "token", "label": "Token", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Bearer {{token}}"}},
		"declaredApiHosts": []any{"api.github.com"},
	}
	pr, err := d.proposers.ProposeUser(ctx, "app", "gh", mustJSON(t, gh))
	if err != nil || !pr.Borrowed {
		t.Fatalf("GitHub proposal = %+v, %v", pr, err)
	}
	pr, err = d.proposers.PickOption(ctx, "app", "gh", "oauth-app")
	if err != nil {
		t.Fatalf("PickOption: %v", err)
	}
	if pr.Connection.Requirement.Kind != "oauth2_auth_code" || pr.Connection.Status != grants.StatusDeclared {
		t.Fatalf("picked option = %+v; want a declared OAuth requirement for review", pr.Connection.Requirement)
	}
}

// reopener returns a function that opens a daemon on one data directory,
// for tests that restart it.
func reopener(t *testing.T) func() *Daemon { return reopenerAs(t, testBuild) }

// testBuild stands for an identified build (a clean VCS revision), which
// a test binary never is: its starts skip the pin re-consent pass under
// an unchanged registry.
const testBuild = "github.com/snug/snugd@v0.0.0-test vcs.revision=0123456789abcdef"

// reopenerAs is reopener for a build named build ("": unidentified).
func reopenerAs(t *testing.T, build string) func() *Daemon {
	dir := t.TempDir() + "/data"
	return func() *Daemon {
		d, err := newBuild(t.Context(), Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)}, build)
		if err != nil {
			t.Fatal(err)
		}
		run(t, d)
		return d
	}
}

// conformance: P3-C12.12-10
func TestPinChangeReconsents(t *testing.T) {
	ctx := t.Context()
	open := reopener(t)
	d := open()
	if _, err := d.proposers.ProposeDirective(ctx, "app", directiveJSON(t, spotifyish("music"), nil), false); err != nil {
		t.Fatal(err)
	}
	approvedRow, _ := d.grants.Approve(ctx, "app", "music")
	// Pretend the row was approved under older pins: a scope list the
	// registry no longer pins.
	old := approvedRow.Requirement
	old.Scopes = []string{"user-read-playback-state"}
	oldJSON := old.Canonical()
	forge(t, d, "app", "music", func(c *store.Connection) { c.RequirementJSON = oldJSON })
	d.Close()

	d = open()
	defer d.Close()
	c, err := d.grants.Connection(ctx, "app", "music")
	if err != nil {
		t.Fatal(err)
	}
	if c.RequirementJSON != oldJSON || !c.NeedsReapproval() || len(c.Pending.Scopes) != 3 {
		t.Fatalf("after a pin change: requirement %q, pending %q; want the old grant serving and the new pins staged", c.RequirementJSON, c.PendingJSON)
	}
}

// The registry a row was resolved against can change under it (a snugd
// upgrade adds an entry or moves a pin). At start every row that names or
// reaches an entry is brought under the current pins: a declared row —
// nobody consented to anything yet — is rewritten with them, keeping its
// imported flag; an approved row's staged change is re-resolved rather than
// dropped; an approved row keeps serving what the user approved.
//
// conformance: P3-C12.12-01, P3-C12.12-10
func TestRegistryDriftAtStart(t *testing.T) {
	ctx := t.Context()
	open := reopener(t)
	d := open()
	// A declared row written before the registry knew Spotify: the app's
	// own values under the name, flagged imported.
	d.putDeclared(ctx, "app", mustAdmit(t, req("music", "api.example.com")))
	forge(t, d, "app", "music", func(c *store.Connection) {
		c.RequirementJSON = string(mustJSON(t, spotifyish("music")))
		c.AllowedHosts = `["collector.example.com"]`
		c.Imported = true
	})
	// An approved GitHub row with a change staged under older pins.
	gh := func(slot string) map[string]any {
		r := req(slot, "api.github.com")
		r["provider"] = map[string]any{"name": "GitHub"}
		return r
	}
	if _, err := d.proposers.ProposeUser(ctx, "app", "code", mustJSON(t, gh("code"))); err != nil {
		t.Fatal(err)
	}
	if _, err := d.grants.Approve(ctx, "app", "code"); err != nil {
		t.Fatal(err)
	}
	opt, err := d.registry.ResolveOption(mustAdmit(t, gh("code")).Req, "oauth-app")
	if err != nil {
		t.Fatal(err)
	}
	stale := opt.Requirement
	stale.Scopes = []string{"repo"}
	staleJSON := stale.Canonical()
	forge(t, d, "app", "code", func(c *store.Connection) { c.PendingRequirementJSON = &staleJSON })
	d.Close()

	d = open()
	defer d.Close()
	c, _ := d.grants.Connection(ctx, "app", "music")
	if c.Status != grants.StatusDeclared || !c.Imported || c.Requirement == nil || slices.Contains(c.Requirement.DeclaredAPIHosts, "collector.example.com") || c.Requirement.Provider.Name != "Spotify" {
		t.Fatalf("declared row after start = %+v (imported %v); want the registry's pins, still imported", c.Requirement, c.Imported)
	}
	if rv, _ := d.proposers.Review(ctx, "app", "music"); !rv.Borrowed {
		t.Fatal("the re-resolved declared row is not disclosed as borrowed")
	}
	c, _ = d.grants.Connection(ctx, "app", "code")
	if !c.NeedsReapproval() || c.Pending == nil || c.Pending.Kind != "oauth2_auth_code" || slices.Contains(c.Pending.Scopes, "repo") {
		t.Fatalf("staged change after start = %q; want the picked option under the current pins", c.PendingJSON)
	}
	if _, err := d.grants.Reapprove(ctx, "app", "code"); err != nil {
		t.Fatalf("Reapprove of the re-resolved change: %v", err)
	}
}

// A borrow on the user channel keeps provenance user but is disclosed on
// the row itself, wherever the row is shown.
//
// conformance: P3-C12.12-05
func TestBorrowDisclosedOnTheRow(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	if _, err := d.proposers.ProposeUser(ctx, "app", "music", mustJSON(t, spotifyish("music"))); err != nil {
		t.Fatal(err)
	}
	d.putDeclared(ctx, "app", mustAdmit(t, req("own", "api.example.com")))
	cs, err := d.grants.Connections(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if want := c.Slot == "music"; c.Borrowed != want {
			t.Errorf("%s: Borrowed = %v, want %v (provenance %s)", c.Slot, c.Borrowed, want, c.Provenance)
		}
	}
}
