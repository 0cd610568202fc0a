package requirement

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; it returns a requirement or violations,
// never both; violations are sorted, complete and never credential-shaped;
// an accepted requirement's canonical form re-parses to an equal
// requirement with the same canonical form.
func FuzzParse(f *testing.F) {
	f.Add(readTestdata(f, "coinbase-exchange.json"), false)
	for _, d := range []func() doc{baseDoc, oauthDoc, lanDoc, noneDoc, linkedDoc, registryDoc} {
		f.Add(encode(f, d()), true)
	}
	f.Add([]byte(`{"slot":"a","provider":{"name":"x"},"kind":"none","declaredApiHosts":["API.Bücher.de"]}`), false)
	f.Add([]byte(`{"slot":"a","slot":"b"}`), false)
	f.Add([]byte(`[]`), false)
	f.Fuzz(func(t *testing.T, raw []byte, allowUserLayer bool) {
		opts := Options{AllowUserLayer: allowUserLayer}
		r, vs := Parse(raw, opts)
		if (r == nil) == (len(vs) == 0) {
			t.Fatalf("Parse = %v with %d violations: want exactly one of them", r, len(vs))
		}
		if r == nil {
			sorted := slices.IsSortedFunc(vs, func(a, b Violation) int {
				if c := comparePaths(a.Path, b.Path); c != 0 {
					return c
				}
				if c := strings.Compare(a.Rule, b.Rule); c != 0 {
					return c
				}
				return strings.Compare(a.Message, b.Message)
			})
			if !sorted {
				t.Fatalf("violations not sorted:\n%s", violationList(vs))
			}
			for _, v := range vs {
				if v.Path == "" || v.Rule == "" || v.Message == "" {
					t.Fatalf("violation %+v has an empty part", v)
				}
				if reason, hit := DetectCredential(v.Path + " " + v.Message); hit {
					t.Fatalf("violation %v is credential-shaped (%s)", v, reason)
				}
			}
			return
		}
		c := r.Canonical()
		if len(c) > MaxSize {
			t.Fatalf("canonical form is %d bytes, over MaxSize", len(c))
		}
		r2, vs := Parse([]byte(c), opts)
		if vs != nil {
			t.Fatalf("Parse(Canonical) violations:\n%s\ncanonical: %s", violationList(vs), c)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("Parse(Canonical(r)) = %#v, want %#v", r2, r)
		}
		if c2 := r2.Canonical(); c2 != c {
			t.Fatalf("Canonical not stable:\n%s\n%s", c, c2)
		}
		if direct, err := Canonical([]byte(c)); err != nil || direct != c {
			t.Fatalf("Canonical(r.Canonical()) = %s, %v, want it unchanged", direct, err)
		}
		for _, h := range DeriveAllowedHosts(r) {
			if n, err := NormalizeHost(h); (err != nil || n != h) && !IsRFC1918Literal(h) {
				t.Fatalf("derived host %q is not normalized", h)
			}
		}
	})
}

// FuzzCanonical: the canonical form is idempotent, valid JSON, compact,
// and has every object's keys strictly sorted by bytes.
func FuzzCanonical(f *testing.F) {
	f.Add([]byte(`{"b":1,"a":[true,null,{"d":"x","c":-0.5e3}]}`))
	f.Add([]byte(`"\u00e9\ud83d\ude00\u0001<>&"`))
	f.Add([]byte(`123456789012345678901234567890e-40`))
	f.Add([]byte(` [ 1 , 2 ] `))
	f.Add(readTestdata(f, "coinbase-exchange.json"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Canonical(raw)
		if err != nil {
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("Canonical accepted input encoding/json calls invalid")
		}
		if !json.Valid([]byte(c)) {
			t.Fatalf("Canonical = %s, not valid JSON", c)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(c)); err != nil || compact.String() != c {
			t.Fatalf("Canonical = %s, not compact", c)
		}
		again, err := Canonical([]byte(c))
		if err != nil || again != c {
			t.Fatalf("Canonical(%s) = %s, %v, not idempotent", c, again, err)
		}
		v, _, err := decodeJSON([]byte(c))
		if err != nil {
			t.Fatalf("decode canonical: %v", err)
		}
		checkSortedKeys(t, v)
	})
}

