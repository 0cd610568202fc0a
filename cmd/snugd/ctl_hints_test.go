package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/internal/testutil"
)

// hintRows proposes and approves one connection of each kind a person
// meets: an API key (typed), an OAuth sign-in, a SimpleFIN claim, a Hue
// LAN pairing and a simulator device link. Each borrows the shipped
// registry's entry, so its pairing seat is the registry's.
func hintRows(t *testing.T, td *testDaemon) {
	t.Helper()
	td.propose(t, "trader")
	rows := []struct {
		app, slot string
		req       map[string]any
	}{
		{"player", "music", map[string]any{
			"slot": "music", "provider": map[string]any{"name": "Spotify"}, "kind": "oauth2_auth_code",
			"fields":           []any{map[string]any{"key": "client_id", "label": "Client ID", "type": "text"}},
			"endpoints":        map[string]any{"authorize": "https://accounts.spotify.com/authorize", "token": "https://accounts.spotify.com/api/token"},
			"declaredApiHosts": []any{"api.spotify.com"},
		}},
		{"app", "bank", map[string]any{
			"slot": "bank", "provider": map[string]any{"name": "SimpleFIN"}, "kind": "basic_auth",
			"fields":           []any{map[string]any{"key": "access_credentials", "label": "Access credentials", "type": "secret"}},
			"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
			"declaredApiHosts": []any{"beta-bridge.simplefin.org"},
		}},
		{"app", "hue", map[string]any{
			"slot": "hue", "provider": map[string]any{"name": "Philips Hue"}, "kind": "api_key",
			"fields":  []any{map[string]any{"key": "application_key", "label": "Application key", "type": "secret"}},
			"request": map[string]any{"headerTemplate": map[string]any{"hue-application-key": "{{application_key}}"}},
			"lanHost": map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
		}},
		{"app", "chat", map[string]any{
			"slot": "chat", "provider": map[string]any{"name": "Snug Simulator"}, "kind": "linked_device",
			"fields":           []any{map[string]any{"key": "helper_token", "label": "Helper token", "type": "secret"}},
			"declaredApiHosts": []any{"sim.sidecar.invalid"},
		}},
	}
	for _, r := range rows {
		raw, err := json.Marshal(r.req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := td.d.Proposers().ProposeUser(t.Context(), r.app, r.slot, raw); err != nil {
			t.Fatalf("ProposeUser %s/%s: %v", r.app, r.slot, err)
		}
	}
	for _, r := range append(rows, struct {
		app, slot string
		req       map[string]any
	}{app: "trader", slot: "coinbase-exchange"}) {
		if _, err := td.d.Grants().Approve(t.Context(), r.app, r.slot); err != nil {
			t.Fatalf("Approve %s/%s: %v", r.app, r.slot, err)
		}
	}
}

// TestHintsNameTheNextStep walks each kind's approved row through ctl
// status and ctl apps: every hint names the command that deals with it,
// with APP and SLOT filled in, and credentials set only for fields a
// person types. Setting an OAuth client ID then points at the sign-in,
// not at more fields.
func TestHintsNameTheNextStep(t *testing.T) {
	td := startDaemon(t)
	hintRows(t, td)
	want := map[string]string{
		"trader/coinbase-exchange": "no credentials stored: snugd ctl credentials set trader coinbase-exchange",
		"player/music":             "no credentials stored: snugd ctl credentials set player music, then snugd ctl connect player music",
		"app/bank":                 "not paired yet: snugd ctl pair claim app bank",
		"app/hue":                  "not paired yet: snugd ctl pair lan app hue",
		"app/chat":                 "not paired yet: snugd ctl pair link app chat",
	}
	for _, cmd := range []string{"status", "apps"} {
		code, out, errOut := td.ctl(t, "", cmd)
		if code != exitOK {
			t.Fatalf("ctl %s = %d, %q", cmd, code, errOut)
		}
		for row, hint := range want {
			if !strings.Contains(out, row+": "+hint+"\n") {
				t.Errorf("ctl %s lacks %q:\n%s", cmd, row+": "+hint, out)
			}
		}
		if !strings.Contains(out, "app/hue: no certificate pinned for the LAN device yet: pairing pins it: snugd ctl pair lan app hue\n") {
			t.Errorf("ctl %s: the Hue pin hint does not name pairing:\n%s", cmd, out)
		}
		for _, wrong := range []string{
			"credentials set app bank", "credentials set app hue", "credentials set app chat",
			"first connection pins", "run snugd ctl connect:",
		} {
			if strings.Contains(out, wrong) {
				t.Errorf("ctl %s sends a row to the wrong step (%q):\n%s", cmd, wrong, out)
			}
		}
	}

	// connections APP names the same next step under each approved row.
	for app, lines := range map[string][]string{
		"app":    {"  next         not paired yet: snugd ctl pair claim app bank\n", "  next         not paired yet: snugd ctl pair lan app hue\n", "  next         not paired yet: snugd ctl pair link app chat\n"},
		"player": {"  next         no credentials stored: snugd ctl credentials set player music, then snugd ctl connect player music\n"},
	} {
		_, out, _ := td.ctl(t, "", "connections", app)
		for _, line := range lines {
			if !strings.Contains(out, line) {
				t.Errorf("connections %s lacks %q:\n%s", app, line, out)
			}
		}
	}

	// The client ID is all a person types for this sign-in: what is left
	// is connect, and nothing says "set the rest".
	code, out, errOut := td.ctl(t, `{"client_id":"my-client"}`, "credentials", "set", "player", "music")
	if code != exitOK || !strings.Contains(out, "not connected yet: not signed in yet: snugd ctl connect player music\n") || strings.Contains(out, "set the rest") || strings.Contains(out, "credentials set") {
		t.Errorf("credentials set of the client ID = %d, %q, %q", code, out, errOut)
	}
	for _, cmd := range []string{"status", "apps"} {
		_, out, _ := td.ctl(t, "", cmd)
		if !strings.Contains(out, "player/music: not signed in yet: snugd ctl connect player music\n") || strings.Contains(out, "credentials set player music") {
			t.Errorf("ctl %s after the client ID:\n%s", cmd, out)
		}
	}

	// A partial set of typed fields names the typed fields still missing.
	code, out, _ = td.ctl(t, `{"api_key":"k"}`, "credentials", "set", "trader", "coinbase-exchange")
	if code != exitOK || !strings.Contains(out, "not connected yet: missing required fields: api_secret, passphrase: snugd ctl credentials set trader coinbase-exchange\n") {
		t.Errorf("partial set = %d, %q", code, out)
	}

	// The claim hint is a command ctl runs as printed: with no token on
	// standard input it asks for one.
	code, _, errOut = td.ctl(t, "", "pair", "claim", "app", "bank")
	if code == exitUsage || !strings.Contains(errOut, "no setup token on standard input") {
		t.Errorf("the printed pair claim = %d, %q", code, errOut)
	}
}

// TestTypedCredentialsRefuseCeremonyFields: a field a ceremony fills is
// refused when a person types it, with a sentence naming the ceremony,
// and nothing is stored (the row still owes its pairing).
func TestTypedCredentialsRefuseCeremonyFields(t *testing.T) {
	td := startDaemon(t)
	hintRows(t, td)
	book := td.d.Grants()
	for _, tc := range []struct {
		app, slot, key, want string
	}{
		{"app", "bank", "access_credentials", "the claim of a setup token fills it: run snugd ctl pair claim app bank"},
		{"app", "hue", "application_key", "pairing with the device on the LAN fills it (and pins its certificate): run snugd ctl pair lan app hue"},
		{"app", "chat", "helper_token", "linking the device fills it: run snugd ctl pair link app chat"},
		{"player", "music", "_access_token", "only the sign-in stores: run snugd ctl connect player music"},
		{"player", "music", "_refresh_token", "only the sign-in stores: run snugd ctl connect player music"},
	} {
		const value = "typed-by-hand-canary-4f1e"
		err := book.SetTypedCredentials(t.Context(), tc.app, tc.slot, map[string]string{tc.key: value})
		testutil.WantCode(t, err, errcode.BadRequest)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), value) {
			t.Errorf("%s/%s %s: %v; want %q", tc.app, tc.slot, tc.key, err, tc.want)
		}
	}
	// A typed field beside a ceremony's is refused as a whole.
	err := book.SetTypedCredentials(t.Context(), "player", "music", map[string]string{"client_id": "c", "_access_token": "t"})
	testutil.WantCode(t, err, errcode.BadRequest)
	// ctl credentials set goes through the API route, which refuses the
	// same way, naming the ceremony.
	if code, out, errOut := td.ctl(t, `{"access_credentials":"typed-by-hand-canary-4f1e"}`, "credentials", "set", "app", "bank"); code == exitOK ||
		!strings.Contains(errOut, "pair claim app bank") || strings.Contains(out+errOut, "typed-by-hand-canary-4f1e") {
		t.Errorf("ctl credentials set of a ceremony field = %d\n%s%s; want a refusal naming pair claim", code, out, errOut)
	}
	_, out, _ := td.ctl(t, "", "apps")
	for _, line := range []string{
		"app/bank: not paired yet: snugd ctl pair claim app bank",
		"app/hue: not paired yet: snugd ctl pair lan app hue",
		"app/chat: not paired yet: snugd ctl pair link app chat",
		"player/music: no credentials stored: snugd ctl credentials set player music",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("after the refusals, apps lacks %q (something was stored):\n%s", line, out)
		}
	}
	// Typed fields still go in.
	if err := book.SetTypedCredentials(t.Context(), "trader", "coinbase-exchange", map[string]string{"api_key": "k"}); err != nil {
		t.Errorf("a typed field: %v", err)
	}
}
