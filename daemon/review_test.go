package daemon

import (
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/internal/testutil"
)

// conformance: P3-C12.3-20, P3-C12.1-03, P3-C12.6-05, P3-C12.12-09
func TestReviewDiff(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	v := req("wx", "api.example.com")
	v["scopes"] = []any{"read", "write"}
	v["registration"] = map[string]any{"consoleUrl": "https://console.example.com/keys", "instructions": []any{"Sign in.", "Create a key."}}
	approved(t, d, "app", v)
	next := req("wx", "api.example.com", "b.example.com")
	next["scopes"] = []any{"write", "read"}
	next["registration"] = v["registration"]
	d.grants.StagePending(ctx, "app", mustAdmit(t, next))

	rv, err := d.proposers.Review(ctx, "app", "wx")
	if err != nil {
		t.Fatalf("Review: %v", err)
	}
	if rv.Posture != grants.PostureManual || rv.ConsoleHost != "console.example.com" || len(rv.Instructions) != 2 {
		t.Fatalf("review = %+v", rv)
	}
	if strings.Join(rv.Hosts, ",") != "api.example.com" || strings.Join(rv.PendingHosts, ",") != "api.example.com,b.example.com" {
		t.Fatalf("hosts = %v → %v", rv.Hosts, rv.PendingHosts)
	}
	if strings.Join(rv.Scopes, ",") != "read,write" || strings.Join(rv.Pending, ",") != "write,read" {
		t.Fatalf("scopes = %v → %v, want both verbatim", rv.Scopes, rv.Pending)
	}
	var paths []string
	for _, fc := range rv.Diff {
		paths = append(paths, fc.Path)
	}
	// Array order is significant: swapped scopes are two changes.
	want := "declaredApiHosts[1],scopes[0],scopes[1]"
	if got := strings.Join(paths, ","); got != want {
		t.Fatalf("diff paths = %s, want %s", got, want)
	}
	if rv.Diff[0].Old != nil || *rv.Diff[0].New != `"b.example.com"` {
		t.Fatalf("added host change = %+v", rv.Diff[0])
	}
}

func TestPostureByProvenance(t *testing.T) {
	for _, tc := range []struct {
		p        grants.Provenance
		imported bool
		borrowed bool
		want     grants.Posture
	}{
		{grants.ProvenanceUser, false, false, grants.PostureManual},
		{grants.ProvenanceUser, false, true, grants.PostureManual},
		{grants.ProvenanceUser, true, false, grants.PostureStrong},
		{grants.ProvenanceRegistry, false, true, grants.PosturePinned},
		{grants.ProvenanceRegistry, true, true, grants.PosturePinned},
		{grants.ProvenanceRegistry, false, false, grants.PostureStrong},
		{grants.ProvenanceInference, false, false, grants.PostureStrong},
		{grants.ProvenanceUserDocs, false, false, grants.PostureStrong},
		{grants.ProvenanceStarter, false, true, grants.PostureStrong},
	} {
		if got := grants.PostureOf(grants.Connection{Provenance: tc.p, Imported: tc.imported}, tc.borrowed); got != tc.want {
			t.Errorf("postureOf(%q, imported %v, borrowed %v) = %q, want %q", tc.p, tc.imported, tc.borrowed, got, tc.want)
		}
	}
}

// conformance: P3-C13-14, P3-C13-15
func TestPairingOwedByFamilyMarker(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	hue := map[string]any{
		"slot":             "hue",
		"provider":         map[string]any{"name": "Philips Hue"},
		"kind":             "api_key",
		"fields":           []any{map[string]any{"key": "app_key", "label": "Key", "type": "secret"}},
		"lanHost":          map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
		"declaredApiHosts": []any{"192.168.1.20"},
	}
	pr, err := d.proposers.ProposeUser(ctx, "app", "hue", mustJSON(t, hue))
	if err != nil || !pr.Borrowed {
		t.Fatalf("Hue proposal = %+v, %v", pr, err)
	}
	rv, _ := d.proposers.Review(ctx, "app", "hue")
	if rv.PairingFamily != "exchange" || !rv.PairingOwed {
		t.Fatalf("fresh Hue row: family %q owed %v; want exchange owed", rv.PairingFamily, rv.PairingOwed)
	}
	// Connected (a typed key), and another family's marker set: still owed.
	one := int64(1)
	for _, st := range []grants.ConnState{
		{Status: grants.ConnConnected},
		{Status: grants.ConnConnected, LinkVerifiedAt: &one, ClaimVerifiedAt: &one},
	} {
		if _, owed := d.grants.PairingOwed(pr.Connection.Requirement, st, true); !owed {
			t.Fatalf("state %+v: pairing not owed; another family's marker must not vouch", st)
		}
	}
	if _, owed := d.grants.PairingOwed(pr.Connection.Requirement, grants.ConnState{Status: grants.ConnConnected, LANVerifiedAt: &one}, true); owed {
		t.Fatal("the exchange marker did not settle the exchange family")
	}
}

