package registry

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/requirement"
)

// mayTriggerNaive is MayTrigger spelled out: a fallback byte, or a key of
// byName or byHost anywhere in raw, case-insensitively.
func mayTriggerNaive(g *Registry, raw []byte) bool {
	if bytes.ContainsAny(raw, `\%`) || bytes.IndexFunc(raw, func(r rune) bool { return r >= 0x80 }) >= 0 {
		return true
	}
	lower := bytes.ToLower(raw)
	for _, keys := range []map[string]*entry{g.byName, g.byHost} {
		for k := range keys {
			if bytes.Contains(lower, []byte(strings.ToLower(k))) {
				return true
			}
		}
	}
	return false
}

// mustText renders d as JSON without escaping '<', '>' or '&'.
func mustText(t testing.TB, d doc) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

// Stored text that triggers an entry, canonical or not (upper case, an
// alias, a JSON escape, a Unicode or percent-encoded host, a host only in
// an endpoint), is never skipped; text that names no entry is; and text
// that would trigger only after a change the parser refuses (a trailing
// dot) is still looked at, the filter knowing nothing of validity.
func TestMayTrigger(t *testing.T) {
	g := shipped(t)
	oauth := func(authorize string) doc {
		d := apiKeyDoc("Acme Music", "api.acme.example")
		d["kind"] = "oauth2_auth_code"
		d["endpoints"] = doc{"authorize": authorize, "token": "https://auth.acme.example/token"}
		return d
	}
	cases := []struct {
		name     string
		text     string
		triggers bool // Parse accepts it and Triggers hits
	}{
		{"display name", mustText(t, apiKeyDoc("Spotify", "api.acme.example")), true},
		{"alias, upper case", mustText(t, apiKeyDoc("SPOTIFY WEB API", "api.acme.example")), true},
		{"pinned host", mustText(t, apiKeyDoc("Acme", "api.spotify.com")), true},
		{"pinned host, upper case", mustText(t, apiKeyDoc("Acme", "API.Spotify.COM")), true},
		{"pinned host, fullwidth", mustText(t, apiKeyDoc("Acme", "ａｐｉ.spotify.com")), true},
		{"pinned host, ideographic dot", mustText(t, apiKeyDoc("Acme", "api。spotify。com")), true},
		{"pinned host, escaped", strings.Replace(mustText(t, apiKeyDoc("Acme", "api.spotify.com")), "api.spotify", `\u0061pi.spotify`, 1), true},
		{"name, escaped", strings.Replace(mustText(t, apiKeyDoc("Spotify", "api.acme.example")), "Spotify", `Sp\u006ftify`, 1), true},
		{"endpoint host", mustText(t, oauth("https://accounts.spotify.com/authorize")), true},
		{"endpoint host, port", mustText(t, oauth("https://accounts.spotify.com:443/authorize")), true},
		{"endpoint host, upper case", mustText(t, oauth("https://ACCOUNTS.SPOTIFY.COM/authorize")), false},
		{"endpoint host, a percent escape after it", mustText(t, oauth("https://accounts.spotify.com/authorize?x=%41")), true},
		{"endpoint host, percent-encoded", mustText(t, oauth("https://%61ccounts.spotify.com/authorize")), false},
		{"pinned host, trailing dot", mustText(t, apiKeyDoc("Acme", "api.spotify.com.")), false},
		{"endpoint host, trailing dot", mustText(t, oauth("https://accounts.spotify.com./authorize")), false},
		{"pinned host, Unicode", mustText(t, apiKeyDoc("Acme", "api.spotify.com\u200b")), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, vs := requirement.Parse([]byte(c.text), requirement.Options{})
			triggers := len(vs) == 0 && g.Triggers(r)
			if triggers != c.triggers {
				t.Fatalf("Parse %v, Triggers %v; the case wants triggers=%v: %s", vs, triggers, c.triggers, c.text)
			}
			if !g.MayTrigger([]byte(c.text)) {
				t.Fatalf("MayTrigger(%s) = false", c.text)
			}
		})
	}
	for _, d := range []doc{apiKeyDoc("Acme Weather", "api.acme.example"), oauth("https://auth.acme.example/authorize")} {
		text := mustText(t, d)
		if g.MayTrigger([]byte(text)) {
			t.Errorf("MayTrigger(%s) = true; a text naming no entry must be skipped", text)
		}
	}
}

