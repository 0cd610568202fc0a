package requirement

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseBase(t *testing.T) {
	r := checkAccepted(t, baseDoc, func(doc) {}, Options{})
	want := &Requirement{
		Slot:     "weather",
		Provider: Provider{Name: "OpenWeather", HomepageURL: "https://openweathermap.org", DocsURL: "https://openweathermap.org/api"},
		Kind:     KindAPIKey,
		Fields: []Field{{
			Key: "api_key", Label: "API key", Type: FieldSecret, Description: "Your OpenWeather API key.",
			Placeholder: "your API key", Required: ptr(true),
		}},
		Registration: Registration{
			ConsoleURL:   "https://home.openweathermap.org/api_keys",
			Instructions: []string{"Sign in to OpenWeather.", "Open API keys and create a key."},
		},
		Request:          Request{QueryTemplate: map[string]string{"appid": "{{api_key}}"}},
		DeclaredAPIHosts: []string{"api.openweathermap.org"},
		TestRequest:      &TestRequest{Method: "GET", PathAndQuery: "/data/2.5/weather?q=London"},
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("Parse(base) = %#v, want %#v", r, want)
	}
}

func urlOfLen(n int) string {
	const prefix = "https://example.com/"
	return prefix + strings.Repeat("a", n-len(prefix))
}

func hostOfLen(n int) string {
	var labels []string
	for n > 0 {
		l := min(63, n)
		if n-l == 1 { // never leave a one-character remainder for the dot alone
			l--
		}
		labels = append(labels, strings.Repeat("a", l))
		n -= l
		if n > 0 {
			n-- // the dot
		}
	}
	return strings.Join(labels, ".")
}

func list[T any](n int, f func(i int) T) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func fieldDoc(i int) any {
	return doc{"key": fmt.Sprintf("f%d", i), "label": "Field", "type": "text"}
}