// A stored requirement that names a registry provider but carries values of
// its own (a row written before the registry knew the provider, or forged
// in storage) must not be reviewed as "these values came from snugd's
// registry", and re-approval, which spec §12.3 says is reachable without
// passing the stager, holds the borrow ban itself before it freezes hosts.
//
// conformance: P3-C12.3-12
func TestUnborrowedRegistryNameIsNeitherDisclosedNorReapproved(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	d.putDeclared(ctx, "app", mustAdmit(t, req("music", "api.example.com")))
	forge(t, d, "app", "music", func(c *store.Connection) {
		c.RequirementJSON = string(mustJSON(t, spotifyish("music")))
		c.AllowedHosts = `["collector.example.com"]`
		c.Provenance = store.ProvenanceRegistry
	})
	rv, err := d.proposers.Review(ctx, "app", "music")
	if err != nil {
		t.Fatal(err)
	}
	if rv.Borrowed || rv.Disclosure != "" || rv.Posture == grants.PosturePinned {
		t.Fatalf("review = borrowed %v, disclosure %q, posture %q; the values are the app's own, not the registry's", rv.Borrowed, rv.Disclosure, rv.Posture)
	}

	// A staged change naming the provider with its own hosts is never
	// promoted.
	approved(t, d, "app", req("other", "api.example.com"))
	staged := spotifyish("other")
	forge(t, d, "app", "other", func(c *store.Connection) {
		p := string(mustJSON(t, staged))
		c.PendingRequirementJSON = &p
	})
	_, err = d.grants.Reapprove(ctx, "app", "other")
	testutil.WantCode(t, err, errcode.RequirementInvalid)
	if c, _ := d.grants.Connection(ctx, "app", "other"); slices.Contains(c.AllowedHosts, "collector.example.com") {
		t.Fatalf("re-approval froze %v", c.AllowedHosts)
	}
}

// A staged change is what a re-approval screen reviews, and it may come
// from another channel than the row: a change the builder assistant staged
// on a row the user typed must be reviewed strongly, never with the manual
// posture the user's own entry earned.
//
// conformance: P3-C12.1-03
func TestStagedChangeIsReviewedByItsOwnPosture(t *testing.T) {
	d := newTestDaemon(t)
	ctx := t.Context()
	if _, err := d.proposers.ProposeUser(ctx, "app", "wx", mustJSON(t, req("wx", "api.example.com"))); err != nil {
		t.Fatal(err)
	}
	if _, err := d.grants.Approve(ctx, "app", "wx"); err != nil {
		t.Fatal(err)
	}
	if rv, _ := d.proposers.Review(ctx, "app", "wx"); rv.Posture != grants.PostureManual {
		t.Fatalf("user-entered row reviewed %q, want manual", rv.Posture)
	}
	pr, err := d.proposers.ProposeDirective(ctx, "app", directiveJSON(t, req("wx", "api.example.com", "evil.example.com"), nil), false)
	if err != nil || !pr.Staged {
		t.Fatalf("directive = %+v, %v; want it staged", pr, err)
	}
	if rv, _ := d.proposers.Review(ctx, "app", "wx"); rv.Posture != grants.PostureStrong {
		t.Fatalf("assistant-staged change reviewed %q, want strong", rv.Posture)
	}
	// A staged change holding the registry's own values, proposed by the
	// assistant, is pinned.
	gh := req("code", "api.github.com")
	gh["provider"] = map[string]any{"name": "GitHub"}
	if _, err := d.proposers.ProposeUser(ctx, "app", "code", mustJSON(t, gh)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.grants.Approve(ctx, "app", "code"); err != nil {
		t.Fatal(err)
	}
	oauth := req("code", "api.github.com")
	oauth["provider"] = map[string]any{"name": "GitHub"}
	oauth["fields"] = []any{map[string]any{"key": "client_id", "label": "ID", "type": "text"}, map[string]any{"key": "client_secret", "label": "Secret", "type": "secret"}}
	oauth["request"] = map[string]any{"headerTemplate": map[string]any{"X-Key": "{{client_id}}:{{client_secret}}"}}
	if pr, err := d.proposers.ProposeDirective(ctx, "app", directiveJSON(t, oauth, nil), false); err != nil || !pr.Staged || !pr.Borrowed {
		t.Fatalf("directive = %+v, %v; want a borrowed option staged", pr, err)
	}
	if rv, _ := d.proposers.Review(ctx, "app", "code"); rv.Posture != grants.PosturePinned || !rv.Borrowed {
		t.Fatalf("staged registry option reviewed %q (borrowed %v), want pinned", rv.Posture, rv.Borrowed)
	}
	// After re-approval the row's provenance is its requirement's.
	c, err := d.grants.Reapprove(ctx, "app", "code")
	if err != nil || c.Provenance != grants.ProvenanceRegistry {
		t.Fatalf("Reapprove = %s, %v; want provenance registry", c.Provenance, err)
	}
}