func checkSortedKeys(t *testing.T, v *jsonValue) {
	t.Helper()
	for i, m := range v.members {
		if i > 0 && v.members[i-1].name >= m.name {
			t.Fatalf("keys %q and %q out of order", v.members[i-1].name, m.name)
		}
		checkSortedKeys(t, m.value)
	}
	for _, item := range v.items {
		checkSortedKeys(t, item)
	}
}

// FuzzNormalizeHost: the result is idempotent, lowercase ASCII letters,
// digits, hyphens and dots, never an IP address or numeric spelling, agrees
// with net/url and with the IDNA profile, and the fast path is exact.
func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{
		"api.example.com", "API.Bücher.de", "xn--bcher-kva.de", "127.1", "0x7f.1", "2130706433", "１２７.０.０.１",
		"example。com", "faß.de", "a..b", "[::1]", "host:80", "ex\u200bample.com", "ab--c.d", "0x.example",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if isNormalLDH(s) {
			if a, err := hostProfile().ToASCII(s); err != nil || a != s {
				t.Fatalf("fast path keeps %q but the profile gives %q, %v", s, a, err)
			}
		}
		n, err := NormalizeHost(s)
		if err != nil {
			var he *HostError
			if !errors.As(err, &he) || he.Rule == "" {
				t.Fatalf("NormalizeHost(%q) error %v is not a *HostError with a rule", s, err)
			}
			return
		}
		if again, err := NormalizeHost(n); err != nil || again != n {
			t.Fatalf("NormalizeHost(%q) = %q, %v, not idempotent (from %q)", n, again, err, s)
		}
		if !isLDH(n) || len(n) > 253 || strings.HasSuffix(n, ".") {
			t.Fatalf("NormalizeHost(%q) = %q, not a lowercase LDH name", s, n)
		}
		if _, err := netip.ParseAddr(n); err == nil || endsInNumber(n) {
			t.Fatalf("NormalizeHost(%q) = %q, an IP address or numeric spelling", s, n)
		}
		if u, err := url.Parse("https://" + n + "/"); err != nil || u.Hostname() != n {
			t.Fatalf("net/url reads %q as a different host", n)
		}
		if !isNormalLDH(s) {
			if a, err := hostProfile().ToASCII(s); err != nil || a != n {
				t.Fatalf("NormalizeHost(%q) = %q, profile gives %q, %v", s, n, a, err)
			}
		}
	})
}

// FuzzDetectCredential: the detector never panics, is deterministic, and a
// hit's reason is one of its fixed phrases, never text from the input.
func FuzzDetectCredential(f *testing.F) {
	for _, tc := range credentialSamples() {
		f.Add(tc.s)
	}
	f.Add(strings.Repeat("Ⱥ", 30) + " bearer x")
	f.Add("Open https://home.openweathermap.org/api_keys and copy the key.")
	reasons := map[string]bool{}
	for _, tc := range credentialSamples() {
		r, _ := DetectCredential(tc.s)
		reasons[r] = true
	}
	f.Fuzz(func(t *testing.T, s string) {
		reason, ok := DetectCredential(s)
		if again, ok2 := DetectCredential(s); again != reason || ok2 != ok {
			t.Fatalf("DetectCredential(%q) not deterministic", s)
		}
		if ok != (reason != "") {
			t.Fatalf("DetectCredential(%q) = %q, %v", s, reason, ok)
		}
		if ok && !reasons[reason] {
			t.Fatalf("DetectCredential(%q) reason %q is not one of the fixed phrases", s, reason)
		}
	})
}
