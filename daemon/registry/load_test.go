package registry

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/snug/snugd/daemon/requirement"
)

// brokenCase is a deliberately broken registry under testdata/broken: the
// rule it breaks, and any other rule the same mistake also breaks.
type brokenCase struct {
	dir  string
	rule string
	also []string
}

// checkBroken loads each case and requires the rule it breaks, and nothing
// but that rule and the listed consequences.
func checkBroken(t *testing.T, cases []brokenCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			g, err := load(os.DirFS(filepath.Join("testdata", "broken", tc.dir)))
			if err == nil {
				t.Fatalf("load(%q) = %v, nil; want a %s error", tc.dir, g, tc.rule)
			}
			got := loadRules(err)
			if !slices.Contains(got, tc.rule) {
				t.Fatalf("load(%q) rules = %v, want %s; error: %v", tc.dir, got, tc.rule, err)
			}
			for _, r := range got {
				if r != tc.rule && !slices.Contains(tc.also, r) {
					t.Errorf("load(%q) also broke %s: %v", tc.dir, r, err)
				}
			}
		})
	}
}

// TestLoadShipped loads the registry snugd ships: the daemon refuses to
// start when this fails. Every data file becomes exactly one entry; what
// each entry must hold beyond Load's rules is the audit's (audit_test.go).
func TestLoadShipped(t *testing.T) {
	g := shipped(t)
	files, err := data.ReadDir("data")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		want = append(want, strings.TrimSuffix(f.Name(), ".json"))
	}
	var ids []string
	for _, e := range g.Entries() {
		ids = append(ids, e.ID)
		if len(e.Sources) == 0 {
			t.Errorf("entry %s cites no source", e.ID)
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("Entries() IDs = %v, want the data files %v", ids, want)
	}
}

