package registry

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/requirement"
)

// borrowed resolves r and requires a borrow from entry id.
func borrowed(t *testing.T, g *Registry, r *requirement.Requirement, id string) Resolution {
	t.Helper()
	res, err := g.Resolve(r)
	if err != nil {
		t.Fatalf("Resolve(%s) error = %v", r.Canonical(), err)
	}
	if !res.Borrowed || res.EntryID != id {
		t.Fatalf("Resolve(%s) = borrowed %v from %q, want a borrow from %q", r.Canonical(), res.Borrowed, res.EntryID, id)
	}
	return res
}

// pinnedCanonical is the requirement entry id's option pins, with slot.
func pinnedCanonical(t *testing.T, g *Registry, id, optionID, slot string) string {
	t.Helper()
	for _, e := range g.entries {
		if e.id != id {
			continue
		}
		for _, o := range e.options {
			if o.id == optionID {
				c := *o.base
				c.Slot = slot
				return c.Canonical()
			}
		}
	}
	t.Fatalf("no option %s/%s", id, optionID)
	return ""
}

// TestResolveNameTrigger: a requirement naming a registry provider (by
// display name or alias, case-insensitively) gets the pinned values even
// when it declares no pinned host — the host-only evasion, trading on a
// brand while declaring no overlapping host, is caught by the name.
//
// conformance: P3-C12.12-01
func TestResolveNameTrigger(t *testing.T) {
	g := shipped(t)
	for _, tc := range []struct{ name, entry string }{
		{"Spotify", "spotify"},
		{"sPoTiFy", "spotify"},
		{"spotify web api", "spotify"},
		{"OpenWeatherMap", "openweather"},
		{"COINGECKO DEMO", "coingecko"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := parse(t, apiKeyDoc(tc.name, "api.evil.example"))
			res := borrowed(t, g, r, tc.entry)
			if res.Triggers != TriggerName {
				t.Errorf("Triggers = %v, want name", res.Triggers)
			}
			if got := requirement.DeriveAllowedHosts(res.Requirement); slices.Contains(got, "api.evil.example") {
				t.Errorf("ceiling = %v still holds the declared host", got)
			}
		})
	}
}

// TestResolveHostTrigger: a requirement whose hosts intersect a pinned
// entry borrows whatever it is called — the rename evasion ("5potify") is
// caught by the host. Every host of the ceiling counts: declared, endpoint
// and userLayer hosts, normalized.
//
// conformance: P3-C12.12-02
func TestResolveHostTrigger(t *testing.T) {
	g := shipped(t)
	endpointOnly := apiKeyDoc("Totally Not Spotify", "api.evil.example")
	endpointOnly["kind"] = "oauth2_auth_code"
	endpointOnly["endpoints"] = doc{"authorize": "https://evil.example/authorize", "token": "https://accounts.spotify.com/api/token"}
	for _, tc := range []struct {
		name string
		d    doc
	}{
		{"renamed", apiKeyDoc("5potify", "api.spotify.com")},
		{"renamed among others", apiKeyDoc("Music Thing", "api.evil.example", "api.spotify.com")},
		{"spelled in capitals", apiKeyDoc("Music Thing", "API.Spotify.COM")},
		{"only an endpoint host", endpointOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := borrowed(t, g, parse(t, tc.d), "spotify")
			if res.Triggers != TriggerHost {
				t.Errorf("Triggers = %v, want host", res.Triggers)
			}
			if res.Requirement.Provider.Name != "Spotify" {
				t.Errorf("Provider.Name = %q, want the display name Spotify", res.Requirement.Provider.Name)
			}
		})
	}
	both := borrowed(t, g, parse(t, apiKeyDoc("Spotify", "api.spotify.com")), "spotify")
	if both.Triggers != TriggerName|TriggerHost || both.Triggers.String() != "name+host" {
		t.Errorf("Triggers = %v, want name+host", both.Triggers)
	}
}

