package requirement

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// doc is a requirement under construction in a test: a JSON object as Go
// maps and slices, mutated by each case and then encoded.
type doc = map[string]any

// baseDoc returns a valid api_key requirement every case starts from.
func baseDoc() doc {
	return doc{
		"slot":     "weather",
		"provider": doc{"name": "OpenWeather", "homepageUrl": "https://openweathermap.org", "docsUrl": "https://openweathermap.org/api"},
		"kind":     "api_key",
		"fields": []any{
			doc{"key": "api_key", "label": "API key", "type": "secret", "description": "Your OpenWeather API key.", "placeholder": "your API key", "required": true},
		},
		"registration": doc{
			"consoleUrl":   "https://home.openweathermap.org/api_keys",
			"instructions": []any{"Sign in to OpenWeather.", "Open API keys and create a key."},
		},
		"request":          doc{"queryTemplate": doc{"appid": "{{api_key}}"}},
		"declaredApiHosts": []any{"api.openweathermap.org"},
		"testRequest":      doc{"method": "GET", "pathAndQuery": "/data/2.5/weather?q=London"},
	}
}

// oauthDoc returns a valid oauth2_auth_code requirement.
func oauthDoc() doc {
	return doc{
		"slot":     "spotify",
		"provider": doc{"name": "Spotify"},
		"kind":     "oauth2_auth_code",
		"fields": []any{
			doc{"key": "client_id", "label": "Client ID", "type": "text"},
		},
		"endpoints": doc{
			"authorize": "https://accounts.spotify.com/authorize",
			"token":     "https://accounts.spotify.com/api/token",
		},
		"scopes":           []any{"user-read-private", "playlist-read-private"},
		"authorizeParams":  doc{"show_dialog": "true"},
		"declaredApiHosts": []any{"api.spotify.com"},
	}
}

// encode marshals a test document. encoding/json is fine here: the
// package's own reader is what is under test.
func encode(t testing.TB, d any) []byte {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return b
}

// at walks a dotted path of map keys ("provider.name") and returns the map
// holding the last key, creating maps on the way.
func at(d doc, path string) (doc, string) {
	keys := strings.Split(path, ".")
	m := d
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(doc)
		if !ok {
			next = doc{}
			m[k] = next
		}
		m = next
	}
	return m, keys[len(keys)-1]
}

// set returns a mutation that sets path to v.
func set(path string, v any) func(doc) {
	return func(d doc) {
		m, k := at(d, path)
		m[k] = v
	}
}

// del returns a mutation that deletes path.
func del(path string) func(doc) {
	return func(d doc) {
		m, k := at(d, path)
		delete(m, k)
	}
}

// field returns a mutation of fields[i].
func field(i int, key string, v any) func(doc) {
	return func(d doc) {
		d["fields"].([]any)[i].(doc)[key] = v
	}
}

// withFields returns a mutation that replaces the fields and points the
// base document's query template at the first field's key, so the template
// lint keeps resolving.
func withFields(fields []any) func(doc) {
	return func(d doc) {
		d["fields"] = fields
		if len(fields) > 0 {
			key := fields[0].(doc)["key"].(string)
			d["request"] = doc{"queryTemplate": doc{"appid": "{{" + key + "}}"}}
		}
	}
}

// withFieldKey returns a mutation of fields[0].key that keeps the base
// document's query template pointing at it.
func withFieldKey(key string) func(doc) {
	return func(d doc) {
		d["fields"].([]any)[0].(doc)["key"] = key
		d["request"] = doc{"queryTemplate": doc{"appid": "{{" + key + "}}"}}
	}
}

func all(ms ...func(doc)) func(doc) {
	return func(d doc) {
		for _, m := range ms {
			m(d)
		}
	}
}

func mustParse(t testing.TB, raw []byte, opts Options) *Requirement {
	t.Helper()
	r, vs := Parse(raw, opts)
	if len(vs) > 0 {
		t.Fatalf("Parse(%s) violations:\n%s", raw, violationList(vs))
	}
	return r
}

func violationList(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.String() + "\n")
	}
	return b.String()
}

// hasViolation reports whether vs holds a violation with this path and rule.
func hasViolation(vs []Violation, path, rule string) bool {
	for _, v := range vs {
		if v.Path == path && v.Rule == rule {
			return true
		}
	}
	return false
}

// checkAccepted asserts that a mutation of the base document parses.
func checkAccepted(t *testing.T, base func() doc, mut func(doc), opts Options) *Requirement {
	t.Helper()
	d := base()
	mut(d)
	return mustParse(t, encode(t, d), opts)
}

// checkRefused asserts that a mutation of the base document is refused
// with (at least) the given violation.
func checkRefused(t *testing.T, base func() doc, mut func(doc), opts Options, path, rule string) []Violation {
	t.Helper()
	d := base()
	mut(d)
	raw := encode(t, d)
	r, vs := Parse(raw, opts)
	if r != nil {
		t.Fatalf("Parse(%s) accepted, want %s at %s", raw, rule, path)
	}
	if !hasViolation(vs, path, rule) {
		t.Fatalf("Parse(%s) = \n%swant %s at %s", raw, violationList(vs), rule, path)
	}
	return vs
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ptr[T any](v T) *T { return &v }