// TestShippedEntries checks that each shipped entry pins what its
// provider's documentation says (the source notes cite the pages).
//
// conformance: P3-C12.12-24
func TestShippedEntries(t *testing.T) {
	g := shipped(t)
	type want struct {
		hosts    []string
		kind     requirement.Kind
		header   map[string]string
		query    map[string]string
		family   Family
		lan      bool
		callable *bool
	}
	cases := map[string]want{
		"openweather": {hosts: []string{"api.openweathermap.org"}, kind: requirement.KindAPIKey, query: map[string]string{"appid": "{{api_key}}"}},
		"coingecko":   {hosts: []string{"api.coingecko.com"}, kind: requirement.KindAPIKey, header: map[string]string{"x-cg-demo-api-key": "{{api_key}}"}},
		"nasa":        {hosts: []string{"api.nasa.gov"}, kind: requirement.KindAPIKey, query: map[string]string{"api_key": "{{api_key}}"}},
		"github":      {hosts: []string{"api.github.com", "github.com"}, kind: requirement.KindBearerToken, header: map[string]string{"Authorization": "Bearer {{token}}"}},
		"coinbase-advanced-trade": {hosts: []string{"api.coinbase.com"}, kind: requirement.KindAPIKey,
			header: map[string]string{"Authorization": "Bearer {{cdp_jwt(key_name, private_key)}}"}},
		"coinbase-exchange": {hosts: []string{"api.exchange.coinbase.com"}, kind: requirement.KindAPIKey, header: map[string]string{
			"CB-ACCESS-KEY":        "{{api_key}}",
			"CB-ACCESS-PASSPHRASE": "{{passphrase}}",
			"CB-ACCESS-TIMESTAMP":  "{{request.timestamp}}",
			"CB-ACCESS-SIGN":       "{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}",
		}},
		"spotify":     {hosts: []string{"api.spotify.com", "accounts.spotify.com"}, kind: requirement.KindOAuth2AuthCode, callable: ptr(true)},
		"philips-hue": {kind: requirement.KindAPIKey, header: map[string]string{"hue-application-key": "{{application_key}}"}, family: FamilyExchange, lan: true, callable: ptr(false)},
		// Pairing is not a kind: SimpleFIN's family is registry data over basic_auth.
		"simplefin": {hosts: []string{"bridge.simplefin.org"}, kind: requirement.KindBasicAuth,
			header: map[string]string{"Authorization": "Basic {{base64(access_credentials)}}"}, family: FamilyTokenClaim},
		"sim":    {hosts: []string{"sim.sidecar.invalid"}, kind: requirement.KindLinkedDevice, family: FamilyDeviceLink, callable: ptr(false)},
		"twitch": {hosts: []string{"api.twitch.tv", "id.twitch.tv"}, kind: requirement.KindOAuth2ClientCreds, header: map[string]string{"Client-Id": "{{client_id}}"}},
	}
	for id, w := range cases {
		t.Run(id, func(t *testing.T) {
			e, ok := g.Lookup(id)
			if !ok {
				t.Fatalf("Lookup(%q) = false", id)
			}
			def := e.Options[slices.IndexFunc(e.Options, func(o Option) bool { return o.ID == e.DefaultOption })]
			if !slices.Equal(e.Hosts, w.hosts) && !(len(e.Hosts) == 0 && len(w.hosts) == 0) {
				t.Errorf("Hosts = %v, want %v", e.Hosts, w.hosts)
			}
			if def.Kind != w.kind {
				t.Errorf("default option kind = %s, want %s", def.Kind, w.kind)
			}
			if w.header != nil && !mapsEqual(def.Request.HeaderTemplate, w.header) {
				t.Errorf("headerTemplate = %v, want %v", def.Request.HeaderTemplate, w.header)
			}
			if w.query != nil && !mapsEqual(def.Request.QueryTemplate, w.query) {
				t.Errorf("queryTemplate = %v, want %v", def.Request.QueryTemplate, w.query)
			}
			if (e.LANHost != nil) != w.lan {
				t.Errorf("LANHost = %v, want LAN %v", e.LANHost, w.lan)
			}
			var fam Family
			if e.Pairing != nil {
				fam = e.Pairing.Family
			}
			if fam != w.family {
				t.Errorf("pairing family = %q, want %q", fam, w.family)
			}
			if !equalTri(e.BrowserCallable, w.callable) {
				t.Errorf("BrowserCallable = %v, want %v", e.BrowserCallable, w.callable)
			}
		})
	}

	t.Run("github-oauth-option", func(t *testing.T) {
		e, _ := g.Lookup("github")
		o := e.Options[1]
		if o.ID != "oauth-app" || o.Kind != requirement.KindOAuth2AuthCode || o.PKCE == nil || !*o.PKCE {
			t.Fatalf("github option 1 = %+v, want the oauth-app option with pkce", o)
		}
		if o.Endpoints.Authorize != "https://github.com/login/oauth/authorize" || o.Endpoints.Token != "https://github.com/login/oauth/access_token" {
			t.Errorf("github endpoints = %+v", o.Endpoints)
		}
		if len(e.Scopes) == 0 || e.DesktopRedirect != PostureLoopback || e.WebRedirect != PostureOriginCallback {
			t.Errorf("github scopes %v, desktop %q, web %q: want pinned scopes, loopback, origin-callback", e.Scopes, e.DesktopRedirect, e.WebRedirect)
		}
	})
	t.Run("spotify-public-client", func(t *testing.T) {
		e, _ := g.Lookup("spotify")
		o := e.Options[0]
		if len(o.Fields) != 1 || o.Fields[0].Key != "client_id" || o.PKCE == nil || !*o.PKCE {
			t.Errorf("spotify option = %+v, want a client-id-only PKCE client", o)
		}
		if e.DesktopRedirect != PostureLoopback || e.WebRegistration == nil || len(e.Scopes) == 0 {
			t.Errorf("spotify = %+v, want loopback, web seats and pinned scopes", e)
		}
	})
	t.Run("github-oauth-option-is-a-confidential-client", func(t *testing.T) {
		e, _ := g.Lookup("github")
		o := e.Options[1]
		keys := []string{}
		for _, f := range o.Fields {
			keys = append(keys, f.Key)
		}
		if !slices.Equal(keys, []string{"client_id", "client_secret"}) || o.Endpoints.Revoke != "" {
			t.Errorf("github oauth-app fields %v, revoke %q: want client_id and client_secret, no RFC 7009 endpoint", keys, o.Endpoints.Revoke)
		}
		if !slices.Equal(e.Scopes, []string{"read:user", "notifications"}) {
			t.Errorf("github pinned scopes = %v", e.Scopes)
		}
	})
	t.Run("twitch-client-credentials", func(t *testing.T) {
		e, _ := g.Lookup("twitch")
		if len(e.Options) != 1 {
			t.Fatalf("twitch options = %d, want the one client-credentials option", len(e.Options))
		}
		o := e.Options[0]
		if o.Endpoints.Token != "https://id.twitch.tv/oauth2/token" || o.Endpoints.Revoke != "https://id.twitch.tv/oauth2/revoke" || o.Endpoints.Authorize != "" {
			t.Errorf("twitch endpoints = %+v, want token and revoke on id.twitch.tv and no authorize", o.Endpoints)
		}
		if len(o.Fields) != 2 || o.Fields[1].Key != "client_secret" || o.Fields[1].Type != requirement.FieldSecret {
			t.Errorf("twitch fields = %+v, want client_id and a secret client_secret", o.Fields)
		}
		// A client-credentials entry vouches for no redirect: it never
		// redirects, and the web seats need an OAuth kind with a flow.
		if e.DesktopRedirect != "" || e.WebRedirect != "" || e.WebRegistration != nil {
			t.Errorf("twitch carries redirect seats: desktop %q web %q", e.DesktopRedirect, e.WebRedirect)
		}
		if e.Scopes != nil {
			t.Errorf("twitch pins scopes %v; an app access token needs none", e.Scopes)
		}
	})
	t.Run("pairing-seats", func(t *testing.T) {
		hue, _ := g.Lookup("philips-hue")
		if x := hue.Pairing.Exchange; x == nil || x.Method != "POST" || x.Path != "/api" || hue.Pairing.Verify.Path != "/api/0/config" {
			t.Errorf("hue pairing = %+v, want the link-button POST /api and the GET /api/0/config probe", hue.Pairing)
		}
		sf, _ := g.Lookup("simplefin")
		if sf.Pairing.AccessPath != "/simplefin" || sf.Pairing.Verify.Method != "GET" {
			t.Errorf("simplefin pairing = %+v, want access path /simplefin and a GET probe", sf.Pairing)
		}
		sim, _ := g.Lookup("sim")
		if sim.Helper == nil || sim.Helper.ID != "sim" || sim.Pairing.HelperID != "sim" || sim.Pairing.Verify.RPC != "verify" {
			t.Errorf("sim = helper %+v pairing %+v, want helper sim, device-link with the verify RPC", sim.Helper, sim.Pairing)
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func equalTri(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// TestLoadBroken loads deliberately broken registries: each breaks one
// rule (and, where noted, what the same mistake also breaks).
func TestLoadBroken(t *testing.T) {
	req := []string{RuleOptionRequirement}
	checkBroken(t, []brokenCase{
		{dir: "json-syntax", rule: RuleJSON},
		{dir: "json-null", rule: RuleJSON},
		{dir: "json-duplicate-key", rule: RuleJSON},
		{dir: "json-trailing", rule: RuleJSON},
		{dir: "json-not-object", rule: RuleJSON},
		{dir: "json-type", rule: RuleJSON},
		{dir: "key-unknown", rule: RuleKeyUnknown},
		{dir: "key-case", rule: RuleKeyUnknown},
		{dir: "key-unknown-nested", rule: RuleOptionRequirement},
		{dir: "key-missing", rule: RuleKeyMissing, also: req},
		{dir: "file-name", rule: RuleID},
		{dir: "file-not-json", rule: RuleFile},
		{dir: "id-pattern", rule: RuleID, also: req},
		{dir: "name-not-ascii", rule: RuleName, also: req},
		{dir: "name-duplicate-in-entry", rule: RuleNameDuplicate},
		{dir: "name-duplicate-across", rule: RuleNameDuplicate},
		{dir: "source-missing", rule: RuleSource},
		{dir: "source-http", rule: RuleSource},
		{dir: "source-date", rule: RuleSource},
		{dir: "text-credential", rule: RuleText},
		{dir: "text-empty-label", rule: RuleKeyMissing},
		{dir: "host-not-normal", rule: RuleHostNotNormal},
		{dir: "host-trailing-dot", rule: RuleHostNotNormal, also: req},
		{dir: "host-ip-literal", rule: RuleHostNotNormal, also: req},
		{dir: "host-duplicate", rule: RuleHostDuplicate, also: req},
		{dir: "host-duplicate-across", rule: RuleHostDuplicate},
		{dir: "host-count-none", rule: RuleHostCount, also: req},
		{dir: "host-count-lan", rule: RuleHostCount},
		{dir: "host-ceiling", rule: RuleHostCeiling},
		{dir: "host-ceiling-lan", rule: RuleOptionRequirement},
		{dir: "host-sidecar", rule: RuleHostSidecar},
		{dir: "option-id", rule: RuleOptionID},
		{dir: "option-id-duplicate", rule: RuleOptionID},
		{dir: "option-default-missing", rule: RuleOptionDefault},
		{dir: "option-default-unknown", rule: RuleOptionDefault},
		{dir: "option-fields", rule: RuleOptionFields},
		{dir: "option-requirement-template", rule: RuleOptionRequirement},
		{dir: "option-requirement-userlayer", rule: RuleOptionRequirement},
		{dir: "option-count", rule: RuleOptionCount},
		{dir: "registration-markup", rule: RuleRegistration, also: req},
		{dir: "pairing-verify-missing", rule: RulePairingVerify},
		{dir: "pairing-verify-method", rule: RulePairingVerify},
		{dir: "pairing-verify-expect", rule: RulePairingVerify},
		{dir: "pairing-verify-device-link", rule: RulePairingVerify},
		{dir: "pairing-access-path-missing", rule: RulePairingSeat},
		{dir: "pairing-access-path-query", rule: RulePairingSeat},
		{dir: "pairing-foreign-seat", rule: RulePairingSeat},
		{dir: "pairing-exchange-missing", rule: RulePairingSeat},
		{dir: "pairing-exchange-not-lan", rule: RulePairingLAN},
		{dir: "pairing-lan-not-exchange", rule: RulePairingLAN},
		{dir: "pairing-device-link-no-helper", rule: RulePairingHelper},
		{dir: "pairing-helper-without-device-link", rule: RulePairingHelper},
		{dir: "pairing-field-unknown", rule: RulePairingField},
		{dir: "pairing-field-several-options", rule: RulePairingField},
		{dir: "desktop-posture", rule: RuleDesktopPosture},
		{dir: "desktop-kind", rule: RuleDesktopKind},
		{dir: "web-registration-invalid", rule: RuleWebRegistration},
		{dir: "helper-executable", rule: RuleHelper},
		{dir: "helper-id", rule: RuleHelper, also: []string{RuleHostSidecar}},
		{dir: "helper-kind", rule: RuleHelperKind},
		{dir: "helper-kind-missing", rule: RuleHelperKind},
		{dir: "helper-host", rule: RuleHelperHost},
	})
}

// TestLoadRefusesOptionIdentitySeats: an auth option carries its own kind,
// fields, endpoints and walkthrough, but no identity seat — and a scope
// pin is entry-level, never per-flow.
//
// conformance: P3-C12.12-11, P3-C12.12-07
func TestLoadRefusesOptionIdentitySeats(t *testing.T) {
	checkBroken(t, []brokenCase{
		{dir: "option-identity-hosts", rule: RuleOptionIdentity},
		{dir: "option-identity-declaredapihosts", rule: RuleOptionIdentity},
		{dir: "option-identity-displayname", rule: RuleOptionIdentity},
		{dir: "option-identity-aliases", rule: RuleOptionIdentity},
		{dir: "option-identity-lanhost", rule: RuleOptionIdentity},
		{dir: "option-identity-provider", rule: RuleOptionIdentity},
		{dir: "option-identity-scopes", rule: RuleOptionIdentity},
	})
}

// TestLoadPairingFamilies: exactly three families exist, each with its
// required verify probe description.
//
// conformance: P3-C12.12-14
func TestLoadPairingFamilies(t *testing.T) {
	checkBroken(t, []brokenCase{{dir: "pairing-family", rule: RulePairingFamily}})
	if got := Families(); !slices.Equal(got, []Family{FamilyExchange, FamilyDeviceLink, FamilyTokenClaim}) {
		t.Errorf("Families() = %v, want exchange, device-link, token-claim", got)
	}
	for _, e := range shipped(t).Entries() {
		if p := e.Pairing; p != nil && (p.Verify.Expect == "" || (p.Verify.Path == "" && p.Verify.RPC == "")) {
			t.Errorf("entry %s pairing verify = %+v, want a probe and what a live counterparty answers", e.ID, p.Verify)
		}
	}
}

// TestLoadWebSeats: webRedirectPosture's sole member is origin-callback;
// the two web seats require each other and an OAuth kind.
//
// conformance: P3-C12.12-29, P3-C12.12-30, P3-C12.12-31, P3-C12.12-32
func TestLoadWebSeats(t *testing.T) {
	checkBroken(t, []brokenCase{
		{dir: "web-posture", rule: RuleWebPosture},
		{dir: "web-posture-without-registration", rule: RuleWebPair},
		{dir: "web-registration-without-posture", rule: RuleWebPair},
		{dir: "web-kind", rule: RuleWebKind},
	})
}

// TestLoadLoopbackNeedsPKCE: pkce false beside a loopback desktop posture
// is refused at load.
//
// conformance: P3-C12.12-28
func TestLoadLoopbackNeedsPKCE(t *testing.T) {
	checkBroken(t, []brokenCase{{dir: "desktop-pkce", rule: RuleDesktopPKCE}})
}

// TestLoadBrowserCallableTriState: true and false are kept, absent stays
// absent, and null (which encoding/json would read as absent) is refused.
//
// conformance: P3-C12.12-25
func TestLoadBrowserCallableTriState(t *testing.T) {
	g := shipped(t)
	for id, want := range map[string]*bool{"spotify": ptr(true), "philips-hue": ptr(false), "openweather": nil} {
		e, _ := g.Lookup(id)
		if !equalTri(e.BrowserCallable, want) {
			t.Errorf("Lookup(%q).BrowserCallable = %v, want %v", id, e.BrowserCallable, want)
		}
	}
	checkBroken(t, []brokenCase{{dir: "json-null", rule: RuleJSON}})
}

func TestLoadEmpty(t *testing.T) {
	_, err := load(fstest.MapFS{})
	if got := loadRules(err); !slices.Equal(got, []string{RuleFile}) {
		t.Errorf("load(empty) rules = %v, want [%s]", got, RuleFile)
	}
}

// TestLoadErrorNamesTheSeat: a LoadError says file, seat and rule.
func TestLoadErrorNamesTheSeat(t *testing.T) {
	_, err := load(os.DirFS("testdata/broken/option-identity-hosts"))
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("load error %v is not a *LoadError", err)
	}
	if le.File != "acme.json" || le.Path != "options[0].hosts" || le.Rule != RuleOptionIdentity {
		t.Errorf("LoadError = %+v, want acme.json options[0].hosts %s", le, RuleOptionIdentity)
	}
	if !strings.Contains(le.Error(), "acme.json") {
		t.Errorf("Error() = %q, want the file named", le.Error())
	}
}

// TestEntriesAreCopies: changing what Entries returns changes nothing in
// the registry.
func TestEntriesAreCopies(t *testing.T) {
	g := shipped(t)
	es := g.Entries()
	for i := range es {
		e := &es[i]
		e.Hosts = append(e.Hosts[:0:0], "evil.example")
		if len(e.Aliases) > 0 {
			e.Aliases[0] = "Evil"
		}
		for j := range e.Options {
			o := &e.Options[j]
			for k := range o.Fields {
				o.Fields[k].Key = "evil"
			}
			for k := range o.Request.HeaderTemplate {
				o.Request.HeaderTemplate[k] = "{{evil}}"
			}
		}
		if e.BrowserCallable != nil {
			*e.BrowserCallable = !*e.BrowserCallable
		}
		if len(e.Registration.Instructions) > 0 {
			e.Registration.Instructions[0] = "Evil"
		}
	}
	fresh := shipped(t).Entries()
	again := g.Entries()
	for i := range fresh {
		if a, b := encodeEntry(t, fresh[i]), encodeEntry(t, again[i]); a != b {
			t.Errorf("entry %s changed after its copy was edited:\n%s\n%s", fresh[i].ID, a, b)
		}
	}
}

// TestShippedTestRequestHost: a test request goes to the first pinned host,
// so an entry that pins several writes its API host first, never the host
// where the user signs in. (Spotify's entry once listed accounts first, and
// its test request asked the sign-in host for /v1/me.)
func TestShippedTestRequestHost(t *testing.T) {
	for _, e := range shipped(t).Entries() {
		if e.TestRequest == nil || len(e.Hosts) < 2 {
			continue
		}
		for _, o := range e.Options {
			if o.Endpoints.Authorize == "" {
				continue
			}
			if u, err := url.Parse(o.Endpoints.Authorize); err == nil && u.Hostname() == e.Hosts[0] {
				t.Errorf("entry %s: the test request would go to %s, the sign-in host; write the API host first", e.ID, e.Hosts[0])
			}
		}
	}
}
