package registry

import (
	"errors"
	"slices"
	"testing"

	"github.com/snug/snugd/daemon/requirement"
)

// spotifyRow is a Spotify-named OAuth row with the given endpoints and its
// own walkthrough.
func spotifyRow(t *testing.T, authorize, token string) *requirement.Requirement {
	return parse(t, doc{
		"slot":     "music",
		"provider": doc{"name": "Spotify"},
		"kind":     "oauth2_auth_code",
		"fields":   []any{doc{"key": "client_id", "label": "Client ID", "type": "text"}},
		"registration": doc{
			"consoleUrl":   "https://console.music.example/apps",
			"instructions": []any{"Register an app at console.music.example."},
		},
		"endpoints":        doc{"authorize": authorize, "token": token},
		"scopes":           []any{"user-read-private"},
		"declaredApiHosts": []any{"api.music.example"},
	})
}

// TestWebRegistrationBindsToEndpoints: the pinned web walkthrough
// overrides only when the row's authorize and token URLs byte-match the
// registry pin; a row carrying a pinned provider's name with endpoints of
// its own keeps its own registration; and the render changes none of the
// row's seats.
//
// conformance: P3-C12.12-36, P3-C12.12-37, P3-C12.12-34
func TestWebRegistrationBindsToEndpoints(t *testing.T) {
	g := shipped(t)
	spotify, _ := g.Lookup("spotify")
	pinnedAuth, pinnedToken := spotify.Options[0].Endpoints.Authorize, spotify.Options[0].Endpoints.Token

	res := borrowed(t, g, parse(t, apiKeyDoc("Spotify", "api.spotify.com")), "spotify")
	before := res.Requirement.Canonical()
	got, ok := g.WebRegistration(res.Requirement)
	if !ok || !slices.Equal(got.Instructions, spotify.WebRegistration.Instructions) || got.ConsoleURL != spotify.WebRegistration.ConsoleURL {
		t.Errorf("WebRegistration(borrowed Spotify) = %+v, %v; want the pinned web walkthrough", got, ok)
	}
	if after := res.Requirement.Canonical(); after != before {
		t.Errorf("WebRegistration changed the row:\n%s\n%s", before, after)
	}

	for _, tc := range []struct{ name, authorize, token string }{
		{"own token URL", pinnedAuth, "https://accounts.music.example/api/token"},
		{"own authorize URL", "https://accounts.music.example/authorize", pinnedToken},
		{"token URL with a trailing slash", pinnedAuth, pinnedToken + "/"},
		{"token URL with a query", pinnedAuth, pinnedToken + "?x=1"},
		{"both its own", "https://accounts.music.example/authorize", "https://accounts.music.example/api/token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := spotifyRow(t, tc.authorize, tc.token)
			before := row.Canonical()
			got, ok := g.WebRegistration(row)
			if ok || got.ConsoleURL != "https://console.music.example/apps" || !slices.Equal(got.Instructions, row.Registration.Instructions) {
				t.Errorf("WebRegistration = %+v, %v; want the row's own walkthrough", got, ok)
			}
			if row.Canonical() != before {
				t.Errorf("WebRegistration changed the row")
			}
		})
	}
	t.Run("byte match of both", func(t *testing.T) {
		if _, ok := g.WebRegistration(spotifyRow(t, pinnedAuth, pinnedToken)); !ok {
			t.Errorf("WebRegistration(row with the pinned endpoints) = false, want the pin")
		}
	})
}

