package transports

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestCheckAddr walks every refused class with adversarial spellings of it,
// and the forms that must pass.
//
// conformance: P3-X14-16, P3-X14-17, P3-X14-18, P3-X14-19, P3-X14-20
func TestCheckAddr(t *testing.T) {
	cases := []struct {
		addr string
		want string // reason, or "" for allowed
	}{
		// Loopback, every spelling.
		{"127.0.0.1", reasonLoopback},
		{"127.255.255.254", reasonLoopback},
		{"::1", reasonLoopback},
		{"::ffff:127.0.0.1", reasonLoopback},
		{"::ffff:7f00:1", reasonLoopback},
		{"64:ff9b::127.0.0.1", reasonLoopback},
		{"64:ff9b::7f00:1", reasonLoopback},
		{"0:0:0:0:0:0:0:1", reasonLoopback},
		// This network and unspecified.
		{"0.0.0.0", reasonThisNetwork},
		{"0.1.2.3", reasonThisNetwork},
		{"::", reasonUnspecified},
		{"::ffff:0.0.0.0", reasonThisNetwork},
		// RFC 1918, edges included.
		{"10.0.0.0", reasonRFC1918},
		{"10.255.255.255", reasonRFC1918},
		{"172.16.0.1", reasonRFC1918},
		{"172.31.255.255", reasonRFC1918},
		{"192.168.1.20", reasonRFC1918},
		{"::ffff:10.0.0.1", reasonRFC1918},
		{"::ffff:192.168.0.1", reasonRFC1918},
		{"64:ff9b::10.0.0.1", reasonRFC1918},
		{"64:ff9b::c0a8:114", reasonRFC1918},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		// CGNAT.
		{"100.64.0.1", reasonCGNAT},
		{"100.127.255.255", reasonCGNAT},
		{"::ffff:100.64.0.1", reasonCGNAT},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		// Link-local.
		{"169.254.0.1", reasonLinkLocal},
		{"169.254.255.255", reasonLinkLocal},
		{"fe80::1", reasonLinkLocal},
		{"febf:ffff::1", reasonLinkLocal},
		{"::ffff:169.254.1.1", reasonLinkLocal},
		// Metadata, and its disguises.
		{"169.254.169.254", reasonMetadata},
		{"::ffff:169.254.169.254", reasonMetadata},
		{"::ffff:a9fe:a9fe", reasonMetadata},
		{"64:ff9b::169.254.169.254", reasonMetadata},
		{"169.254.170.2", reasonMetadata},
		{"169.254.170.23", reasonMetadata},
		{"100.100.100.200", reasonMetadata},
		{"168.63.129.16", reasonMetadata},
		{"::ffff:168.63.129.16", reasonMetadata},
		{"64:ff9b::a83f:8110", reasonMetadata},
		{"192.0.0.192", reasonMetadata},
		{"fd00:ec2::254", reasonMetadata},
		{"fd00:ec2:0:0:0:0:0:254", reasonMetadata},
		{"fd00:ec2::23", reasonMetadata},
		{"fd00:a9fe:a9fe::1", reasonMetadata},
		{"fe80::a9fe:a9fe", reasonMetadata},
		{"168.63.129.17", ""},
		// IETF protocol assignments, benchmarking, 6to4 relay.
		{"192.0.0.1", reasonIETFProtocol},
		{"192.0.0.9", reasonIETFProtocol},
		{"192.0.0.170", reasonIETFProtocol},
		{"198.18.0.1", reasonBenchmarking},
		{"198.19.255.255", reasonBenchmarking},
		{"192.88.99.1", reason6to4},
		// Multicast, reserved, broadcast.
		{"224.0.0.1", reasonMulticast},
		{"239.255.255.250", reasonMulticast},
		{"ff02::1", reasonMulticast},
		{"ff05::1:3", reasonMulticast},
		{"::ffff:224.0.0.251", reasonMulticast},
		{"240.0.0.1", reasonReserved},
		{"255.255.255.254", reasonReserved},
		{"255.255.255.255", reasonBroadcast},
		// IPv6 forms.
		{"::10.0.0.1", reasonIPv4Compatible},
		{"::8.8.8.8", reasonIPv4Compatible},
		{"::ffff:0:8.8.8.8", reasonIPv6NonGlobal}, // IPv4-translated (RFC 2765), not mapped
		{"64:ff9b:1::8.8.8.8", reasonNAT64Local},
		{"100::1", reasonDiscard},
		{"100:0:0:1::1", reasonDummy},
		{"2001::1", reasonTeredo},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", reasonTeredo},
		{"2001:1::1", reasonIETFProtocol},
		{"2001:2::1", reasonBenchmarking},
		{"2001:10::1", reasonIETFProtocol},
		{"2001:20::1", reasonIETFProtocol},
		{"2001:1ff::1", reasonIETFProtocol},
		{"2002::1", reason6to4},
		{"2002:c0a8:101::1", reason6to4},
		{"2002:7f00:1::1", reason6to4},
		{"fc00::1", reasonUniqueLocal},
		{"fd12:3456::1", reasonUniqueLocal},
		{"fec0::1", reasonSiteLocal},
		{"5f00::1", reasonIPv6NonGlobal},
		{"1::1", reasonIPv6NonGlobal},
		{"4000::1", reasonIPv6NonGlobal},
		{"e000::1", reasonIPv6NonGlobal},
		{"1fff:ffff::1", reasonIPv6NonGlobal},
		{"4000::", reasonIPv6NonGlobal},
		// Zones are refused whatever the address.
		{"fe80::1%eth0", reasonZone},
		{"2606:4700::1%eth0", reasonZone},
		{"::ffff:8.8.8.8%1", reasonZone},
		// Allowed: public unicast, mapped and NAT64 forms of it.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"223.255.255.255", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::8.8.8.8", ""},
		{"2606:4700:4700::1111", ""},
		{"2001:200::1", ""}, // just past 2001::/23
		{"2620:4f:8000::1", ""},
		{"3ffe::1", ""},
		{"192.31.196.1", ""},
		{"192.175.48.1", ""},
		// Allowed: the documentation blocks (the one exception to the refusals).
		{"192.0.2.1", ""},
		{"198.51.100.7", ""},
		{"203.0.113.255", ""},
		{"2001:db8::1", ""},
		{"3fff::1", ""},
		{"3fff:fff:ffff::1", ""},
		{"::ffff:192.0.2.1", ""},
		{"64:ff9b::192.0.2.1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tc.addr)
			err := CheckAddr(a)
			var b *BlockedError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckAddr(%q) = %v, want nil", tc.addr, err)
			case tc.want != "" && (!errors.As(err, &b) || b.Reason != tc.want):
				t.Errorf("CheckAddr(%q) = %v, want reason %q", tc.addr, err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), tc.addr) {
				t.Errorf("CheckAddr(%q).Error() = %q names the address", tc.addr, err)
			}
		})
	}
	if err := CheckAddr(netip.Addr{}); err == nil {
		t.Errorf("CheckAddr(zero Addr) = nil, want a refusal")
	}
}