// TestParseBounds checks every requirement bound at its edge: the maximum is
// accepted and one more is refused. Lengths count UTF-16 code units.
//
// conformance: P3-C12.2-05, P3-C12.5-02, P3-C12.5-03, P3-C12.5-04, P3-C12.5-06, P3-C12.5-07, P3-C12.5-08, P3-C12.5-09, P3-C12.5-10, P3-C12.5-11, P3-C12.5-12, P3-C12.5-13, P3-C12.5-14, P3-C12.5-15, P3-C12.5-16, P3-C12.5-17, P3-C12.5-18, P3-C12.5-25, P3-C12.5-26, P3-C12.5-27, P3-C12.5-28, P3-C12.5-30, P3-C12.5-31
func TestParseBounds(t *testing.T) {
	tests := []struct {
		name  string
		base  func() doc
		ok    func(doc) // the edge that is accepted (nil: none)
		bad   func(doc) // the edge that is refused
		path  string
		rule  string
		check func(*testing.T, *Requirement)
	}{
		{name: "slot one char", ok: set("slot", "a"), bad: set("slot", ""), path: "slot", rule: RuleSlotPattern},
		{name: "slot 40 chars", ok: set("slot", strings.Repeat("a", 40)), bad: set("slot", strings.Repeat("a", 41)), path: "slot", rule: RuleSlotPattern},
		{name: "slot uppercase", ok: set("slot", "a-9"), bad: set("slot", "Spotify"), path: "slot", rule: RuleSlotPattern},
		{name: "slot leading dash", bad: set("slot", "-a"), path: "slot", rule: RuleSlotPattern},
		{name: "slot underscore", bad: set("slot", "a_b"), path: "slot", rule: RuleSlotPattern},
		{name: "slot missing", bad: del("slot"), path: "slot", rule: RuleKeyMissing},
		{name: "slot not a string", bad: set("slot", 7), path: "slot", rule: RuleTypeMismatch},

		{name: "provider name 120", ok: set("provider.name", strings.Repeat("n", 120)), bad: set("provider.name", strings.Repeat("n", 121)), path: "provider.name", rule: RuleStringTooLong},
		{name: "provider name empty", bad: set("provider.name", ""), path: "provider.name", rule: RuleStringEmpty},
		{name: "provider name missing", bad: del("provider.name"), path: "provider.name", rule: RuleKeyMissing},
		{name: "provider missing", bad: del("provider"), path: "provider", rule: RuleKeyMissing},
		{name: "provider not an object", bad: set("provider", "Spotify"), path: "provider", rule: RuleTypeMismatch},
		{name: "homepageUrl 300", ok: set("provider.homepageUrl", urlOfLen(300)), bad: set("provider.homepageUrl", urlOfLen(301)), path: "provider.homepageUrl", rule: RuleStringTooLong},
		{name: "homepageUrl http", bad: set("provider.homepageUrl", "http://openweathermap.org"), path: "provider.homepageUrl", rule: RuleURLScheme},
		{name: "docsUrl 300", ok: set("provider.docsUrl", urlOfLen(300)), bad: set("provider.docsUrl", urlOfLen(301)), path: "provider.docsUrl", rule: RuleStringTooLong},
		{name: "docsUrl http", bad: set("provider.docsUrl", "http://openweathermap.org/api"), path: "provider.docsUrl", rule: RuleURLScheme},
		{name: "urls optional", ok: all(del("provider.homepageUrl"), del("provider.docsUrl")), bad: set("provider.docsUrl", ""), path: "provider.docsUrl", rule: RuleStringEmpty},

		{name: "fields 8", ok: withFields(list(8, fieldDoc)), bad: withFields(list(9, fieldDoc)), path: "fields", rule: RuleArrayTooLong},
		{name: "fields 1", ok: withFields(list(1, fieldDoc)), bad: withFields([]any{}), path: "fields", rule: RuleArrayTooShort},
		{name: "fields not an array", bad: set("fields", doc{}), path: "fields", rule: RuleTypeMismatch},
		{name: "field key 40", ok: withFieldKey(strings.Repeat("k", 40)), bad: withFieldKey(strings.Repeat("k", 41)), path: "fields[0].key", rule: RuleFieldKeyPattern},
		{name: "field key charset", ok: withFieldKey("a_0"), bad: withFieldKey("Api-Key"), path: "fields[0].key", rule: RuleFieldKeyPattern},
		{name: "field key empty", bad: withFieldKey(""), path: "fields[0].key", rule: RuleFieldKeyPattern},
		{name: "field key aliasing the slot state", ok: withFieldKey("a_connection"), bad: withFieldKey("_connection"), path: "fields[0].key", rule: RuleFieldKeyReserved},
		{name: "field key duplicate", bad: withFields([]any{fieldDoc(1), fieldDoc(1)}), path: "fields[1].key", rule: RuleFieldKeyDuplicate},
		{name: "field label 80", ok: field(0, "label", strings.Repeat("l", 80)), bad: field(0, "label", strings.Repeat("l", 81)), path: "fields[0].label", rule: RuleStringTooLong},
		{name: "field label 80 characters not bytes", ok: field(0, "label", strings.Repeat("é", 80)), bad: field(0, "label", strings.Repeat("é", 81)), path: "fields[0].label", rule: RuleStringTooLong},
		// Lengths count UTF-16 code units, as the spec's TypeScript schema
		// and the template lint count them: a character outside the BMP is
		// two, so 79 letters and an emoji are 81, over the bound.
		{name: "field label 80 UTF-16 units", ok: field(0, "label", strings.Repeat("l", 78)+"\U0001F511"), bad: field(0, "label", strings.Repeat("l", 79)+"\U0001F511"), path: "fields[0].label", rule: RuleStringTooLong},
		{name: "instruction 300 UTF-16 units", ok: set("registration.instructions", []any{strings.Repeat("s", 298) + "\U0001F511"}), bad: set("registration.instructions", []any{strings.Repeat("s", 299) + "\U0001F511"}), path: "registration.instructions[0]", rule: RuleStringTooLong},
		{name: "field label empty", bad: field(0, "label", ""), path: "fields[0].label", rule: RuleStringEmpty},
		{name: "field label missing", bad: func(d doc) { delete(d["fields"].([]any)[0].(doc), "label") }, path: "fields[0].label", rule: RuleKeyMissing},
		{name: "field type", ok: field(0, "type", "url"), bad: field(0, "type", "file"), path: "fields[0].type", rule: RuleFieldType},
		{name: "field type password", ok: field(0, "type", "password"), bad: field(0, "type", "Secret"), path: "fields[0].type", rule: RuleFieldType},
		{name: "field description 200", ok: field(0, "description", strings.Repeat("d", 200)), bad: field(0, "description", strings.Repeat("d", 201)), path: "fields[0].description", rule: RuleStringTooLong},
		{name: "field placeholder 60", ok: field(0, "placeholder", strings.Repeat("p", 60)), bad: field(0, "placeholder", strings.Repeat("p", 61)), path: "fields[0].placeholder", rule: RuleStringTooLong},
		{
			name: "field required optional",
			ok:   func(d doc) { delete(d["fields"].([]any)[0].(doc), "required") },
			bad:  field(0, "required", "yes"), path: "fields[0].required", rule: RuleTypeMismatch,
			check: func(t *testing.T, r *Requirement) {
				if r.Fields[0].Required != nil {
					t.Errorf("Required = %v, want nil (absent stays absent)", *r.Fields[0].Required)
				}
			},
		},

		{name: "consoleUrl 300", ok: set("registration.consoleUrl", urlOfLen(300)), bad: set("registration.consoleUrl", urlOfLen(301)), path: "registration.consoleUrl", rule: RuleStringTooLong},
		{name: "consoleUrl http", bad: set("registration.consoleUrl", "http://home.openweathermap.org/api_keys"), path: "registration.consoleUrl", rule: RuleURLScheme},
		{name: "instructions 10", ok: set("registration.instructions", list(10, func(int) string { return "Step." })), bad: set("registration.instructions", list(11, func(int) string { return "Step." })), path: "registration.instructions", rule: RuleArrayTooLong},
		{name: "instruction 300", ok: set("registration.instructions", []any{strings.Repeat("s", 300)}), bad: set("registration.instructions", []any{"ok", strings.Repeat("s", 301)}), path: "registration.instructions[1]", rule: RuleStringTooLong},
		{name: "instruction empty", bad: set("registration.instructions", []any{""}), path: "registration.instructions[0]", rule: RuleStringEmpty},
		{name: "instruction not a string", bad: set("registration.instructions", []any{1}), path: "registration.instructions[0]", rule: RuleTypeMismatch},

		{name: "endpoint 300", base: oauthDoc, ok: set("endpoints.token", urlOfLen(300)), bad: set("endpoints.token", urlOfLen(301)), path: "endpoints.token", rule: RuleStringTooLong},
		{name: "token endpoint http", base: oauthDoc, bad: set("endpoints.token", "http://accounts.spotify.com/api/token"), path: "endpoints.token", rule: RuleURLScheme},
		{name: "authorize endpoint http", base: oauthDoc, bad: set("endpoints.authorize", "http://accounts.spotify.com/authorize"), path: "endpoints.authorize", rule: RuleURLScheme},
		{name: "refresh endpoint http", base: oauthDoc, ok: set("endpoints.refresh", "https://accounts.spotify.com/api/token"), bad: set("endpoints.refresh", "http://accounts.spotify.com/api/token"), path: "endpoints.refresh", rule: RuleURLScheme},
		{name: "revoke endpoint http", base: oauthDoc, ok: set("endpoints.revoke", "https://accounts.spotify.com/revoke"), bad: set("endpoints.revoke", "ftp://accounts.spotify.com/revoke"), path: "endpoints.revoke", rule: RuleURLScheme},

		{name: "scopes 64", base: oauthDoc, ok: set("scopes", list(64, func(i int) string { return fmt.Sprintf("s%d", i) })), bad: set("scopes", list(65, func(i int) string { return fmt.Sprintf("s%d", i) })), path: "scopes", rule: RuleArrayTooLong},
		{name: "scope 200", base: oauthDoc, ok: set("scopes", []any{strings.Repeat("s", 200)}), bad: set("scopes", []any{strings.Repeat("s", 201)}), path: "scopes[0]", rule: RuleStringTooLong},
		{name: "scope empty", base: oauthDoc, bad: set("scopes", []any{""}), path: "scopes[0]", rule: RuleStringEmpty},
		{name: "scope charset", base: oauthDoc, ok: set("scopes", []any{"https://www.googleapis.com/auth/drive.readonly", "repo:status", "read:org"}), bad: set("scopes", []any{"read write"}), path: "scopes[0]", rule: RuleScopeCharset},
		{name: "scope quote", base: oauthDoc, bad: set("scopes", []any{`a"b`}), path: "scopes[0]", rule: RuleScopeCharset},
		{name: "scope duplicate", base: oauthDoc, bad: set("scopes", []any{"a", "b", "a"}), path: "scopes[2]", rule: RuleScopeDuplicate},

		{name: "authorizeParams 16", base: oauthDoc, ok: set("authorizeParams", paramsDoc(16)), bad: set("authorizeParams", paramsDoc(17)), path: "authorizeParams", rule: RuleObjectTooLarge},
		{name: "authorizeParams value 300", base: oauthDoc, ok: set("authorizeParams", doc{"prompt": strings.Repeat("v", 300)}), bad: set("authorizeParams", doc{"prompt": strings.Repeat("v", 301)}), path: "authorizeParams.prompt", rule: RuleStringTooLong},
		{name: "authorizeParams value type", base: oauthDoc, bad: set("authorizeParams", doc{"prompt": true}), path: "authorizeParams.prompt", rule: RuleTypeMismatch},
		{name: "authorizeParams name charset", base: oauthDoc, ok: set("authorizeParams", doc{"a.b[0]-c_d": "x"}), bad: set("authorizeParams", doc{"a&b": "x"}), path: "authorizeParams.#0", rule: RuleAuthorizeParamName},
		{name: "authorizeParams not an object", base: oauthDoc, bad: set("authorizeParams", []any{"a"}), path: "authorizeParams", rule: RuleTypeMismatch},

		{name: "lanHost class", base: lanDoc, ok: set("lanHost.class", "rfc1918-ipv4-literal"), bad: set("lanHost.class", "mdns"), path: "lanHost.class", rule: RuleLANHostClass},
		{name: "lanHost label 80", base: lanDoc, ok: set("lanHost.label", strings.Repeat("l", 80)), bad: set("lanHost.label", strings.Repeat("l", 81)), path: "lanHost.label", rule: RuleStringTooLong},
		{name: "lanHost label missing", base: lanDoc, bad: del("lanHost.label"), path: "lanHost.label", rule: RuleKeyMissing},

		{name: "hosts 32", ok: set("declaredApiHosts", list(32, func(i int) string { return fmt.Sprintf("h%d.example.com", i) })), bad: set("declaredApiHosts", list(33, func(i int) string { return fmt.Sprintf("h%d.example.com", i) })), path: "declaredApiHosts", rule: RuleArrayTooLong},
		{name: "host 253", ok: set("declaredApiHosts", []any{hostOfLen(253)}), bad: set("declaredApiHosts", []any{hostOfLen(254)}), path: "declaredApiHosts[0]", rule: RuleHostTooLong},
		{name: "host with scheme", bad: set("declaredApiHosts", []any{"https://api.x.com"}), path: "declaredApiHosts[0]", rule: RuleHostScheme},
		{name: "host with port", bad: set("declaredApiHosts", []any{"api.x.com:443"}), path: "declaredApiHosts[0]", rule: RuleHostPort},
		{name: "host with path", bad: set("declaredApiHosts", []any{"api.x.com/v1"}), path: "declaredApiHosts[0]", rule: RuleHostPath},
		{name: "host with userinfo", bad: set("declaredApiHosts", []any{"user@api.x.com"}), path: "declaredApiHosts[0]", rule: RuleHostUserinfo},
		{name: "host with empty userinfo", bad: set("declaredApiHosts", []any{"@api.x.com"}), path: "declaredApiHosts[0]", rule: RuleHostUserinfo},
		{name: "host with trailing dot", bad: set("declaredApiHosts", []any{"api.x.com."}), path: "declaredApiHosts[0]", rule: RuleHostTrailingDot},
		{name: "host duplicate after normalizing", ok: set("declaredApiHosts", []any{"api.x.com", "x.com"}), bad: set("declaredApiHosts", []any{"api.x.com", "API.X.com"}), path: "declaredApiHosts[1]", rule: RuleHostDuplicate},

		{name: "testRequest method", ok: set("testRequest.method", "GET"), bad: set("testRequest.method", "POST"), path: "testRequest.method", rule: RuleTestRequestMethod},
		{name: "testRequest method case", bad: set("testRequest.method", "get"), path: "testRequest.method", rule: RuleTestRequestMethod},
		{name: "testRequest path 200", ok: set("testRequest.pathAndQuery", "/"+strings.Repeat("p", 199)), bad: set("testRequest.pathAndQuery", "/"+strings.Repeat("p", 200)), path: "testRequest.pathAndQuery", rule: RuleStringTooLong},
		{name: "testRequest leading slash", ok: set("testRequest.pathAndQuery", "/"), bad: set("testRequest.pathAndQuery", "v1/me"), path: "testRequest.pathAndQuery", rule: RuleTestRequestPath},
		{name: "testRequest double slash", bad: set("testRequest.pathAndQuery", "//evil.example/x"), path: "testRequest.pathAndQuery", rule: RuleTestRequestPath},
		{name: "testRequest fragment", bad: set("testRequest.pathAndQuery", "/v1/me#x"), path: "testRequest.pathAndQuery", rule: RuleTestRequestPath},
		{name: "testRequest backslash", bad: set("testRequest.pathAndQuery", `/v1\me`), path: "testRequest.pathAndQuery", rule: RuleTestRequestPath},
		{name: "testRequest control", bad: set("testRequest.pathAndQuery", "/v1/me\r\nX: y"), path: "testRequest.pathAndQuery", rule: RuleTestRequestPath},
		{name: "testRequest space", bad: set("testRequest.pathAndQuery", "/v1/a b"), path: "testRequest.pathAndQuery", rule: RuleTestRequestPath},
		{name: "testRequest bad escape", ok: set("testRequest.pathAndQuery", "/v1/a%20b?q=%C3%A9"), bad: set("testRequest.pathAndQuery", "/v1/a%zz"), path: "testRequest.pathAndQuery", rule: RuleTestRequestPath},
		{name: "testRequest missing method", bad: del("testRequest.method"), path: "testRequest.method", rule: RuleKeyMissing},

		{name: "pkce type", base: oauthDoc, ok: set("pkce", false), bad: set("pkce", "true"), path: "pkce", rule: RuleTypeMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.base
			if base == nil {
				base = baseDoc
			}
			if tc.ok != nil {
				r := checkAccepted(t, base, tc.ok, Options{})
				if tc.check != nil {
					tc.check(t, r)
				}
			}
			checkRefused(t, base, tc.bad, Options{}, tc.path, tc.rule)
		})
	}
}

