package scrub

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScrubber(t *testing.T) {
	var s Set
	if got := s.Apply("nothing to do"); got != "nothing to do" {
		t.Errorf("empty Set changed text: %q", got)
	}
	if got := s.Candidates(); len(got) != 0 {
		t.Errorf("empty Set has candidates %q", got)
	}
	s.Add("a b/c", "", "a b/c", "abc")
	for _, in := range []string{"a b/c", url.QueryEscape("a b/c"), url.PathEscape("a b/c"), escapeRFC3986("a b/c"), lowerHex(escapeRFC3986("a b/c")), "xabcx"} {
		if got := s.Apply(in); strings.Contains(got, "a b") || strings.Contains(got, "%2F") || strings.Contains(got, "%2f") || strings.Contains(got, "abc") {
			t.Errorf("apply(%q) = %q", in, got)
		}
	}
	// Each percent-encoded spelling on its own: for "p w$d:x@y" PathEscape
	// keeps "$", ":" and "@" where QueryEscape and RFC 3986 escape them, so
	// only the PathEscape candidate matches its spelling.
	var e Set
	e.Add("p w$d:x@y")
	for _, in := range []string{url.PathEscape("p w$d:x@y"), url.QueryEscape("p w$d:x@y"), escapeRFC3986("p w$d:x@y"), lowerHex(escapeRFC3986("p w$d:x@y"))} {
		if got := e.Apply("<" + in + ">"); got != "<"+Mark+">" {
			t.Errorf("Apply(%q) = %q, want the spelling scrubbed", in, got)
		}
	}
	// Longest first: "abc" inside "abcdef" leaves no tail of the longer value.
	var l Set
	l.Add("abc", "abcdef")
	if got := l.Apply("xabcdefx"); got != "x"+Mark+"x" {
		t.Errorf("apply = %q, want one mark", got)
	}
}

// TestScrubOverlap: values that overlap in the text, or a value that
// overlaps itself, leave no byte of any occurrence behind. A leftmost,
// non-overlapping replacement scrubbed the first and left the tail of the
// second ("ijkl" below) in the answer.
//
// conformance: P3-X14-40, P3-X14.1-01
func TestScrubOverlap(t *testing.T) {
	cases := []struct {
		vals []string
		in   string
		want string
	}{
		{[]string{"abcdefgh", "efghijkl"}, "xxabcdefghijklyy", "xx" + Mark + "yy"},
		{[]string{"efghijkl", "abcdefgh"}, "xxabcdefghijklyy", "xx" + Mark + "yy"},
		{[]string{"abab"}, "xababab", "x" + Mark},
		{[]string{"aa"}, "baaab aab", "b" + Mark + "b " + Mark + "b"},
		{[]string{"k3y", "y/z"}, "k3y%2Fz", Mark},
		{[]string{"tok3n", "3n/x"}, "tok3n%2fx tok3n%2Fx", Mark + " " + Mark},
		{[]string{"abc"}, "abcabc", Mark},
		{[]string{"abc"}, "ab c", "ab c"},
	}
	for _, tc := range cases {
		var s Set
		s.Add(tc.vals...)
		if got := s.Apply(tc.in); got != tc.want {
			t.Errorf("scrub(%q).apply(%q) = %q, want %q", tc.vals, tc.in, got, tc.want)
		}
	}
}

