package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
)

// shippedRegistry loads the registry built into this binary.
func shippedRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	g, err := registry.Load()
	if err != nil {
		t.Fatalf("registry.Load() = %v", err)
	}
	return g
}

// TestProvidersListsEveryEntry: with no daemon and no data directory,
// providers prints one aligned row per registry entry under a header, and
// the legend says what the sign-in columns mean.
func TestProvidersListsEveryEntry(t *testing.T) {
	code, out, errOut := runCmd(t, "", "ctl", "providers")
	if code != exitOK || errOut != "" {
		t.Fatalf("ctl providers = %d, stderr %q; want a listing without a daemon", code, errOut)
	}
	lines := strings.Split(out, "\n")
	header := lines[0]
	for _, col := range []string{"ID", "NAME", "CONNECTS WITH", "DESKTOP SIGN-IN", "WEB SIGN-IN"} {
		if !strings.Contains(header, col) {
			t.Errorf("header %q lacks %s", header, col)
		}
	}
	nameAt := strings.Index(header, "NAME")
	signInAt := strings.Index(header, "DESKTOP SIGN-IN")
	rows := map[string]string{}
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		id, _, _ := strings.Cut(l, " ")
		rows[id] = l
		if len(l) <= signInAt || l[nameAt-1] != ' ' || l[nameAt] == ' ' || l[signInAt] == ' ' {
			t.Errorf("row %q is not aligned under the header %q", l, header)
		}
	}
	for _, e := range shippedRegistry(t).Entries() {
		if _, ok := rows[e.ID]; !ok {
			t.Errorf("listing lacks entry %s", e.ID)
		}
	}
	if len(rows) != len(shippedRegistry(t).Entries()) {
		t.Errorf("listing has %d rows, want one per entry", len(rows))
	}
	for id, want := range map[string][]string{
		"spotify":     {"OAuth sign-in", "yes"},
		"philips-hue": {"link-button pairing", "(local network)"},
		"jellyfin":    {"API key (local network)"},
		"simplefin":   {"setup-token claim"},
		"twitch":      {"OAuth client credentials"},
	} {
		for _, w := range want {
			if !strings.Contains(rows[id], w) {
				t.Errorf("row %q lacks %q", rows[id], w)
			}
		}
	}
	if !strings.Contains(out, "not vouched, it refuses") {
		t.Errorf("the legend does not explain the sign-in columns:\n%s", out)
	}
}