// TestResolveDiscardsNotMerges: the registry's hosts, endpoints,
// registration, display name and scopes replace the declared ones; a
// declared extra host, endpoint, scope, walkthrough or template is gone.
//
// conformance: P3-C12.12-03, P3-C12.12-08
func TestResolveDiscardsNotMerges(t *testing.T) {
	g := shipped(t)
	d := doc{
		"slot":     "code",
		"provider": doc{"name": "GitHub", "homepageUrl": "https://evil.example", "docsUrl": "https://evil.example/docs"},
		"kind":     "oauth2_auth_code",
		"fields": []any{
			doc{"key": "client_id", "label": "Client ID", "type": "text"},
			doc{"key": "client_secret", "label": "Client secret", "type": "secret"},
		},
		"registration": doc{"consoleUrl": "https://evil.example/console", "instructions": []any{"Paste your password at evil.example."}},
		"endpoints": doc{
			"authorize": "https://evil.example/authorize", "token": "https://evil.example/token",
			"refresh": "https://evil.example/refresh", "revoke": "https://evil.example/revoke",
		},
		"scopes":           []any{"repo", "admin:org", "delete_repo"},
		"pkce":             false,
		"authorizeParams":  doc{"prompt": "none"},
		"request":          doc{"queryTemplate": doc{"leak": "{{client_secret}}"}},
		"declaredApiHosts": []any{"api.github.com", "evil.example", "collector.evil.example"},
		"testRequest":      doc{"method": "GET", "pathAndQuery": "/steal"},
	}
	res := borrowed(t, g, parse(t, d), "github")
	if res.OptionID != "oauth-app" {
		t.Fatalf("OptionID = %q, want oauth-app (the declared fields match it)", res.OptionID)
	}
	got := res.Requirement.Canonical()
	if want := pinnedCanonical(t, g, "github", "oauth-app", "code"); got != want {
		t.Errorf("resolved = %s\nwant the pinned option exactly = %s", got, want)
	}
	if strings.Contains(got, "evil") || strings.Contains(got, "admin:org") || strings.Contains(got, "leak") || strings.Contains(got, "prompt") {
		t.Errorf("resolved requirement still carries a declared value: %s", got)
	}
	e, _ := g.Lookup("github")
	if hosts := requirement.DeriveAllowedHosts(res.Requirement); !slices.Equal(hosts, e.Hosts) {
		t.Errorf("ceiling = %v, want exactly the pinned hosts %v", hosts, e.Hosts)
	}
	if !slices.Equal(res.Requirement.Scopes, e.Scopes) {
		t.Errorf("Scopes = %v, want the pin %v verbatim", res.Requirement.Scopes, e.Scopes)
	}
	if p := res.Requirement.PKCE; p == nil || !*p {
		t.Errorf("PKCE = %v, want the option's true", p)
	}
}

// TestResolveKindAgnostic: an api_key requirement naming an OAuth provider
// borrows too, and leaves with the provider's own flow.
//
// conformance: P3-C12.12-04
func TestResolveKindAgnostic(t *testing.T) {
	g := shipped(t)
	for _, kind := range []string{"api_key", "bearer_token", "basic_auth", "none"} {
		t.Run(kind, func(t *testing.T) {
			d := apiKeyDoc("Spotify", "api.evil.example")
			d["kind"] = kind
			if kind == "none" {
				delete(d, "fields")
				delete(d, "request")
			}
			res := borrowed(t, g, parse(t, d), "spotify")
			r := res.Requirement
			if r.Kind != requirement.KindOAuth2AuthCode || len(r.Request.HeaderTemplate) != 0 {
				t.Errorf("resolved kind %s, templates %v: want Spotify's OAuth flow and no app template", r.Kind, r.Request.HeaderTemplate)
			}
		})
	}
}

// TestResolveDisclosure: a borrow says so, with the fixed sentence the
// review screen shows; a requirement that triggers nothing says nothing.
//
// conformance: P3-C12.12-05
func TestResolveDisclosure(t *testing.T) {
	g := shipped(t)
	res := borrowed(t, g, parse(t, apiKeyDoc("NASA", "api.nasa.gov")), "nasa")
	if res.Disclosure != Disclosure || Disclosure != "these values came from snugd's registry, not from the app" {
		t.Errorf("Disclosure = %q", res.Disclosure)
	}
	if res.OptionID != "api-key" {
		t.Errorf("OptionID = %q, want api-key", res.OptionID)
	}
	plain, err := g.Resolve(parse(t, apiKeyDoc("Acme Weather", "api.acme.example")))
	if err != nil || plain.Borrowed || plain.Disclosure != "" || plain.EntryID != "" || plain.Triggers != 0 {
		t.Errorf("Resolve(unregistered) = %+v, %v; want no borrow and no disclosure", plain, err)
	}
}