// FuzzScrub checks the value scrub against a naive reference: every byte
// inside any occurrence of any spelling of any value is gone, and every
// other byte survives in order, on both of Apply's paths (one search per
// spelling, one pass of the matcher) and through a shared Cache. It also plants the spellings real
// encoders give the first value (encoding/json with and without HTML
// escaping, PHP's json_encode, every spelling the Set derives) around
// the random text and checks none survives.
func FuzzScrub(f *testing.F) {
	var fuzzCache Cache
	for _, s := range [][3]string{
		{"abcdefgh", "efghijkl", "xxabcdefghijklyy"},
		{"abab", "b", "xababab"},
		{"a b/c", "c", "a+b%2Fc a%20b%2fc"},
		{"dXNlcjpw/YXNz+", "user:password1", `{"a":"dXNlcjpw\/YXNz\u002b"}`},
		{"<k&y>'\"\n", "é/日", `"\u003ck\u0026y\u003e'\"\n" \u00e9\/\u65e5`},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, v1, v2, text string) {
		var s Set
		s.Add(v1)
		s.AddUserPass(v2)
		vals := slices.Clone(s.Values())
		for _, x := range []string{text, plant(v1, text)} {
			want := reference(vals, x)
			if got := s.applyEach(x); got != want {
				t.Fatalf("scrub(%q, %q).applyEach(%q) = %q, want %q", v1, v2, x, got, want)
			}
			if got := s.applyOnce(x); got != want {
				t.Fatalf("scrub(%q, %q).applyOnce(%q) = %q, want %q", v1, v2, x, got, want)
			}
			var cs Set // the same values through the shared cache
			cs.UseCache(&fuzzCache)
			cs.Add(v1)
			cs.AddUserPass(v2)
			if got := cs.Apply(x); got != want {
				t.Fatalf("scrub(%q, %q) through a Cache, Apply(%q) = %q, want %q", v1, v2, x, got, want)
			}
			for _, set := range []*Set{&s, &cs} {
				in := []byte(x)
				got := set.ApplyBytes(in)
				if string(got) != want {
					t.Fatalf("scrub(%q, %q).ApplyBytes(%q) = %q, want %q", v1, v2, x, got, want)
				}
				if len(got) > 0 && &got[0] == &in[0] && want != x {
					t.Fatalf("scrub(%q, %q).ApplyBytes(%q) returned its input unscrubbed", v1, v2, x)
				}
			}
		}
		got := s.Apply(plant(v1, text))
		for _, c := range append(encoderSpellings(v1), s.Candidates()...) {
			if c != "" && !strings.ContainsAny(c, Mark) && strings.Contains(got, c) {
				t.Fatalf("scrub(%q).Apply keeps the spelling %q: %q", v1, c, got)
			}
		}
	})
}

// reference is the naive value scrub.
func reference(vals []string, text string) string {
	covered := make([]bool, len(text))
	for _, c := range spellings(vals) {
		for i := 0; i+len(c) <= len(text); i++ {
			if text[i:i+len(c)] == c {
				for j := i; j < i+len(c); j++ {
					covered[j] = true
				}
			}
		}
	}
	var want strings.Builder
	for i := 0; i < len(text); i++ {
		if !covered[i] {
			want.WriteByte(text[i])
		} else if i == 0 || !covered[i-1] {
			want.WriteString(Mark)
		}
	}
	return want.String()
}

// encoderSpellings is v as real JSON encoders write it inside a string.
func encoderSpellings(v string) []string {
	if v == "" || !utf8.ValidString(v) {
		return nil
	}
	inner := func(b []byte) string {
		return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(b)), `"`), `"`)
	}
	goHTML, _ := json.Marshal(v)
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	php := strings.ReplaceAll(inner(plain.Bytes()), "/", `\/`) // json_encode's default slash
	return []string{inner(goHTML), inner(plain.Bytes()), php}
}

// plant surrounds text with every encoder spelling of v.
func plant(v, text string) string {
	return text + strings.Join(encoderSpellings(v), text) + text
}

// TestScrubJSONSpellings: a value echoed inside a JSON string, escaped the
// way encoding/json, PHP or .NET escape it, is scrubbed.
//
// conformance: P3-X14.1-01
func TestScrubJSONSpellings(t *testing.T) {
	var s Set
	s.Add("dXNlcjpw/YXNz+x", "<a&b>\"q'\n\x01é")
	cases := []string{
		`dXNlcjpw\/YXNz+x`, `dXNlcjpw\u002fYXNz+x`, `dXNlcjpw\u002FYXNz\u002Bx`, `dXNlcjpw\/YXNz\u002bx`,
		`\u003ca\u0026b\u003e\"q'\n\u0001é`,               // encoding/json
		`<a&b>\"q'\n\u0001\u00e9`,                         // PHP
		`\u003Ca\u0026b\u003E\u0022q\u0027\n\u0001\u00E9`, // .NET
	}
	for _, in := range cases {
		if got := s.Apply("[" + in + "]"); got != "["+Mark+"]" {
			t.Errorf("Apply(%q) = %q", in, got)
		}
	}
}