// Every key of the shipped registry is found, in any case, at any place
// in a text; a registry with an empty key skips nothing.
func TestMayTriggerFindsEveryKey(t *testing.T) {
	g := shipped(t)
	for _, keys := range []map[string]*entry{g.byName, g.byHost} {
		for k := range keys {
			for _, text := range []string{k, `{"x":"` + strings.ToUpper(k) + `"}`, "aaa" + k[:len(k)-1] + "|" + k + "zzz"} {
				if !g.MayTrigger([]byte(text)) {
					t.Errorf("MayTrigger(%q) = false", text)
				}
			}
			if len(k) > 1 && g.MayTrigger([]byte(k[:len(k)-1])) != mayTriggerNaive(g, []byte(k[:len(k)-1])) {
				t.Errorf("MayTrigger(%q) disagrees with the naive search", k[:len(k)-1])
			}
		}
	}
	if m := newKeyMatcher([]string{"a", ""}); !m.always {
		t.Error("a matcher with an empty key does not always answer true")
	}
}

// FuzzMayTrigger compares MayTrigger with Triggers on what Parse makes of
// fuzzed text: a text whose requirement triggers is never skipped; and
// with the naive search it stands for, on any text.
func FuzzMayTrigger(f *testing.F) {
	for _, d := range []doc{
		apiKeyDoc("Spotify", "api.evil.example"),
		apiKeyDoc("Acme", "API.SPOTIFY.COM"),
		apiKeyDoc("Acme", "ａｐｉ.spotify.com"),
		apiKeyDoc("spotify web api", "api.acme.example"),
		apiKeyDoc("Acme Weather", "api.acme.example"),
		lanDoc("Philips Hue", "192.168.1.20"),
		lanDoc("Acme Lights", "10.0.0.7"),
	} {
		f.Add([]byte(mustText(f, d)))
	}
	f.Add([]byte(`{"slot":"s","provider":{"name":"Sp\u006ftify"},"kind":"none","declaredApiHosts":["api.acme.example"]}`))
	g := shipped(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		may := g.MayTrigger(raw)
		if may != mayTriggerNaive(g, raw) {
			t.Fatalf("MayTrigger = %v, the naive search disagrees", may)
		}
		if may {
			return
		}
		r, vs := requirement.Parse(raw, requirement.Options{})
		if len(vs) == 0 && g.Triggers(r) {
			t.Fatalf("MayTrigger skipped a requirement that triggers: %s", raw)
		}
		r, vs = requirement.Parse(raw, requirement.Options{AllowUserLayer: true})
		if len(vs) == 0 && g.Triggers(r) {
			t.Fatalf("MayTrigger skipped a requirement (userLayer allowed) that triggers: %s", raw)
		}
	})
}

// BenchmarkMayTrigger measures the pre-filter on a stored text that names
// no entry (scripts/bench's rows), the case the start's pass skips.
func BenchmarkMayTrigger(b *testing.B) {
	g := shipped(b)
	raw := []byte(`{"slot":"s3","provider":{"name":"Bench API","homepageUrl":"https://api000042.bench.test"},"kind":"api_key","fields":[{"key":"api_key","label":"API key","type":"secret","required":true}],"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"declaredApiHosts":["api000042.bench.test"]}`)
	g.MayTrigger(raw)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if g.MayTrigger(raw) {
			b.Fatal("the bench row may trigger")
		}
	}
}