func paramsDoc(n int) doc {
	d := doc{}
	for i := range n {
		d[fmt.Sprintf("p%d", i)] = "v"
	}
	return d
}

// lanDoc returns a valid pre-collection LAN requirement (a Hue bridge).
func lanDoc() doc {
	return doc{
		"slot":     "hue",
		"provider": doc{"name": "Philips Hue"},
		"kind":     "api_key",
		"fields":   []any{doc{"key": "username", "label": "Bridge username", "type": "secret"}},
		"request":  doc{"headerTemplate": doc{"hue-application-key": "{{username}}"}},
		"lanHost":  doc{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
	}
}

// TestParseUnknownKeys refuses an unknown key at every level, and the
// registry-only seats as unknown keys.
//
// conformance: P3-C12.5-01, P3-C12.12-13, P3-C12.12-33
func TestParseUnknownKeys(t *testing.T) {
	tests := []struct {
		name string
		base func() doc
		mut  func(doc)
		path string
	}{
		{"top level", baseDoc, set("extra", 1), "extra"},
		{"top level v", baseDoc, set("v", 1), "v"},
		{"provider", baseDoc, set("provider.logoUrl", "https://x.example/l.png"), "provider.logoUrl"},
		{"fields[i]", baseDoc, field(0, "default", "x"), "fields[0].default"},
		{"registration", baseDoc, set("registration.videoUrl", "https://x.example"), "registration.videoUrl"},
		{"endpoints", oauthDoc, set("endpoints.device", "https://accounts.spotify.com/device"), "endpoints.device"},
		{"request", baseDoc, set("request.bodyTemplate", doc{}), "request.bodyTemplate"},
		{"lanHost", lanDoc, set("lanHost.address", "192.168.1.2"), "lanHost.address"},
		{"testRequest", baseDoc, set("testRequest.headers", doc{}), "testRequest.headers"},
		{"pairing seat", lanDoc, set("pairing", doc{"family": "exchange"}), "pairing"},
		{"webRegistration seat", oauthDoc, set("webRegistration", doc{"instructions": []any{"x"}}), "webRegistration"},
		{"webRedirectPosture seat", oauthDoc, set("webRedirectPosture", "origin-callback"), "webRedirectPosture"},
		{"browserCallable seat", baseDoc, set("browserCallable", true), "browserCallable"},
		{"authOptions seat", baseDoc, set("authOptions", []any{}), "authOptions"},
		{"aliases seat", baseDoc, set("aliases", []any{"OWM"}), "aliases"},
		{"unsafe key name shown by position", baseDoc, set("provider.sk_live_4eC39HqLyjWDarjtT1zdp7dc", 1), "provider.#3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, tc.base, tc.mut, Options{}, tc.path, RuleKeyUnknown)
		})
	}
	t.Run("userLayer", func(t *testing.T) {
		checkRefused(t, registryDoc, set("userLayer.slot", "x"), Options{AllowUserLayer: true}, "userLayer.slot", RuleKeyUnknown)
		checkRefused(t, registryDoc, set("userLayer.lanHost", doc{"class": "rfc1918-ipv4-literal", "label": "x"}), Options{AllowUserLayer: true}, "userLayer.lanHost", RuleKeyUnknown)
		checkRefused(t, registryDoc, set("userLayer.userLayer", doc{}), Options{AllowUserLayer: true}, "userLayer.userLayer", RuleKeyUnknown)
		checkRefused(t, registryDoc, set("userLayer.request", doc{}), Options{AllowUserLayer: true}, "userLayer.request", RuleKeyUnknown)
		checkRefused(t, registryDoc, func(d doc) { d["userLayer"].(doc)["fields"].([]any)[0].(doc)["x"] = 1 }, Options{AllowUserLayer: true}, "userLayer.fields[0].x", RuleKeyUnknown)
	})
}