// TestScrubJSONSpellingBounds: a value with four kinds of escaped byte
// (24 combinations, the most still tried one by one) gets a mixed
// spelling no encoder's uniform spelling covers; a value with five kinds
// (32) or every kind gets the uniform spellings only, a bounded few;
// U+FFFF, the last rune without a surrogate pair, is one \u escape.
//
// conformance: P3-X14.1-01
func TestScrubJSONSpellingBounds(t *testing.T) {
	var s Set
	s.Add("k/\"\\\n")
	mixed := `k\/\u0022\\\n` // "/" short, '"' as \u, '\' and "\n" short
	if got := s.Apply("[" + mixed + "]"); got != "["+Mark+"]" {
		t.Errorf("Apply(%q) = %q, want the mixed spelling scrubbed", mixed, got)
	}
	// Past the bound: the value and its six percent-encoded spellings,
	// and five uniform JSON spellings in two hex cases.
	for _, v := range []string{"\"\\\n\x7f<", "/\"\\\n\x01\x7f<'é\u2028"} {
		var many Set
		many.Add(v)
		if n, most := len(many.Candidates()), 7+2*5; n > most {
			t.Errorf("%q has %d candidates, want at most %d", v, n, most)
		}
	}
	var ffff Set
	ffff.Add("k\uffff")
	for _, in := range []string{`k\uffff`, `k\uFFFF`} {
		if got := ffff.Apply("[" + in + "]"); got != "["+Mark+"]" {
			t.Errorf("Apply(%q) = %q, want U+FFFF's escape scrubbed", in, got)
		}
	}
}

// TestScrubJSONSpellingReplacementRune: a value holding U+FFFD itself (three
// bytes, which every encoder writes raw) or an invalid byte (kept as it is)
// keeps them whole in its escaped spellings, so the spelling with "/"
// escaped is scrubbed too.
//
// conformance: P3-X14.1-01
func TestScrubJSONSpellingReplacementRune(t *testing.T) {
	for _, tc := range []struct{ v, in string }{
		{"k\ufffd/x", `k` + "\ufffd" + `\/x`},
		{"k\ufffd/x", `k` + "\ufffd" + `\u002fx`},
		{"k\xff/x", `k` + "\xff" + `\/x`},
	} {
		var s Set
		s.Add(tc.v)
		if got := s.Apply("[" + tc.in + "]"); got != "["+Mark+"]" {
			t.Errorf("Apply(%q) with the value %q = %q, want it scrubbed", tc.in, tc.v, got)
		}
	}
}

// TestScrubUserPassHalves: each half of a user:pass value long enough to
// be credential-shaped is scrubbed alone (SimpleFIN's password echoed
// without its user name); a short user name is left in ordinary text.
//
// conformance: P3-X14.1-01
func TestScrubUserPassHalves(t *testing.T) {
	var s Set
	s.AddUserPass("bob:Zq8r2LkP9wXc")
	got := s.Apply(`{"error":"password Zq8r2LkP9wXc is wrong for bob, bobby"}`)
	if want := `{"error":"password ` + Mark + ` is wrong for bob, bobby"}`; got != want {
		t.Errorf("Apply = %q, want %q", got, want)
	}
	// A half of exactly MinHalf bytes is long enough.
	var m Set
	m.AddUserPass("user:12345678")
	if got := m.Apply("x12345678y"); got != "x"+Mark+"y" {
		t.Errorf("Apply = %q: a %d-byte password half survives", got, MinHalf)
	}
	var l Set
	l.AddUserPass("e8b1c2d3f4a5:Zq8r2LkP9wXc")
	if got := l.Apply("user e8b1c2d3f4a5"); got != "user "+Mark {
		t.Errorf("Apply = %q: a long user half survives", got)
	}
}