// TestProvidersQuery: a query matches IDs, names, aliases and pinned
// hosts, case-insensitively; no match says so and exits 0.
func TestProvidersQuery(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"HUE", []string{"philips-hue"}},
		{"api.spotify.com", []string{"spotify"}},
		{"polygon", []string{"massive"}},
		{"tmdb", []string{"tmdb"}},
	} {
		code, out, _ := runCmd(t, "", "ctl", "providers", tc.query, "--json")
		if code != exitOK {
			t.Fatalf("providers %q = %d", tc.query, code)
		}
		var got struct {
			Providers []providerSummary `json:"providers"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("providers %q --json: %v\n%s", tc.query, err, out)
		}
		var ids []string
		for _, p := range got.Providers {
			ids = append(ids, p.ID)
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("providers %q = %v, want %v", tc.query, ids, tc.want)
		}
	}
	code, out, _ := runCmd(t, "", "ctl", "providers", "no-such-provider-anywhere")
	if code != exitOK || !strings.Contains(out, "no registry entry matches") {
		t.Errorf("providers with no match = %d, %q", code, out)
	}
	code, out, _ = runCmd(t, "", "ctl", "providers", "no-such-provider-anywhere", "--json")
	if code != exitOK || strings.TrimSpace(out) != `{
  "providers": []
}` {
		t.Errorf("providers --json with no match = %d, %q; want an empty list", code, out)
	}
}

// TestProvidersSignIn: the sign-in a listing reports is the one the
// registry's postures let run — yes only where a redirect is vouched,
// "not vouched" for an authorization-code entry without one (its sign-in
// refuses at start), none for entries that paste or pair.
//
// conformance: P3-C12.12-27
func TestProvidersSignIn(t *testing.T) {
	authCode := registry.Option{ID: "x", Kind: requirement.KindOAuth2AuthCode}
	for _, tc := range []struct {
		name         string
		e            registry.Entry
		desktop, web string
	}{
		{"no posture", registry.Entry{Options: []registry.Option{authCode}}, signInUnvouched, signInUnvouched},
		{"desktop only", registry.Entry{Options: []registry.Option{authCode}, DesktopRedirect: registry.PostureLoopback}, signInYes, signInUnvouched},
		{"both", registry.Entry{Options: []registry.Option{authCode}, DesktopRedirect: registry.PostureLoopback, WebRedirect: registry.PostureOriginCallback}, signInYes, signInYes},
		{"client credentials", registry.Entry{Options: []registry.Option{{Kind: requirement.KindOAuth2ClientCreds}}}, signInNone, signInNone},
		{"api key", registry.Entry{Options: []registry.Option{{Kind: requirement.KindAPIKey}}}, signInNone, signInNone},
	} {
		if d, w := signIn(tc.e); d != tc.desktop || w != tc.web {
			t.Errorf("signIn(%s) = %q, %q; want %q, %q", tc.name, d, w, tc.desktop, tc.web)
		}
	}
	code, out, _ := runCmd(t, "", "ctl", "providers", "--json")
	if code != exitOK {
		t.Fatalf("providers --json = %d", code)
	}
	var got struct {
		Providers []providerSummary `json:"providers"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	g := shippedRegistry(t)
	for _, p := range got.Providers {
		e, _ := g.Lookup(p.ID)
		d, w := signIn(e)
		if p.DesktopSignIn != d || p.WebSignIn != w || p.Name != e.DisplayName || p.LAN != (e.LANHost != nil) {
			t.Errorf("summary %+v does not match entry %s", p, e.ID)
		}
	}
}

// TestProvidersShow: show prints an entry's hosts, scopes, options with
// their fields and templates, the numbered steps and every source with its
// date; --json prints the entry exactly as GET /v1/registry serves it.
func TestProvidersShow(t *testing.T) {
	code, out, errOut := runCmd(t, "", "ctl", "providers", "show", "spotify")
	if code != exitOK || errOut != "" {
		t.Fatalf("providers show spotify = %d, %q", code, errOut)
	}
	e, _ := shippedRegistry(t).Lookup("spotify")
	want := []string{
		"Spotify (spotify)",
		"hosts         api.spotify.com, accounts.spotify.com",
		"scopes        " + strings.Join(e.Scopes, " "),
		"option pkce: Spotify app with PKCE (OAuth sign-in)",
		"desktop       sign in with the provider",
		"token         https://accounts.spotify.com/api/token",
		"pkce          on",
		"at https://developer.spotify.com/dashboard",
		"1. " + e.Registration.Instructions[0],
		"steps on the web",
		"test request  GET /v1/me",
	}
	for _, s := range e.Sources {
		want = append(want, s.URL+" (checked "+s.Checked+")")
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("show spotify lacks %q:\n%s", w, out)
		}
	}

	code, out, _ = runCmd(t, "", "ctl", "providers", "show", "twitch")
	if code != exitOK || strings.Contains(out, "pkce") || !strings.Contains(out, "revoke        https://id.twitch.tv/oauth2/revoke") {
		t.Errorf("show twitch = %d; want the revoke endpoint and no pkce line (client credentials redirect nowhere):\n%s", code, out)
	}

	code, out, _ = runCmd(t, "", "ctl", "providers", "show", "home-assistant")
	if code != exitOK || !strings.Contains(out, "none pinned: a device on your own network") || !strings.Contains(out, "header        Authorization: Bearer {{token}}") {
		t.Errorf("show home-assistant = %d:\n%s", code, out)
	}

	code, out, _ = runCmd(t, "", "ctl", "providers", "show", "nasa", "--json")
	if code != exitOK {
		t.Fatalf("show nasa --json = %d", code)
	}
	raw, err := entryDocument(shippedRegistry(t), "nasa")
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := json.Compact(&a, []byte(out)); err != nil {
		t.Fatalf("show --json is not JSON: %v", err)
	}
	json.Compact(&b, raw)
	if a.String() != b.String() {
		t.Errorf("show nasa --json = %s, want the registry document's entry %s", a.String(), b.String())
	}
}

// TestProvidersShowRefusals: an unknown ID exits 1 and suggests the near
// one; show without an ID, or a second query, is a usage error.
func TestProvidersShowRefusals(t *testing.T) {
	code, _, errOut := runCmd(t, "", "ctl", "providers", "show", "spotfy")
	if code != exitNo || !strings.Contains(errOut, `no registry entry "spotfy"`) || !strings.Contains(errOut, "providers show spotify") {
		t.Errorf("show spotfy = %d, %q; want exit 1 and a suggestion", code, errOut)
	}
	for _, args := range [][]string{{"show"}, {"one", "two"}, {"show", "a", "b"}} {
		if code, _, errOut := runCmd(t, "", append([]string{"ctl", "providers"}, args...)...); code != exitUsage || errOut == "" {
			t.Errorf("providers %q = %d, %q; want a usage error", args, code, errOut)
		}
	}
}

// TestCompletionProviders: the shell completions offer show after ctl
// providers and the registry's IDs after show.
func TestCompletionProviders(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	code, script, _ := runCmd(t, "", "completion", "bash")
	if code != exitOK {
		t.Fatal("completion bash failed")
	}
	run := func(words ...string) string {
		cmd := exec.Command("bash", "-c", script+`
COMP_WORDS=(`+strings.Join(words, " ")+`); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _snugd; echo "${COMPREPLY[*]}"`)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash completion %v: %v", words, err)
		}
		return strings.TrimSpace(string(b))
	}
	if got := run("snugd", "ctl", "providers", "sh"); got != "show" {
		t.Errorf("completing ctl providers sh = %q, want show", got)
	}
	if got := run("snugd", "ctl", "providers", "show", "spot"); got != "spotify" {
		t.Errorf("completing ctl providers show spot = %q, want spotify", got)
	}
}
