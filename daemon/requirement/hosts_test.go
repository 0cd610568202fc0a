package requirement

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestNormalizeHost covers the normalizations and every refusal.
//
// conformance: P3-C12.5-28, P3-C12.5-29
func TestNormalizeHost(t *testing.T) {
	ok := []struct{ in, want string }{
		{"api.example.com", "api.example.com"},
		{"API.Example.COM", "api.example.com"},
		{"API.Bücher.de", "api.xn--bcher-kva.de"},
		{"api.xn--bcher-kva.de", "api.xn--bcher-kva.de"},
		{"XN--BCHER-KVA.de", "xn--bcher-kva.de"},
		{"faß.de", "xn--fa-hia.de"},    // non-transitional: ß is kept, not mapped to ss
		{"ｅｘａｍｐｌｅ.com", "example.com"}, // width folding
		{"example。com", "example.com"}, // ideographic full stop maps to a dot
		{"localhost", "localhost"},
		{"a-b.c", "a-b.c"},
		{"123.example.com", "123.example.com"},
		{"example.0xg", "example.0xg"},
		{"1x.example", "1x.example"},
		{"whatsapp.sidecar.invalid", "whatsapp.sidecar.invalid"},
		{hostOfLen(253), hostOfLen(253)},
	}
	for _, tc := range ok {
		t.Run(tc.in, func(t *testing.T) {
			got, err := NormalizeHost(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("NormalizeHost(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
			}
		})
	}
	bad := []struct{ in, rule string }{
		{"", RuleHostEmpty},
		{hostOfLen(254), RuleHostTooLong},
		{strings.Repeat("a", 64) + ".com", RuleHostInvalid},
		{"https://api.example.com", RuleHostScheme},
		{"user@api.example.com", RuleHostUserinfo},
		{"@api.example.com", RuleHostUserinfo},
		{"api.example.com/v1", RuleHostPath},
		{"api.example.com?x", RuleHostPath},
		{"api.example.com#x", RuleHostPath},
		{`api.example.com\x`, RuleHostPath},
		{"api.example.com:443", RuleHostPort},
		{"api.example.com.", RuleHostTrailingDot},
		{"example。com。", RuleHostTrailingDot},
		{"127.0.0.1", RuleHostIPLiteral},
		{"192.168.1.1", RuleHostIPLiteral},
		{"::1", RuleHostIPLiteral},
		{"[::1]", RuleHostIPLiteral},
		{"fe80::1%eth0", RuleHostIPLiteral},
		{"::ffff:127.0.0.1", RuleHostIPLiteral},
		{"１２７.０.０.１", RuleHostIPLiteral}, // fullwidth digits map to an IPv4 literal
		{"127.1", RuleHostNumeric},
		{"0x7f.1", RuleHostNumeric},
		{"0x7f.0x0.0x0.0x1", RuleHostNumeric},
		{"2130706433", RuleHostNumeric},
		{"017700000001", RuleHostNumeric},
		{"010.0.0.1", RuleHostNumeric},
		{"api.example.123", RuleHostNumeric},
		{"api.example.0x10", RuleHostNumeric},
		{"api.example.0x", RuleHostNumeric},
		{"api.example.0X1F", RuleHostNumeric},
		{"exa_mple.com", RuleHostInvalid},
		{"exa mple.com", RuleHostInvalid},
		{"ex%61mple.com", RuleHostInvalid},
		{"*.example.com", RuleHostInvalid},
		{".example.com", RuleHostInvalid},
		{"a..example.com", RuleHostInvalid},
		{"-a.example.com", RuleHostInvalid},
		{"a-.example.com", RuleHostInvalid},
		{"ab--c.example.com", RuleHostInvalid},
		{"xn--zz.example.com", RuleHostInvalid},
		{"xn--abc.example.com", RuleHostInvalid}, // an ASCII-only A-label
		{"ex\u200bample.com", RuleHostInvalid},   // zero-width space
		{"example\u202e.com", RuleHostInvalid},   // bidi override
		{"exa\x00mple.com", RuleHostInvalid},
		{"exa\tmple.com", RuleHostInvalid},
	}
	for _, tc := range bad {
		t.Run("refuses "+tc.in, func(t *testing.T) {
			got, err := NormalizeHost(tc.in)
			var he *HostError
			if !errors.As(err, &he) || he.Rule != tc.rule {
				t.Fatalf("NormalizeHost(%q) = %q, %v, want rule %s", tc.in, got, err, tc.rule)
			}
			if tc.in != "" && strings.Contains(err.Error(), tc.in) {
				t.Errorf("error %q repeats its input", err)
			}
		})
	}
}

// TestNormalizeHostFastPath checks that names the fast path keeps are
// exactly what the IDNA profile makes of them.
func TestNormalizeHostFastPath(t *testing.T) {
	for _, h := range []string{"a", "api.example.com", "a-b-c.d0", "x1.y2.z3", hostOfLen(253), "ab-c.example"} {
		if !isNormalLDH(h) {
			t.Fatalf("isNormalLDH(%q) = false, want true", h)
		}
		got, err := hostProfile().ToASCII(h)
		if err != nil || got != h {
			t.Errorf("profile.ToASCII(%q) = %q, %v, want it unchanged", h, got, err)
		}
	}
	for _, h := range []string{"xn--bcher-kva.de", "ab--c.d", "-a.b", "a-.b", "A.b", "a..b", "", "a_b"} {
		if isNormalLDH(h) {
			t.Errorf("isNormalLDH(%q) = true, want false", h)
		}
	}
}

// TestIsRFC1918Literal accepts only canonical dotted quads in the three
// private blocks.
//
// conformance: P3-C12.11-01
func TestIsRFC1918Literal(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"10.0.0.0", true}, {"10.255.255.255", true}, {"172.16.0.0", true}, {"172.31.255.255", true},
		{"192.168.0.0", true}, {"192.168.1.20", true},
		{"9.255.255.255", false}, {"11.0.0.0", false}, {"172.15.255.255", false}, {"172.32.0.0", false},
		{"192.167.255.255", false}, {"192.169.0.0", false}, {"8.8.8.8", false}, {"127.0.0.1", false},
		{"010.0.0.1", false}, {"10.0.0.01", false}, {"10.1", false}, {"167772161", false}, {"0xa.0.0.1", false},
		{"::ffff:10.0.0.1", false}, {"::ffff:a00:1", false}, {"fd00::1", false}, {"10.0.0.1%eth0", false},
		{" 10.0.0.1", false}, {"10.0.0.1 ", false}, {"10.0.0.1.", false}, {"[10.0.0.1]", false}, {"", false},
		{"hue.local", false},
	}
	for _, tc := range tests {
		if got := IsRFC1918Literal(tc.in); got != tc.want {
			t.Errorf("IsRFC1918Literal(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestDeriveAllowedHosts: declared hosts ∪ every OAuth endpoint host ∪ the
// userLayer's, sorted, unique, normalized; lanHost adds nothing.
//
// conformance: P3-C12.5-44, P3-C12.5-45, P3-C12.5-46, P3-C12.5-47, P3-C12.5-48, P3-C12.2-14
func TestDeriveAllowedHosts(t *testing.T) {
	tests := []struct {
		name string
		base func() doc
		mut  func(doc)
		opts Options
		want []string
	}{
		{"declared only", baseDoc, func(doc) {}, Options{}, []string{"api.openweathermap.org"}},
		{"endpoints join", oauthDoc, set("endpoints", doc{
			"authorize": "https://accounts.spotify.com/authorize",
			"token":     "https://token.spotify.com/api/token",
			"refresh":   "https://refresh.spotify.com:8443/r",
			"revoke":    "https://revoke.spotify.com/x",
		}), Options{}, []string{"accounts.spotify.com", "api.spotify.com", "refresh.spotify.com", "revoke.spotify.com", "token.spotify.com"}},
		{"userLayer joins", registryDoc, func(doc) {}, Options{AllowUserLayer: true},
			[]string{"api.acme.example", "auth.acme.example", "login.acme.example", "revoke.acme.example", "user.acme.example"}},
		{"pre-collection LAN row is empty", lanDoc, func(doc) {}, Options{}, []string{}},
		{"post-collection LAN row holds its literal", lanDoc, set("declaredApiHosts", []any{"192.168.1.20"}), Options{}, []string{"192.168.1.20"}},
		{"normalized", baseDoc, set("declaredApiHosts", []any{"API.Bücher.de", "Z.example", "a.example"}), Options{},
			[]string{"a.example", "api.xn--bcher-kva.de", "z.example"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := checkAccepted(t, tc.base, tc.mut, tc.opts)
			got := DeriveAllowedHosts(r)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("DeriveAllowedHosts = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("empty ceiling text", func(t *testing.T) {
		r := checkAccepted(t, lanDoc, func(doc) {}, Options{})
		if got := HostsJSON(DeriveAllowedHosts(r)); got != "[]" {
			t.Errorf("HostsJSON(pre-collection) = %s, want []", got)
		}
	})
}

// TestDeriveAllowedHostsStable: the stored bytes do not depend on order,
// repetition or case of the hosts.
//
// conformance: P3-C12.4-08, P3-C12.2-14
func TestDeriveAllowedHostsStable(t *testing.T) {
	variants := [][]any{
		{"b.example", "a.example", "c.example"},
		{"c.example", "B.EXAMPLE", "a.example"},
		{"A.Example", "c.example", "b.example"},
	}
	var want string
	for i, hosts := range variants {
		r := checkAccepted(t, oauthDoc, all(set("declaredApiHosts", hosts), set("endpoints", doc{
			"authorize": "https://a.example/authorize", "token": "https://b.example/token",
		})), Options{})
		got := HostsJSON(DeriveAllowedHosts(r))
		if i == 0 {
			want = got
			if want != `["a.example","b.example","c.example"]` {
				t.Fatalf("HostsJSON = %s, want the sorted union", want)
			}
		} else if got != want {
			t.Errorf("HostsJSON(variant %d) = %s, want %s", i, got, want)
		}
	}
	// A hand-built requirement with repeats and mixed case (Parse refuses
	// those) still derives the same bytes.
	r := &Requirement{
		DeclaredAPIHosts: []string{"C.example", "a.example", "c.example", "A.EXAMPLE"},
		Endpoints:        Endpoints{Authorize: "https://b.example/x", Token: "https://B.example/y"},
	}
	if got := HostsJSON(DeriveAllowedHosts(r)); got != want {
		t.Errorf("HostsJSON(hand-built) = %s, want %s", got, want)
	}
}

// TestDeriveAllowedHostsFailsClosed: a hand-built requirement's host that
// does not normalize is left out rather than frozen into a ceiling.
func TestDeriveAllowedHostsFailsClosed(t *testing.T) {
	r := &Requirement{
		DeclaredAPIHosts: []string{"127.0.0.1", "192.168.1.2", "2130706433", "ok.example", "a_b.example"},
		Endpoints:        Endpoints{Token: "https://user@t.example/t", Revoke: "://bad"},
	}
	got := DeriveAllowedHosts(r)
	want := []string{"ok.example", "t.example"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DeriveAllowedHosts(hand-built) = %q, want %q", got, want)
	}
}

func TestHostsJSON(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, "[]"},
		{[]string{}, "[]"},
		{[]string{"a.example"}, `["a.example"]`},
		{[]string{"a.example", "192.168.1.2"}, `["a.example","192.168.1.2"]`},
	}
	for _, tc := range tests {
		if got := HostsJSON(tc.in); got != tc.want {
			t.Errorf("HostsJSON(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