// TestResolveNoTrigger: a requirement naming no entry and reaching no
// pinned host comes back as it is, the very same value.
func TestResolveNoTrigger(t *testing.T) {
	g := shipped(t)
	r := parse(t, apiKeyDoc("Acme Weather", "api.acme.example", "cdn.acme.example"))
	before := r.Canonical()
	res, err := g.Resolve(r)
	if err != nil {
		t.Fatalf("Resolve = %v", err)
	}
	if res.Requirement != r || res.Borrowed || r.Canonical() != before {
		t.Errorf("Resolve(unregistered) = %+v, want the input unchanged", res)
	}
}

// TestResolveRefusesWhatSkippedTheParser: a requirement built past the
// schema is checked even when nothing triggers: a host that cannot be
// normalized (so it triggers nothing) or a userLayer that did not come
// from the registry is refused, never waved through.
func TestResolveRefusesWhatSkippedTheParser(t *testing.T) {
	g := shipped(t)
	base := func() *requirement.Requirement {
		return parse(t, apiKeyDoc("Acme Weather", "api.acme.example"))
	}
	trailingDot := base()
	trailingDot.DeclaredAPIHosts = []string{"api.github.com."}
	withUserLayer := base()
	withUserLayer.UserLayer = &requirement.UserLayer{Kind: requirement.KindAPIKey, DeclaredAPIHosts: []string{"api.acme.example"}}
	badSlot := parse(t, apiKeyDoc("GitHub", "api.github.com"))
	badSlot.Slot = "Code"
	for name, r := range map[string]*requirement.Requirement{
		"trailing dot": trailingDot, "userLayer": withUserLayer, "slot on a borrow": badSlot,
	} {
		t.Run(name, func(t *testing.T) {
			res, err := g.Resolve(r)
			var ie *InvalidError
			if !errors.As(err, &ie) || len(ie.Violations) == 0 {
				t.Errorf("Resolve = %+v, %v; want an *InvalidError", res, err)
			}
		})
	}
}

// TestResolveLANKeepsAddress: a LAN borrow keeps the declaration's
// collected address (the registry has nothing to substitute) and the
// entry's lanHost; a pre-collection declaration stays pre-collection.
//
// conformance: P3-C12.12-06
func TestResolveLANKeepsAddress(t *testing.T) {
	g := shipped(t)
	post := lanDoc("hue", "192.168.1.20")
	res := borrowed(t, g, parse(t, post), "philips-hue")
	r := res.Requirement
	if !slices.Equal(r.DeclaredAPIHosts, []string{"192.168.1.20"}) || r.LANHost == nil || r.LANHost.Label != "Bridge IP address" {
		t.Errorf("resolved hosts %v, lanHost %+v: want 192.168.1.20 kept beside the entry's lanHost", r.DeclaredAPIHosts, r.LANHost)
	}
	if r.Request.HeaderTemplate["hue-application-key"] != "{{application_key}}" || r.Request.HeaderTemplate["X-Token"] != "" {
		t.Errorf("templates = %v, want the registry's", r.Request.HeaderTemplate)
	}
	if got := requirement.DeriveAllowedHosts(r); !slices.Equal(got, []string{"192.168.1.20"}) {
		t.Errorf("ceiling = %v, want [192.168.1.20]", got)
	}

	pre := post
	delete(pre, "declaredApiHosts")
	res = borrowed(t, g, parse(t, pre), "philips-hue")
	if len(res.Requirement.DeclaredAPIHosts) != 0 || len(requirement.DeriveAllowedHosts(res.Requirement)) != 0 {
		t.Errorf("pre-collection borrow hosts = %v, want none and an empty ceiling", res.Requirement.DeclaredAPIHosts)
	}

	// A LAN row of an unregistered device borrows nothing: a collected
	// address is never a pinned host.
	pre["provider"] = doc{"name": "Acme Lights"}
	pre["declaredApiHosts"] = []any{"192.168.1.20"}
	if res, err := g.Resolve(parse(t, pre)); err != nil || res.Borrowed {
		t.Errorf("Resolve(unregistered LAN row) = %+v, %v; want no borrow", res, err)
	}
}

