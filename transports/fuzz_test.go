package transports

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// knownReasons is every reason a BlockedError may carry.
func knownReasons() map[string]bool {
	m := map[string]bool{}
	for _, r := range []string{
		reasonMalformed, reasonTrailingDot, reasonLocalhost, reasonSingleLabel, reasonInvalid, reasonZone,
		reasonThisNetwork, reasonUnspecified, reasonLoopback, reasonRFC1918, reasonCGNAT, reasonLinkLocal,
		reasonMetadata, reasonIETFProtocol, reasonBenchmarking, reason6to4, reasonMulticast, reasonReserved,
		reasonBroadcast, reasonIPv4Compatible, reasonNAT64Local, reasonDiscard, reasonDummy, reasonTeredo,
		reasonUniqueLocal, reasonSiteLocal, reasonIPv6NonGlobal, reasonNotLAN,
	} {
		m[r] = true
	}
	return m
}

// verdict returns "" for nil, the reason for a *BlockedError, and fails t
// for anything else.
func verdict(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var b *BlockedError
	if !errors.As(err, &b) || !knownReasons()[b.Reason] {
		t.Fatalf("got error %v (%T), want nil or a *BlockedError with a known reason", err, err)
	}
	return b.Reason
}

// embedded returns the address CheckAddr judges: the IPv4 address inside an
// IPv4-mapped or NAT64 well-known-prefix address, else a itself.
func embedded(a netip.Addr) netip.Addr {
	if a.Is4In6() {
		return a.Unmap()
	}
	if a.Is6() && netip.MustParsePrefix("64:ff9b::/96").Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte(b[12:]))
	}
	return a
}

// assertAcceptable checks an accepted address against oracles independent of
// the refused tables (the standard library's predicates and the plain
// ranges) and against every table prefix.
func assertAcceptable(t *testing.T, a netip.Addr) {
	t.Helper()
	e := embedded(a)
	if e.IsLoopback() || e.IsPrivate() || e.IsLinkLocalUnicast() || e.IsLinkLocalMulticast() ||
		e.IsMulticast() || e.IsInterfaceLocalMulticast() || e.IsUnspecified() || e.Zone() != "" {
		t.Fatalf("CheckAddr accepted %v (judged as %v), which the standard library calls non-public", a, e)
	}
	if e.Is6() && !netip.MustParsePrefix("2000::/3").Contains(e) {
		t.Fatalf("CheckAddr accepted %v, outside 2000::/3", a)
	}
	for _, bl := range append(refused4[:], refused6[:]...) {
		if bl.prefix.Contains(e) {
			t.Fatalf("CheckAddr accepted %v (judged as %v), inside refused %v (%s)", a, e, bl.prefix, bl.reason)
		}
	}
	for _, p := range []string{"::/96", "64:ff9b:1::/48", "2002::/16", "2001::/32"} {
		if netip.MustParsePrefix(p).Contains(a) {
			t.Fatalf("CheckAddr accepted %v inside %s", a, p)
		}
	}
}

// FuzzCheckAddr: never panics; an accepted address lies in no refused
// prefix and passes the standard library's predicates; an IPv4 address and
// its mapped and NAT64 forms get one verdict; a zone is always refused; the
// LAN class is exactly the RFC-1918 part of the refusals.
func FuzzCheckAddr(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1", "8.8.8.8", "169.254.169.254", "192.0.2.1", "10.0.0.1", "::1", "fe80::1",
		"2001:db8::1", "3fff::1", "2002::1", "64:ff9b::808:808", "::ffff:7f00:1", "fd00:ec2::254", "2606:4700::1111",
	} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var a netip.Addr
		switch {
		case len(raw) >= 16:
			a = netip.AddrFrom16([16]byte(raw[:16]))
		case len(raw) >= 4:
			a = netip.AddrFrom4([4]byte(raw[:4]))
		default:
			a = netip.Addr{}
		}
		got := verdict(t, CheckAddr(a))
		if !a.IsValid() {
			if got == "" {
				t.Fatalf("CheckAddr(zero Addr) accepted")
			}
			return
		}
		if got == "" {
			assertAcceptable(t, a)
		}
		if z := verdict(t, CheckAddr(a.WithZone("eth0"))); a.Is6() && z != reasonZone {
			t.Fatalf("CheckAddr(%v%%eth0) = %q, want %q", a, z, reasonZone)
		}
		if a.Is4() {
			b := a.As4()
			mapped := netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
			nat64 := netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})
			compat := netip.AddrFrom16([16]byte{12: b[0], 13: b[1], 14: b[2], 15: b[3]})
			for _, form := range []netip.Addr{mapped, nat64} {
				if v := verdict(t, CheckAddr(form)); v != got {
					t.Fatalf("CheckAddr(%v) = %q but CheckAddr(%v) = %q: one IPv4 address, two verdicts", a, got, form, v)
				}
			}
			if verdict(t, CheckAddr(compat)) == "" {
				t.Fatalf("CheckAddr(%v) accepted an IPv4-compatible address", compat)
			}
			_, lanErr := CheckLANHost(a.String())
			if (lanErr == nil) != (got == reasonRFC1918) {
				t.Fatalf("CheckLANHost(%v) = %v but CheckAddr reason %q: the LAN class must be exactly RFC 1918", a, lanErr, got)
			}
		}
	})
}

