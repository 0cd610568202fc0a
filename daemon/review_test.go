package daemon

import (
	"strings"
	"testing"
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
	d.stagePending(ctx, "app", mustAdmit(t, next))

	rv, err := d.Review(ctx, "app", "wx")
	if err != nil {
		t.Fatalf("Review: %v", err)
	}
	if rv.Posture != PostureManual || rv.ConsoleHost != "console.example.com" || len(rv.Instructions) != 2 {
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
	for p, want := range map[Provenance]Posture{
		ProvenanceUser: PostureManual, ProvenanceRegistry: PosturePinned, ProvenanceInference: PostureStrong,
		ProvenanceUserDocs: PostureStrong, ProvenanceStarter: PostureStrong,
	} {
		if got := postureOf(p); got != want {
			t.Errorf("postureOf(%q) = %q, want %q", p, got, want)
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
	pr, err := d.ProposeUser(ctx, "app", "hue", mustJSON(t, hue))
	if err != nil || !pr.Borrowed {
		t.Fatalf("Hue proposal = %+v, %v", pr, err)
	}
	rv, _ := d.Review(ctx, "app", "hue")
	if rv.PairingFamily != "exchange" || !rv.PairingOwed {
		t.Fatalf("fresh Hue row: family %q owed %v; want exchange owed", rv.PairingFamily, rv.PairingOwed)
	}
	// Connected (a typed key), and another family's marker set: still owed.
	one := int64(1)
	for _, st := range []ConnState{
		{Status: ConnConnected},
		{Status: ConnConnected, LinkVerifiedAt: &one, ClaimVerifiedAt: &one},
	} {
		if _, owed := d.pairingOwed(pr.Connection.Requirement, st, true); !owed {
			t.Fatalf("state %+v: pairing not owed; another family's marker must not vouch", st)
		}
	}
	if _, owed := d.pairingOwed(pr.Connection.Requirement, ConnState{Status: ConnConnected, LANVerifiedAt: &one}, true); owed {
		t.Fatal("the exchange marker did not settle the exchange family")
	}
}