// TestResolveLANRevalidatesClass: the borrow path checks the collected
// address's class itself, independently of the schema, so a requirement
// injected past the schema with an off-class host is refused here.
//
// conformance: P3-C12.11-10
func TestResolveLANRevalidatesClass(t *testing.T) {
	g := shipped(t)
	for _, hosts := range [][]string{
		{"8.8.8.8"}, {"172.32.0.1"}, {"127.0.0.1"}, {"169.254.169.254"}, {"010.0.0.1"}, {"10.1"},
		{"::ffff:192.168.1.2"}, {"hue.local"}, {"api.meethue.com"}, {"192.168.1.2", "192.168.1.3"}, {""},
	} {
		t.Run(strings.Join(hosts, ","), func(t *testing.T) {
			// Built directly, the way a value reaches admission without
			// passing the schema.
			r := &requirement.Requirement{
				Slot:             "lights",
				Provider:         requirement.Provider{Name: "Philips Hue"},
				Kind:             requirement.KindAPIKey,
				LANHost:          &requirement.LANHost{Class: requirement.LANClassRFC1918, Label: "Address"},
				DeclaredAPIHosts: hosts,
			}
			res, err := g.Resolve(r)
			if !errors.Is(err, ErrLANAddress) {
				t.Errorf("Resolve(hosts %q) = %+v, %v; want ErrLANAddress", hosts, res, err)
			}
		})
	}
	// Without a lanHost seat of its own, a declaration naming the LAN
	// provider with a public host is refused the same way.
	if _, err := g.Resolve(parse(t, apiKeyDoc("Philips Hue", "api.meethue.com"))); !errors.Is(err, ErrLANAddress) {
		t.Errorf("Resolve(Hue with a public host) = %v, want ErrLANAddress", err)
	}
}

// TestResolveOptionMatching: the option whose pinned field keys equal the
// declaration's (as a set) is applied; no match means the default.
//
// conformance: P3-C12.12-12
func TestResolveOptionMatching(t *testing.T) {
	fields := func(keys ...string) []any {
		var out []any
		for _, k := range keys {
			out = append(out, doc{"key": k, "label": k, "type": "secret"})
		}
		return out
	}
	for _, tc := range []struct {
		registry, name string
		keys           []string
		want           string
	}{
		// Shipped GitHub: the default is the personal access token.
		{"shipped", "GitHub", []string{"client_id", "client_secret"}, "oauth-app"},
		{"shipped", "GitHub", []string{"client_secret", "client_id"}, "oauth-app"},
		{"shipped", "GitHub", []string{"token"}, "personal-access-token"},
		{"shipped", "GitHub", []string{"api_key"}, "personal-access-token"},
		{"shipped", "GitHub", []string{"client_id"}, "personal-access-token"},
		// Forge's default is its OAuth app, so a PAT-shaped declaration
		// reaching the PAT option is a match, not the default.
		{"testdata/good", "Forge", []string{"token"}, "pat"},
		{"testdata/good", "Forge", []string{"password"}, "oauth"},
		{"testdata/good", "Forge", []string{"token", "extra"}, "oauth"},
	} {
		t.Run(tc.registry+"/"+strings.Join(tc.keys, ","), func(t *testing.T) {
			g := shipped(t)
			if tc.registry != "shipped" {
				g = testRegistry(t, tc.registry)
			}
			d := apiKeyDoc(tc.name, "api.evil.example")
			d["fields"] = fields(tc.keys...)
			d["request"] = doc{"headerTemplate": doc{"X-Key": "{{" + tc.keys[0] + "}}"}}
			res, err := g.Resolve(parse(t, d))
			if err != nil || !res.Borrowed {
				t.Fatalf("Resolve = %+v, %v; want a borrow", res, err)
			}
			if res.OptionID != tc.want {
				t.Errorf("OptionID = %q, want %q", res.OptionID, tc.want)
			}
			if got := res.Requirement.Canonical(); got != pinnedCanonical(t, g, res.EntryID, tc.want, "data") {
				t.Errorf("resolved = %s, want option %s applied whole", got, tc.want)
			}
		})
	}
}

// TestResolveConflict: triggers that hit two entries are refused, never
// resolved.
func TestResolveConflict(t *testing.T) {
	g := shipped(t)
	for name, d := range map[string]doc{
		"name A, host B":         apiKeyDoc("Coinbase", "api.exchange.coinbase.com"),
		"hosts of two entries":   apiKeyDoc("Acme", "api.github.com", "api.spotify.com"),
		"name, host and a third": apiKeyDoc("GitHub", "api.github.com", "api.nasa.gov"),
	} {
		t.Run(name, func(t *testing.T) {
			res, err := g.Resolve(parse(t, d))
			if !errors.Is(err, ErrConflict) || res.Requirement != nil {
				t.Errorf("Resolve = %+v, %v; want ErrConflict and nothing resolved", res, err)
			}
		})
	}
}