// TestParseJSONStrictness: the top level is one object, duplicate keys
// anywhere are refused, and the raw input is bounded.
//
// conformance: P3-C12.5-01
func TestParseJSONStrictness(t *testing.T) {
	valid := string(encode(t, baseDoc()))
	tests := []struct {
		name string
		raw  string
		path string
		rule string
	}{
		{"array", `[]`, "$", RuleTypeMismatch},
		{"string", `"x"`, "$", RuleTypeMismatch},
		{"null", `null`, "$", RuleTypeMismatch},
		{"empty", ``, "$", RuleJSONSyntax},
		{"truncated", valid[:len(valid)-1], "$", RuleJSONSyntax},
		{"trailing data", valid + `{}`, "$", RuleJSONSyntax},
		{"trailing comma", `{"slot":"a",}`, "$", RuleJSONSyntax},
		{"comment", `{"slot":"a"/*x*/}`, "$", RuleJSONSyntax},
		{"single quotes", `{'slot':'a'}`, "$", RuleJSONSyntax},
		{"bom", "\uFEFF" + valid, "$", RuleJSONSyntax},
		{"invalid utf-8", `{"slot":"a` + "\xff" + `"}`, "$", RuleJSONSyntax},
		{"lone surrogate", `{"slot":"\ud800"}`, "$", RuleJSONSyntax},
		{"raw control char", "{\"slot\":\"a\tb\"}", "$", RuleJSONSyntax},
		{"leading zero", `{"slot":01}`, "$", RuleJSONSyntax},
		{"NaN", `{"slot":NaN}`, "$", RuleJSONSyntax},
		{"duplicate top-level key", strings.Replace(valid, `"kind":"api_key"`, `"kind":"api_key","kind":"none"`, 1), "kind", RuleJSONDuplicateKey},
		{"duplicate nested key", strings.Replace(valid, `"name":"OpenWeather"`, `"name":"OpenWeather","name":"Spotify"`, 1), "provider.name", RuleJSONDuplicateKey},
		{"duplicate key in a field", strings.Replace(valid, `"type":"secret"`, `"type":"secret","type":"text"`, 1), "fields[0].type", RuleJSONDuplicateKey},
		{"duplicate template name", strings.Replace(valid, `"appid":"{{api_key}}"`, `"appid":"{{api_key}}","appid":"x"`, 1), "request.queryTemplate.appid", RuleJSONDuplicateKey},
		{"too large", valid[:len(valid)-1] + `,"x":"` + strings.Repeat(" ", MaxSize) + `"}`, "$", RuleJSONTooLarge},
		{"too deep", strings.Repeat("[", 200) + strings.Repeat("]", 200), "$", RuleJSONSyntax},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, vs := Parse([]byte(tc.raw), Options{})
			if r != nil || !hasViolation(vs, tc.path, tc.rule) {
				t.Errorf("Parse(%.60q) = %v,\n%swant %s at %s", tc.raw, r, violationList(vs), tc.rule, tc.path)
			}
		})
	}
	t.Run("escaped text decodes", func(t *testing.T) {
		raw := strings.Replace(valid, `"OpenWeather"`, `"Open\u0057eather"`, 1)
		r := mustParse(t, []byte(raw), Options{})
		if r.Provider.Name != "OpenWeather" {
			t.Errorf("Provider.Name = %q, want OpenWeather", r.Provider.Name)
		}
	})
	t.Run("insignificant whitespace", func(t *testing.T) {
		raw := " \n\t{ " + strings.ReplaceAll(valid[1:], ",", " ,\r\n ")
		mustParse(t, []byte(raw), Options{})
	})
}

