package scrub

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestScrubber(t *testing.T) {
	var s Set
	if got := s.Apply("nothing to do"); got != "nothing to do" {
		t.Errorf("empty Set changed text: %q", got)
	}
	s.Add("a b/c", "", "a b/c", "abc")
	for _, in := range []string{"a b/c", url.QueryEscape("a b/c"), url.PathEscape("a b/c"), escapeRFC3986("a b/c"), lowerHex(escapeRFC3986("a b/c")), "xabcx"} {
		if got := s.Apply(in); strings.Contains(got, "a b") || strings.Contains(got, "%2F") || strings.Contains(got, "%2f") || strings.Contains(got, "abc") {
			t.Errorf("apply(%q) = %q", in, got)
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
// other byte survives in order.
func FuzzScrub(f *testing.F) {
	for _, s := range [][3]string{
		{"abcdefgh", "efghijkl", "xxabcdefghijklyy"},
		{"abab", "b", "xababab"},
		{"a b/c", "c", "a+b%2Fc a%20b%2fc"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, v1, v2, text string) {
		var s Set
		s.Add(v1, v2)
		got := s.Apply(text)
		covered := make([]bool, len(text))
		for _, c := range spellings([]string{v1, v2}) {
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
		if got != want.String() {
			t.Fatalf("scrub(%q, %q).apply(%q) = %q, want %q", v1, v2, text, got, want.String())
		}
	})
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
		"00172.17.0.0":                    PrivateAddressMark,
		"id 10.0.0.1234":                  "id " + PrivateAddressMark,
		"":                                "",
	}
	for in, want := range cases {
		if got := PrivateIPv4(in); got != want {
			t.Errorf("PrivateIPv4(%q) = %q, want %q", in, got, want)
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
	}
	for _, tc := range cases {
		if got := Host(tc.s, tc.host); got != tc.want {
			t.Errorf("Host(%q, %q) = %q, want %q", tc.s, tc.host, got, tc.want)
		}
	}
}