// TestDocumentationAllowed keeps the documentation-block exception honest: no refused
// prefix overlaps a documentation block, in any embedding.
func TestDocumentationAllowed(t *testing.T) {
	docs := []string{"192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32", "3fff::/20"}
	for _, d := range docs {
		p := netip.MustParsePrefix(d)
		for _, bl := range append(refused4[:], refused6[:]...) {
			if bl.prefix.Overlaps(p) && bl.prefix.Bits() >= p.Bits() {
				t.Errorf("refused prefix %v (%s) lies inside documentation block %v", bl.prefix, bl.reason, p)
			}
		}
		// First, last and middle addresses pass.
		first := p.Addr()
		last := lastAddr(p)
		for _, a := range []netip.Addr{first, first.Next(), last} {
			if err := CheckAddr(a); err != nil {
				t.Errorf("CheckAddr(%v) in documentation block %v = %v, want nil", a, p, err)
			}
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// TestRefusedTableSane checks the tables themselves: every prefix is
// canonical (masked), in its family, and every metadata entry is refused as
// metadata, not as the broader class around it.
func TestRefusedTableSane(t *testing.T) {
	for _, bl := range refused4 {
		if !bl.prefix.Addr().Is4() || bl.prefix != bl.prefix.Masked() {
			t.Errorf("refused4 entry %v is not a masked IPv4 prefix", bl.prefix)
		}
		if got := classify(bl.prefix.Addr()); got == "" {
			t.Errorf("classify(%v) = allowed, want refused", bl.prefix.Addr())
		}
	}
	for _, bl := range refused6 {
		if !bl.prefix.Addr().Is6() || bl.prefix != bl.prefix.Masked() {
			t.Errorf("refused6 entry %v is not a masked IPv6 prefix", bl.prefix)
		}
	}
	for _, bl := range append(refused4[:], refused6[:]...) {
		if bl.reason == reasonMetadata {
			if got := classify(bl.prefix.Addr()); got != reasonMetadata {
				t.Errorf("classify(%v) = %q, want %q", bl.prefix.Addr(), got, reasonMetadata)
			}
		}
	}
}

// TestCheckHost covers the literal host of a request URL: IP literals are
// classified, numeric spellings and trailing dots fail closed, localhost and
// single labels are refused, host names pass to resolution.
//
// conformance: P3-X14-16, P3-X14-17, P3-X14-18, P3-X14-19, P3-X14-20, P3-X14-21
func TestCheckHost(t *testing.T) {
	cases := []struct {
		host string
		want string // reason, or "" for allowed
	}{
		// Host names that go on to resolution.
		{"api.example.com", ""},
		{"API.Example.COM", ""},
		{"xn--bcher-kva.example", ""},
		{"a-b.c-d.example", ""},
		{"1password.com", ""},
		{"api.0x.example", ""},
		{"zz.Z9.example", ""},
		{strings.Repeat("a", 63) + ".example", ""},
		{strings.Repeat("a.", 122) + "example", ""}, // 251 characters
		{strings.Repeat("a.", 123) + "example", ""}, // 253 characters
		{strings.Repeat("a.", 123) + "examples", reasonMalformed},
		{strings.Repeat("a", 64) + ".example", reasonMalformed},
		{"deadbeef.example", ""},
		{"0x7f.example.com", ""}, // only the LAST label decides
		{"127.0.0.1.nip.io", ""}, // resolution will judge what it points at
		// Loopback and localhost.
		{"127.0.0.1", reasonLoopback},
		{"[::1]", reasonLoopback},
		{"::1", reasonLoopback},
		{"[0:0:0:0:0:0:0:1]", reasonLoopback},
		{"[::ffff:127.0.0.1]", reasonLoopback},
		{"[64:ff9b::7f00:1]", reasonLoopback},
		{"localhost", reasonLocalhost},
		{"LOCALHOST", reasonLocalhost},
		{"api.localhost", reasonLocalhost},
		{"a.b.LocalHost", reasonLocalhost},
		// Other classes as literals.
		{"10.0.0.5", reasonRFC1918},
		{"192.168.1.20", reasonRFC1918},
		{"[::ffff:10.0.0.1]", reasonRFC1918},
		{"169.254.169.254", reasonMetadata},
		{"[fd00:ec2::254]", reasonMetadata},
		{"100.64.0.1", reasonCGNAT},
		{"[fe80::1]", reasonLinkLocal},
		{"[2002:c0a8:101::1]", reason6to4},
		{"[2001::1]", reasonTeredo},
		{"[::10.0.0.1]", reasonIPv4Compatible},
		{"[64:ff9b:1::1]", reasonNAT64Local},
		// Zones.
		{"[fe80::1%eth0]", reasonZone},
		{"[fe80::1%25eth0]", reasonZone},
		{"fe80::1%eth0", reasonZone},
		{"[2001:db8::1%1]", reasonZone},
		{"[fe80::1%]", reasonZone},
		// Numeric spellings a resolver or URL parser reads as IPv4.
		{"127.1", reasonMalformed},
		{"127.0.1", reasonMalformed},
		{"0x7f.1", reasonMalformed},
		{"0x7f.0.0.1", reasonMalformed},
		{"0X7F.0.0.1", reasonMalformed},
		{"2130706433", reasonMalformed},
		{"017700000001", reasonMalformed},
		{"0x7f000001", reasonMalformed},
		{"0x", reasonMalformed},
		{"127.000.000.001", reasonMalformed},
		{"0177.0.0.1", reasonMalformed},
		{"010.0.0.5", reasonMalformed},
		{"8.8.8.08", reasonMalformed},
		{"1.2.3.4.5", reasonMalformed},
		{"example.0x1f", reasonMalformed},
		{"127.0.0.0X1", reasonMalformed}, // inet_aton: 127.0.0.1
		{"a.0X1", reasonMalformed},
		{"a.0x0", reasonMalformed}, // each end of each hex range
		{"a.0x9", reasonMalformed},
		{"a.0xa", reasonMalformed},
		{"a.0xf", reasonMalformed},
		{"a.0xA", reasonMalformed},
		{"a.0xF", reasonMalformed},
		{"a.0xg", ""},
		{"a.0xG", ""},
		{"example.123", reasonMalformed},
		{"192.0.2.1.5", reasonMalformed},
		// Trailing dots.
		{"api.example.com.", reasonTrailingDot},
		{"127.0.0.1.", reasonTrailingDot},
		{"localhost.", reasonTrailingDot},
		{".", reasonTrailingDot},
		// A '%' anywhere, the first byte included, sends a host to the
		// IPv6 rules, before the trailing-dot rule: a zone with no address.
		{"%.", reasonMalformed},
		{"%eth0.", reasonMalformed},
		// Other malformed hosts.
		{"", reasonMalformed},
		{"[]", reasonMalformed},
		{"[::1", reasonMalformed},
		{"[1.2.3.4]", reasonMalformed},
		{"[example.com]", reasonMalformed},
		{"api.example.com:443", reasonMalformed},
		{"exa%mple.com", reasonMalformed},
		{"exa mple.com", reasonMalformed},
		{"exa_mple.com", reasonMalformed},
		{"-api.example.com", reasonMalformed},
		{"api-.example.com", reasonMalformed},
		{"api..example.com", reasonMalformed},
		{".example.com", reasonMalformed},
		{"bücher.example", reasonMalformed},
		{"api.example.com\x00", reasonMalformed},
		{"user@api.example.com", reasonMalformed},
		{strings.Repeat("a", 64) + ".example", reasonMalformed},
		{strings.Repeat("abcdefghi.", 26) + "com", reasonMalformed}, // 263 characters
		// Single labels depend on the search list.
		{"metadata", reasonSingleLabel},
		{"intranet", reasonSingleLabel},
		// Documentation literals pass.
		{"192.0.2.10", ""},
		{"[2001:db8::10]", ""},
		{"2001:db8::10", ""},
		{"[3fff::1]", ""},
		{"[::ffff:203.0.113.5]", ""},
		{"8.8.8.8", ""},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			err := CheckHost(tc.host)
			var b *BlockedError
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckHost(%q) = %v, want nil", tc.host, err)
			case tc.want != "" && (!errors.As(err, &b) || b.Reason != tc.want):
				t.Errorf("CheckHost(%q) = %v, want reason %q", tc.host, err, tc.want)
			}
			if err != nil && tc.host != "" && tc.host != tc.want && strings.Contains(err.Error(), tc.host) {
				t.Errorf("CheckHost(%q).Error() = %q names the host", tc.host, err)
			}
		})
	}
}

