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