// TestParseReportsEveryViolation: one parse names every problem, sorted,
// each with a path and a rule.
//
// conformance: P3-C12.5-01
func TestParseReportsEveryViolation(t *testing.T) {
	d := baseDoc()
	d["slot"] = "Bad Slot"
	d["kind"] = "oauth1"
	d["extra"] = true
	d["provider"].(doc)["name"] = "ѕpotify"
	fields := list(10, fieldDoc)
	fields[2].(doc)["key"] = "Bad-Key"
	fields[9].(doc)["type"] = "file"
	d["fields"] = fields
	d["declaredApiHosts"] = []any{"127.1", "ok.example.com", "https://x.example"}
	delete(d, "request")
	d["testRequest"].(doc)["method"] = "POST"
	_, vs := Parse(encode(t, d), Options{})
	want := []struct{ path, rule string }{
		{"declaredApiHosts[0]", RuleHostNumeric},
		{"declaredApiHosts[2]", RuleHostScheme},
		{"extra", RuleKeyUnknown},
		{"fields", RuleArrayTooLong},
		{"fields[2].key", RuleFieldKeyPattern},
		{"fields[9].type", RuleFieldType},
		{"kind", RuleKindUnknown},
		{"provider.name", RuleTextASCII},
		{"slot", RuleSlotPattern},
		{"testRequest.method", RuleTestRequestMethod},
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.Path+" "+v.Rule)
		if v.Path == "" || v.Rule == "" || v.Message == "" {
			t.Errorf("violation %+v has an empty part", v)
		}
	}
	var wantS []string
	for _, w := range want {
		wantS = append(wantS, w.path+" "+w.rule)
	}
	if !reflect.DeepEqual(got, wantS) {
		t.Errorf("Parse violations =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantS, "\n"))
	}
	if !slices.IsSortedFunc(vs, func(a, b Violation) int { return comparePaths(a.Path, b.Path) }) {
		t.Errorf("violations not sorted by path")
	}
}