// conformance: P3-L16-03
func TestScrubPrivateIPv4(t *testing.T) {
	cases := map[string]string{
		"bridge 192.168.1.20 ok":          "bridge " + PrivateAddressMark + " ok",
		"10.1.2.3:80 and 172.31.255.1":    PrivateAddressMark + ":80 and " + PrivateAddressMark,
		"172.32.0.1 8.8.8.8 198.51.100.7": "172.32.0.1 8.8.8.8 198.51.100.7",
		"192.168.001.020":                 PrivateAddressMark,
		"x10.0.0.1y":                      "x" + PrivateAddressMark + "y",
		"::ffff:10.0.0.1":                 "::ffff:" + PrivateAddressMark,
		"v1.10.0.0.7":                     "v" + PrivateAddressMark,
		"256.10.0.0":                      "256.10.0.0",
		"11.20.0.1 193.168.0.1":           "11.20.0.1 193.168.0.1",
		"00172.17.0.0":                    PrivateAddressMark,
		"id 10.0.0.1234":                  "id " + PrivateAddressMark,
		"":                                "",
	}
	for in, want := range cases {
		if got := PrivateIPv4(in); got != want {
			t.Errorf("PrivateIPv4(%q) = %q, want %q", in, got, want)
		}
		if got := PrivateIPv4Bytes([]byte(in)); string(got) != want {
			t.Errorf("PrivateIPv4Bytes(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzScrubPrivateIPv4: no RFC-1918 dotted quad survives (checked by an
// independent parser over every digit-and-dot window), and scrubbing is
// idempotent.
func FuzzScrubPrivateIPv4(f *testing.F) {
	for _, s := range []string{"192.168.1.20", "a10.0.0.1b", "1.2.3.4.172.16.0.1", "010.000.000.001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := PrivateIPv4(s)
		if again := PrivateIPv4(got); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", s, got, again)
		}
		if b := PrivateIPv4Bytes([]byte(s)); string(b) != got {
			t.Fatalf("PrivateIPv4Bytes(%q) = %q, PrivateIPv4 %q", s, b, got)
		}
		for i := 0; i < len(got); i++ {
			for j := i + 7; j <= len(got) && j <= i+15; j++ {
				a, err := netip.ParseAddr(got[i:j])
				if err == nil && a.Is4() && a.IsPrivate() {
					t.Fatalf("PrivateIPv4(%q) = %q keeps %s", s, got, a)
				}
			}
		}
	})
}

// conformance: P3-U15-18, P3-U15-19
func TestHost(t *testing.T) {
	cases := []struct{ s, host, want string }{
		{"dial 192.168.1.20:443 and 192.168.1.20 again", "192.168.1.20", "dial " + HostMark + ":443 and " + HostMark + " again"},
		{"GET https://API.Example.com/x — é", "api.example.com", "GET https://" + HostMark + "/x — é"},
		{"nothing here", "api.example.com", "nothing here"},
		{"any text", "", "any text"},
		{"API.example.com refused", "api.example.com", HostMark + " refused"},
	}
	for _, tc := range cases {
		if got := Host(tc.s, tc.host); got != tc.want {
			t.Errorf("Host(%q, %q) = %q, want %q", tc.s, tc.host, got, tc.want)
		}
	}
}

// TestShortestPeriod agrees with the definition on every string of a
// and b up to ten bytes: a wrong period would let the scrub skip an
// overlapping occurrence.
func TestShortestPeriod(t *testing.T) {
	brute := func(c string) int {
		for p := 1; p < len(c); p++ {
			if c[p:] == c[:len(c)-p] {
				return p
			}
		}
		return len(c)
	}
	for n := 1; n <= 10; n++ {
		for bits := 0; bits < 1<<n; bits++ {
			b := make([]byte, n)
			for i := range b {
				b[i] = "ab"[bits>>i&1]
			}
			if got, want := shortestPeriod(string(b)), brute(string(b)); got != want {
				t.Fatalf("shortestPeriod(%q) = %d, want %d", b, got, want)
			}
		}
	}
}

// TestCandidatesOrder: the spellings come longest first, each once.
func TestCandidatesOrder(t *testing.T) {
	var s Set
	s.Add("a b", "xyz/1", "a b", "q")
	got := s.Candidates()
	for i := 1; i < len(got); i++ {
		if len(got[i]) > len(got[i-1]) || got[i] == got[i-1] {
			t.Fatalf("Candidates = %q, want longest first and unique", got)
		}
	}
	if !slices.Contains(got, "q") || !slices.Contains(got, "xyz%2F1") || !slices.Contains(got, "a+b") {
		t.Fatalf("Candidates = %q, want the raw and percent-encoded spellings", got)
	}
}

// TestLowerHex: only the two hex digits after each '%' are lowered, and
// a '%' too close to the end to hold two is left alone.
func TestLowerHex(t *testing.T) {
	for in, want := range map[string]string{"AB%4F%AA": "AB%4f%aa", "ab%F": "ab%F", "%": "%", "Z%2Fx%": "Z%2fx%"} {
		if got := lowerHex(in); got != want {
			t.Errorf("lowerHex(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEscapeRFC3986: exactly the unreserved characters stay; each byte
// next to an unreserved range is escaped, in uppercase hex.
func TestEscapeRFC3986(t *testing.T) {
	if got := escapeRFC3986("azAZ09-._~"); got != "azAZ09-._~" {
		t.Errorf("escapeRFC3986(unreserved) = %q", got)
	}
	if got, want := escapeRFC3986("`{@[/: \xff"), "%60%7B%40%5B%2F%3A%20%FF"; got != want {
		t.Errorf("escapeRFC3986(neighbours) = %q, want %q", got, want)
	}
}