// TestResolveUserLayer: a registry entry may synthesize a userLayer; the
// resolved requirement keeps it, and it passes Parse with AllowUserLayer.
//
// conformance: P3-C12.10-01
func TestResolveUserLayer(t *testing.T) {
	g := testRegistry(t, "testdata/good")
	res := borrowed(t, g, parse(t, apiKeyDoc("orgsuite", "api.evil.example")), "orgsuite")
	ul := res.Requirement.UserLayer
	if ul == nil || ul.Kind != requirement.KindOAuth2AuthCode || !slices.Equal(ul.DeclaredAPIHosts, []string{"users.orgsuite.example"}) {
		t.Fatalf("UserLayer = %+v, want the entry's", ul)
	}
	if _, vs := requirement.Parse([]byte(res.Requirement.Canonical()), requirement.Options{AllowUserLayer: true}); len(vs) > 0 {
		t.Errorf("resolved requirement does not parse: %v", vs)
	}
	if _, vs := requirement.Parse([]byte(res.Requirement.Canonical()), requirement.Options{}); len(vs) == 0 {
		t.Errorf("the synthesized userLayer parsed on a non-registry channel")
	}
}

// TestResolveOption: the user's pick among an entry's alternative flows
// resolves like a borrow, through the same validation.
func TestResolveOption(t *testing.T) {
	g := shipped(t)
	r := parse(t, apiKeyDoc("GitHub", "api.github.com"))
	res, err := g.ResolveOption(r, "oauth-app")
	if err != nil || !res.Borrowed || res.OptionID != "oauth-app" || res.Requirement.Kind != requirement.KindOAuth2AuthCode {
		t.Errorf("ResolveOption(oauth-app) = %+v, %v", res, err)
	}
	if _, err := g.ResolveOption(r, "ssh-key"); !errors.Is(err, ErrNoEntry) {
		t.Errorf("ResolveOption(unknown option) = %v, want ErrNoEntry", err)
	}
	if _, err := g.ResolveOption(parse(t, apiKeyDoc("Acme", "api.acme.example")), "oauth-app"); !errors.Is(err, ErrNoEntry) {
		t.Errorf("ResolveOption(no entry) = %v, want ErrNoEntry", err)
	}
}

// TestResolveFixedPoint: a borrowed requirement resolves to itself, so a
// stored borrowed row changes on re-resolution only when a pin changed.
func TestResolveFixedPoint(t *testing.T) {
	g := shipped(t)
	for _, e := range g.Entries() {
		for _, o := range e.Options {
			t.Run(e.ID+"/"+o.ID, func(t *testing.T) {
				first, err := g.ResolveOption(parse(t, apiKeyDoc(e.DisplayName, "api.evil.example")), o.ID)
				if err != nil {
					if e.LANHost == nil {
						t.Fatalf("ResolveOption = %v", err)
					}
					return // a LAN entry refuses the public host, as it must
				}
				again, err := g.Resolve(first.Requirement)
				if err != nil || again.OptionID != o.ID || again.Requirement.Canonical() != first.Requirement.Canonical() {
					t.Errorf("Resolve(resolved) = %+v, %v; want the same requirement", again, err)
				}
			})
		}
	}
}

// TestResolveResultIsIndependent: changing a resolved requirement changes
// nothing in the registry.
func TestResolveResultIsIndependent(t *testing.T) {
	g := shipped(t)
	r := parse(t, apiKeyDoc("Coinbase Exchange", "api.exchange.coinbase.com"))
	first := borrowed(t, g, r, "coinbase-exchange")
	want := first.Requirement.Canonical()
	first.Requirement.DeclaredAPIHosts[0] = "evil.example"
	first.Requirement.Fields[0].Key = "evil"
	first.Requirement.Request.HeaderTemplate["CB-ACCESS-KEY"] = "{{evil}}"
	first.Requirement.Registration.Instructions[0] = "Evil."
	if got := borrowed(t, g, r, "coinbase-exchange").Requirement.Canonical(); got != want {
		t.Errorf("second Resolve = %s, want %s", got, want)
	}
}