// TestCheckLANHost: the LAN class admits a canonical RFC-1918 dotted quad
// and nothing else.
//
// conformance: P3-X14-22
func TestCheckLANHost(t *testing.T) {
	cases := []struct {
		host string
		want string // reason, or "" for admitted
	}{
		{"192.168.1.20", ""},
		{"10.0.0.5", ""},
		{"172.16.0.1", ""},
		{"172.31.255.254", ""},
		{"172.32.0.1", reasonNotLAN},
		{"172.15.0.1", reasonNotLAN},
		{"8.8.8.8", reasonNotLAN},
		{"127.0.0.1", reasonNotLAN},
		{"169.254.169.254", reasonNotLAN},
		{"100.64.0.1", reasonNotLAN},
		{"192.0.2.1", reasonNotLAN},
		{"::ffff:192.168.1.20", reasonNotLAN},
		{"fd00::1", reasonNotLAN},
		{"hue.local", reasonNotLAN},
		{"api.example.com", reasonNotLAN},
		{"192.168.001.020", reasonMalformed},
		{"192.168.1", reasonMalformed},
		{"3232235796", reasonMalformed},
		{"0xc0.0xa8.1.20", reasonMalformed},
		{"192.168.1.20.", reasonMalformed},
		{"[192.168.1.20]", reasonMalformed},
		{"192.168.1.20:80", reasonMalformed},
		{"", reasonMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			a, err := CheckLANHost(tc.host)
			var b *BlockedError
			switch {
			case tc.want == "" && (err != nil || a.String() != tc.host):
				t.Errorf("CheckLANHost(%q) = %v, %v, want the address", tc.host, a, err)
			case tc.want != "" && (!errors.As(err, &b) || b.Reason != tc.want):
				t.Errorf("CheckLANHost(%q) = %v, want reason %q", tc.host, err, tc.want)
			}
		})
	}
}