// TestWebRegistrationAbsentSeatDoesNotRefuse: an OAuth entry without web
// seats still serves the web surface with the entry-level walkthrough.
//
// conformance: P3-C12.12-35
func TestWebRegistrationAbsentSeatDoesNotRefuse(t *testing.T) {
	g := testRegistry(t, "testdata/good")
	d := apiKeyDoc("Forge", "api.forge.example")
	d["fields"] = []any{
		doc{"key": "client_id", "label": "Client ID", "type": "text"},
		doc{"key": "client_secret", "label": "Client secret", "type": "secret"},
	}
	d["request"] = doc{"headerTemplate": doc{"X-Key": "{{client_id}}"}}
	res := borrowed(t, g, parse(t, d), "forge")
	got, ok := g.WebRegistration(res.Requirement)
	forge, _ := g.Lookup("forge")
	if ok || got.ConsoleURL != forge.Registration.ConsoleURL || !slices.Equal(got.Instructions, forge.Registration.Instructions) {
		t.Errorf("WebRegistration(forge) = %+v, %v; want the entry walkthrough, not a refusal", got, ok)
	}
}

// TestDesktopRedirect: the desktop flow starts only on a posture the
// registry vouches for, bound to the row's endpoints; otherwise the wizard
// refuses honestly with a fixed sentence, never guessing.
//
// conformance: P3-C12.12-27, P3-C12.12-28
func TestDesktopRedirect(t *testing.T) {
	g := shipped(t)
	spotify, _ := g.Lookup("spotify")
	pinned := spotify.Options[0].Endpoints

	res := borrowed(t, g, parse(t, apiKeyDoc("Spotify", "api.spotify.com")), "spotify")
	if p, err := g.DesktopRedirect(res.Requirement); err != nil || p != PostureLoopback {
		t.Errorf("DesktopRedirect(borrowed Spotify) = %q, %v; want loopback", p, err)
	}

	noPKCE := spotifyRow(t, pinned.Authorize, pinned.Token)
	noPKCE.PKCE = ptr(false)
	forge := testRegistry(t, "testdata/good")
	forgeRow := parse(t, doc{
		"slot": "code", "provider": doc{"name": "Forge"}, "kind": "oauth2_auth_code",
		"fields":           []any{doc{"key": "client_id", "label": "Client ID", "type": "text"}},
		"endpoints":        doc{"authorize": "https://login.forge.example/oauth/authorize", "token": "https://login.forge.example/oauth/token"},
		"declaredApiHosts": []any{"api.forge.example"},
	})
	for _, tc := range []struct {
		name string
		g    *Registry
		r    *requirement.Requirement
		want error
	}{
		{"own endpoints under a pinned name", g, spotifyRow(t, "https://accounts.music.example/authorize", "https://accounts.music.example/api/token"), ErrRedirectUnvouched},
		{"entry without a desktop posture", forge, forgeRow, ErrRedirectUnvouched},
		{"no redirect flow", g, parse(t, apiKeyDoc("Spotify", "api.spotify.com")), ErrNoRedirectFlow},
		{"loopback beside pkce false", g, noPKCE, ErrLoopbackNeedsPKCE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.g.DesktopRedirect(tc.r)
			if !errors.Is(err, tc.want) || p != "" {
				t.Errorf("DesktopRedirect = %q, %v; want %v", p, err, tc.want)
			}
		})
	}
}