// inetAton reports whether s is an IPv4 address in any spelling the BSD
// inet_aton(3) accepts: one to four parts, each decimal, octal (leading 0)
// or hex (0x), the last part filling the remaining bytes. It is the test's
// independent model of "a numeric spelling some resolver reads".
func inetAton(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return false
	}
	for _, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, digits = 16, p[2:]
			if digits == "" {
				continue // "0x" alone is zero to inet_aton
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		if digits == "" {
			return false
		}
		if _, err := strconv.ParseUint(digits, base, 64); err != nil {
			return false
		}
	}
	return true
}

// FuzzCheckHost: never panics; an accepted IP literal passes
// assertAcceptable; an accepted host name is no numeric spelling, has no
// trailing dot, is not localhost and is plain LDH; accepting is stable under
// re-formatting (case, brackets, the canonical and expanded IPv6 spellings).
func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{
		"api.example.com", "127.0.0.1", "[::1]", "0x7f.1", "017700000001", "2130706433", "127.1",
		"api.example.com.", "localhost", "a.localhost", "[fe80::1%25eth0]", "[::ffff:10.0.0.1]",
		"192.0.2.1", "[2001:db8::1]", "xn--bcher-kva.example", "1.2.3.04", "example.0x1f", "[64:ff9b::7f00:1]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		got := verdict(t, CheckHost(host))
		if got != "" {
			return
		}
		lit, err := parseHost(host)
		if err != nil {
			t.Fatalf("parseHost(%q) = %v after CheckHost accepted it", host, err)
		}
		if lit.IsValid() {
			assertAcceptable(t, lit)
			forms := []string{lit.String(), lit.StringExpanded()}
			if lit.Is6() {
				forms = append(forms, "["+lit.String()+"]", "["+lit.StringExpanded()+"]", strings.ToUpper(lit.StringExpanded()))
			}
			for _, form := range forms {
				if v := verdict(t, CheckHost(form)); v != "" {
					t.Fatalf("CheckHost(%q) accepted but CheckHost(%q) = %q", host, form, v)
				}
			}
			return
		}
		if strings.HasSuffix(host, ".") || !strings.Contains(host, ".") || inetAton(host) {
			t.Fatalf("CheckHost(%q) accepted a trailing dot, a single label or a numeric spelling", host)
		}
		if _, err := netip.ParseAddr(host); err == nil {
			t.Fatalf("CheckHost(%q) accepted an address as a host name", host)
		}
		lower := strings.ToLower(host)
		if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
			t.Fatalf("CheckHost(%q) accepted localhost", host)
		}
		for i := 0; i < len(host); i++ {
			if c := host[i]; c != '.' && c != '-' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				t.Fatalf("CheckHost(%q) accepted byte %q", host, c)
			}
		}
		for _, form := range []string{strings.ToUpper(host), lower} {
			if v := verdict(t, CheckHost(form)); v != "" {
				t.Fatalf("CheckHost(%q) accepted but CheckHost(%q) = %q", host, form, v)
			}
		}
	})
}