func TestComparePaths(t *testing.T) {
	paths := []string{"fields[10].key", "$", "fields[2].key", "fields", "fields[9]", "a", "fields[2]"}
	slices.SortFunc(paths, comparePaths)
	want := []string{"$", "a", "fields", "fields[2]", "fields[2].key", "fields[9]", "fields[10].key"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("sorted paths = %q, want %q", paths, want)
	}
}

// TestParseURLs holds every URL seat to the host rules of the ceiling.
//
// conformance: P3-C12.5-04, P3-C12.5-13, P3-C12.5-16
func TestParseURLs(t *testing.T) {
	seats := []struct {
		base func() doc
		path string
	}{
		{baseDoc, "provider.homepageUrl"},
		{baseDoc, "provider.docsUrl"},
		{baseDoc, "registration.consoleUrl"},
		{oauthDoc, "endpoints.authorize"},
		{oauthDoc, "endpoints.token"},
		{oauthDoc, "endpoints.refresh"},
		{oauthDoc, "endpoints.revoke"},
	}
	good := []string{
		"https://example.com",
		"https://example.com/",
		"https://api.example.com:8443/v1/token?audience=api",
		"https://xn--bcher-kva.example/x%20y",
	}
	bad := []struct{ url, rule string }{
		{"http://example.com/", RuleURLScheme},
		{"HTTPS://example.com/", RuleURLScheme},
		{"javascript:alert(1)", RuleURLScheme},
		{"//example.com/x", RuleURLScheme},
		{"https://user:pw@example.com/", RuleURLUserinfo},
		{"https://@example.com/", RuleURLUserinfo},
		{"https://127.0.0.1/", RuleURLHost},
		{"https://[::1]/", RuleURLHost},
		{"https://127.1/", RuleURLHost},
		{"https://0x7f.1/", RuleURLHost},
		{"https://2130706433/", RuleURLHost},
		{"https://192.168.1.10/", RuleURLHost},
		{"https:///path", RuleURLHost},
		{"https://exa_mple.com/", RuleURLHost},
		{"https://ex%61mple.com/", RuleURLHost},
		{"https://example.com./", RuleURLHost},
		{"https://Example.com/", RuleURLHostNotNormalized},
		{"https://bücher.example/", RuleURLInvalid},
		{"https://example.com/a b", RuleURLInvalid},
		{`https://example.com\@evil.example/`, RuleURLInvalid},
		{"https://example.com/%zz", RuleURLInvalid},
		{"https://example.com/?a=%zz", RuleURLInvalid},
		{"https://example.com:0/", RuleURLPort},
		{"https://example.com:080/", RuleURLPort},
		{"https://example.com:65536/", RuleURLPort},
		{"https://example.com:/", RuleURLPort},
		{"https://example.com/?api_key=abc", RuleURLCredentialParam},
		{"https://example.com/?Token=x", RuleURLCredentialParam},
	}
	for _, s := range seats {
		for _, u := range good {
			t.Run(s.path+" accepts "+u, func(t *testing.T) {
				checkAccepted(t, s.base, set(s.path, u), Options{})
			})
		}
		for _, b := range bad {
			t.Run(s.path+" refuses "+b.url, func(t *testing.T) {
				checkRefused(t, s.base, set(s.path, b.url), Options{}, s.path, b.rule)
			})
		}
	}
	t.Run("fragment allowed on a display URL", func(t *testing.T) {
		checkAccepted(t, baseDoc, set("provider.docsUrl", "https://openweathermap.org/api#current"), Options{})
	})
	t.Run("fragment refused on an endpoint", func(t *testing.T) {
		checkRefused(t, oauthDoc, set("endpoints.authorize", "https://accounts.spotify.com/authorize#x"), Options{}, "endpoints.authorize", RuleURLFragment)
	})
	t.Run("empty query value allowed", func(t *testing.T) {
		checkAccepted(t, oauthDoc, set("endpoints.authorize", "https://accounts.spotify.com/authorize?key="), Options{})
	})
}