// TestBrowserCallable: true and false are documented facts; absent stays
// unknown (nil), as does a row that binds to no entry. The answer is a new
// value each time.
//
// conformance: P3-C12.12-25
func TestBrowserCallable(t *testing.T) {
	g := shipped(t)
	hueRow := parse(t, doc{
		"slot": "lights", "provider": doc{"name": "Philips Hue"}, "kind": "api_key",
		"fields":           []any{doc{"key": "application_key", "label": "Key", "type": "secret"}},
		"request":          doc{"headerTemplate": doc{"hue-application-key": "{{application_key}}"}},
		"lanHost":          doc{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
		"declaredApiHosts": []any{"192.168.1.20"},
	})
	for _, tc := range []struct {
		name string
		r    *requirement.Requirement
		want *bool
	}{
		{"documented true", borrowed(t, g, parse(t, apiKeyDoc("Spotify", "api.spotify.com")), "spotify").Requirement, ptr(true)},
		{"documented false, LAN row", hueRow, ptr(false)},
		{"absent stays unknown", borrowed(t, g, parse(t, apiKeyDoc("OpenWeather", "api.openweathermap.org")), "openweather").Requirement, nil},
		{"unregistered", parse(t, apiKeyDoc("Acme", "api.acme.example")), nil},
		{"pinned name, foreign host", parse(t, apiKeyDoc("Spotify", "api.music.example")), nil},
		{"pinned and foreign hosts", parse(t, apiKeyDoc("Spotify", "api.spotify.com", "api.music.example")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := g.BrowserCallable(tc.r); !equalTri(got, tc.want) {
				t.Errorf("BrowserCallable = %v, want %v", got, tc.want)
			}
		})
	}
	r := borrowed(t, g, parse(t, apiKeyDoc("Spotify", "api.spotify.com")), "spotify").Requirement
	*g.BrowserCallable(r) = false
	if got := g.BrowserCallable(r); got == nil || !*got {
		t.Errorf("BrowserCallable after editing a previous answer = %v, want true", got)
	}
}

// TestPairing: the family data comes from the registry entry the row binds
// to, and only for a row of the entry's kind carrying the field the
// ceremony fills.
func TestPairing(t *testing.T) {
	g := shipped(t)
	resolve := func(name string, hosts ...string) *requirement.Requirement {
		res, err := g.Resolve(parse(t, apiKeyDoc(name, hosts...)))
		if err != nil {
			t.Fatalf("Resolve(%s) = %v", name, err)
		}
		return res.Requirement
	}
	hue := borrowed(t, g, parse(t, lanDoc("Philips Hue", "192.168.1.20")), "philips-hue").Requirement
	for _, tc := range []struct {
		name   string
		r      *requirement.Requirement
		family Family
	}{
		{"exchange", hue, FamilyExchange},
		{"token-claim", resolve("SimpleFIN", "bridge.simplefin.org"), FamilyTokenClaim},
		{"device-link", resolve("Snug Simulator", "sim.sidecar.invalid"), FamilyDeviceLink},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, ok := g.Pairing(tc.r)
			if !ok || p.Family != tc.family || p.Verify.Expect == "" {
				t.Errorf("Pairing = %+v, %v; want family %s with its probe", p, ok, tc.family)
			}
		})
	}
	wrongKind := resolve("SimpleFIN", "bridge.simplefin.org")
	wrongKind.Kind = requirement.KindAPIKey
	for name, r := range map[string]*requirement.Requirement{
		"no pairing seat":   resolve("OpenWeather", "api.openweathermap.org"),
		"wrong kind":        wrongKind,
		"unregistered host": parse(t, apiKeyDoc("SimpleFIN", "bridge.fin.example")),
	} {
		if p, ok := g.Pairing(r); ok {
			t.Errorf("Pairing(%s) = %+v, want none", name, p)
		}
	}
}

// TestHelperForHost: the executor's stand-down question matches exactly
// the symbolic names of registered helpers, byte for byte, and nothing
// else.
func TestHelperForHost(t *testing.T) {
	g := shipped(t)
	if id, ok := g.HelperForHost("sim.sidecar.invalid"); !ok || id != "sim" {
		t.Errorf("HelperForHost(sim.sidecar.invalid) = %q, %v; want sim", id, ok)
	}
	for _, host := range []string{
		"x.sim.sidecar.invalid", "sim.sidecar.invalid.", "SIM.sidecar.invalid", "sim.SIDECAR.invalid",
		"sidecar.invalid", "sim.sidecar.invalid.evil.example", "sim", "simulator.sidecar.invalid",
		" sim.sidecar.invalid", "sim.sidecar.invalid:443", "", "api.github.com",
	} {
		if id, ok := g.HelperForHost(host); ok {
			t.Errorf("HelperForHost(%q) = %q, true; want false", host, id)
		}
	}
	if got := g.Helpers(); !slices.Equal(got, []Helper{{ID: "sim", Executable: "snugd-helper-sim"}}) {
		t.Errorf("Helpers() = %v", got)
	}
}