// TestParseAuthorizeParamsReserved refuses every parameter snugd sets
// itself, in any case.
func TestParseAuthorizeParamsReserved(t *testing.T) {
	for _, name := range ReservedAuthorizeParams() {
		for _, spelled := range []string{name, strings.ToUpper(name)} {
			t.Run(spelled, func(t *testing.T) {
				checkRefused(t, oauthDoc, set("authorizeParams", doc{spelled: "x"}), Options{}, "authorizeParams."+spelled, RuleAuthorizeParamReserved)
			})
		}
	}
	t.Run("ordinary parameters", func(t *testing.T) {
		r := checkAccepted(t, oauthDoc, set("authorizeParams", doc{"access_type": "offline", "prompt": "consent", "audience": "https://api.example.com"}), Options{})
		want := map[string]string{"access_type": "offline", "prompt": "consent", "audience": "https://api.example.com"}
		if !reflect.DeepEqual(r.AuthorizeParams, want) {
			t.Errorf("AuthorizeParams = %v, want %v", r.AuthorizeParams, want)
		}
	})
}

// TestParseEmptyContainersNormalize: an empty optional container reads as
// absent, so both spell the same requirement.
func TestParseEmptyContainersNormalize(t *testing.T) {
	plain := checkAccepted(t, oauthDoc, all(del("scopes"), del("authorizeParams")), Options{})
	empty := checkAccepted(t, oauthDoc, all(
		set("scopes", []any{}), set("authorizeParams", doc{}), set("registration", doc{"instructions": []any{}}),
		set("request", doc{"headerTemplate": doc{}}),
	), Options{})
	if !reflect.DeepEqual(plain, empty) {
		t.Errorf("Parse(empty containers) = %#v, want %#v", empty, plain)
	}
	if plain.Canonical() != empty.Canonical() {
		t.Errorf("Canonical differs: %s vs %s", plain.Canonical(), empty.Canonical())
	}
}
