package transports

import (
	"net/netip"
	"strings"
)

// Reasons a BlockedError carries. They are fixed words so that a journal line
// or an error text never needs the address itself.
const (
	reasonMalformed      = "malformed"
	reasonTrailingDot    = "trailing-dot"
	reasonLocalhost      = "localhost"
	reasonSingleLabel    = "single-label"
	reasonInvalid        = "invalid"
	reasonZone           = "zone"
	reasonThisNetwork    = "this-network"
	reasonUnspecified    = "unspecified"
	reasonLoopback       = "loopback"
	reasonRFC1918        = "rfc1918"
	reasonCGNAT          = "cgnat"
	reasonLinkLocal      = "link-local"
	reasonMetadata       = "metadata"
	reasonIETFProtocol   = "ietf-protocol"
	reasonBenchmarking   = "benchmarking"
	reason6to4           = "6to4"
	reasonMulticast      = "multicast"
	reasonReserved       = "reserved"
	reasonBroadcast      = "broadcast"
	reasonIPv4Compatible = "ipv4-compatible"
	reasonNAT64Local     = "nat64-local"
	reasonDiscard        = "discard-only"
	reasonDummy          = "dummy"
	reasonTeredo         = "teredo"
	reasonUniqueLocal    = "unique-local"
	reasonSiteLocal      = "site-local"
	reasonIPv6NonGlobal  = "ipv6-non-global"
	reasonNotLAN         = "not-rfc1918"
)

// block is one refused prefix and the reason it is refused.
type block struct {
	prefix netip.Prefix
	reason string
}

func b(prefix, reason string) block { return block{netip.MustParsePrefix(prefix), reason} }

// The refused prefixes. An address is judged by the LONGEST prefix
// that contains it, so a metadata /32 inside link-local reports "metadata" and
// the loopback /128 inside ::/96 reports "loopback". Only these tables decide;
// CheckAddr adds nothing but the embedded-IPv4 rule and the zone rule.
//
// Read-only after initialisation; never appended to or changed at run time.
//
// Sources, checked 2026-11-30:
//   - IANA IPv4 Special-Purpose Address Registry,
//     https://www.iana.org/assignments/iana-ipv4-special-registry/
//   - IANA IPv6 Special-Purpose Address Registry,
//     https://www.iana.org/assignments/iana-ipv6-special-registry/
//   - IANA IPv6 Address Space (only 2000::/3 is global unicast),
//     https://www.iana.org/assignments/ipv6-address-space/
//
// Every registry entry whose "Globally Reachable" is False or N/A is refused.
// Entries the registries mark globally reachable are allowed, with these
// deliberate exceptions (refused anyway, failing closed: they are anycast
// service addresses or protocol plumbing, and no HTTPS API lives there):
// 192.0.0.9/32 (PCP anycast) and 192.0.0.10/32 (TURN anycast) inside
// 192.0.0.0/24; 2001:1::1/128, 2001:1::2/128, 2001:1::3/128 (PCP, TURN, DNS-SD
// SRP anycast), 2001:3::/32 (AMT), 2001:4:112::/48 (AS112-v6), 2001:20::/28
// (ORCHIDv2) and 2001:30::/28 (DET) inside 2001::/23.
//
// Allowed although special-purpose (globally reachable per registry):
// 192.31.196.0/24 (AS112-v4), 192.52.193.0/24 (AMT), 192.175.48.0/24 (AS112
// direct delegation), 2620:4f:8000::/48 (AS112 direct delegation).
//
// THE ONE EXCEPTION: the documentation blocks 192.0.2.0/24,
// 198.51.100.0/24, 203.0.113.0/24 (RFC 5737), 2001:db8::/32 (RFC 3849) and
// 3fff::/20 (RFC 9637) are allowed. They are never routed on the Internet, so
// nothing is deployed there, and the end-to-end tests place their "public"
// upstreams in them. They appear in no table below; TestDocumentationAllowed
// keeps it that way.
var refused4 = [...]block{
	b("0.0.0.0/8", reasonThisNetwork),        // RFC 791 §3.2; 0.0.0.0/32 RFC 1122 §3.2.1.3
	b("10.0.0.0/8", reasonRFC1918),           // RFC 1918
	b("100.64.0.0/10", reasonCGNAT),          // RFC 6598 shared address space
	b("127.0.0.0/8", reasonLoopback),         // RFC 1122 §3.2.1.3
	b("169.254.0.0/16", reasonLinkLocal),     // RFC 3927
	b("172.16.0.0/12", reasonRFC1918),        // RFC 1918
	b("192.0.0.0/24", reasonIETFProtocol),    // RFC 6890 §2.1: DS-Lite /29 (RFC 7335), dummy .8 (RFC 7600), .9/.10 anycast, .170/.171 NAT64 discovery (RFC 8880)
	b("192.88.99.0/24", reason6to4),          // RFC 7526: deprecated 6to4 relay anycast
	b("192.168.0.0/16", reasonRFC1918),       // RFC 1918
	b("198.18.0.0/15", reasonBenchmarking),   // RFC 2544
	b("224.0.0.0/4", reasonMulticast),        // RFC 5771 (not in the registry; refused all the same)
	b("240.0.0.0/4", reasonReserved),         // RFC 1112 §4
	b("255.255.255.255/32", reasonBroadcast), // RFC 919 §7, RFC 8190

	// Cloud metadata and credential endpoints, checked 2026-11-30. Most sit in
	// link-local or CGNAT space already; they are listed so the journal says
	// "metadata", and because two of them (Azure's, Oracle's) sit outside it.
	b("169.254.169.254/32", reasonMetadata), // AWS, GCP, Azure, OCI, DigitalOcean, Akamai/Linode, OpenStack IMDS (docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html; techdocs.akamai.com/cloud-computing/docs/metadata-service-api)
	b("169.254.170.2/32", reasonMetadata),   // AWS ECS task metadata and role credentials (docs.rs/aws-config/1.4.0/aws_config/ecs/index.html)
	b("169.254.170.23/32", reasonMetadata),  // AWS EKS Pod Identity agent (same page)
	b("100.100.100.200/32", reasonMetadata), // Alibaba Cloud ECS metadata (alibabacloud.com/help/en/ecs/user-guide/overview-of-ecs-instance-metadata)
	b("168.63.129.16/32", reasonMetadata),   // Azure WireServer: a PUBLIC address (learn.microsoft.com/azure/virtual-network/what-is-ip-address-168-63-129-16)
	b("192.0.0.192/32", reasonMetadata),     // Oracle Compute Cloud@Customer metadata (docs.oracle.com/en/cloud/cloud-at-customer/occ-get-started/retrieve-predefined-instance-metadata.html)
}

var refused6 = [...]block{
	// Everything outside 2000::/3 (IANA IPv6 address space), as three
	// prefixes; the more specific entries below name the well-known parts.
	b("::/3", reasonIPv6NonGlobal),
	b("4000::/2", reasonIPv6NonGlobal),
	b("8000::/1", reasonIPv6NonGlobal),

	b("::/128", reasonUnspecified),             // RFC 4291
	b("::1/128", reasonLoopback),               // RFC 4291
	b("::/96", reasonIPv4Compatible),           // RFC 4291 §2.5.5.1, deprecated
	b("64:ff9b:1::/48", reasonNAT64Local),      // RFC 8215 local-use NAT64
	b("100::/64", reasonDiscard),               // RFC 6666
	b("100:0:0:1::/64", reasonDummy),           // RFC 9780 dummy IPv6 prefix
	b("5f00::/16", reasonIPv6NonGlobal),        // RFC 9602 SRv6 SIDs
	b("fc00::/7", reasonUniqueLocal),           // RFC 4193
	b("fe80::/10", reasonLinkLocal),            // RFC 4291
	b("fec0::/10", reasonSiteLocal),            // RFC 3879, deprecated
	b("ff00::/8", reasonMulticast),             // RFC 4291
	b("2001::/23", reasonIETFProtocol),         // RFC 2928; see the exceptions above
	b("2001::/32", reasonTeredo),               // RFC 4380
	b("2001:2::/48", reasonBenchmarking),       // RFC 5180
	b("2001:10::/28", reasonIETFProtocol),      // RFC 4843 ORCHID, deprecated
	b("2002::/16", reason6to4),                 // RFC 3056
	b("fd00:ec2::254/128", reasonMetadata),     // AWS IMDS over IPv6 (docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html)
	b("fd00:ec2::23/128", reasonMetadata),      // AWS EKS Pod Identity agent over IPv6 (docs.rs/aws-config/1.4.0/aws_config/ecs/index.html)
	b("fd00:a9fe:a9fe::1/128", reasonMetadata), // Akamai/Linode metadata (techdocs.akamai.com/cloud-computing/docs/metadata-service-api)
	b("fe80::a9fe:a9fe/128", reasonMetadata),   // Akamai/Linode, OpenStack Neutron metadata over IPv6
	// ::ffff:0:0/96 (IPv4-mapped, RFC 4291) and 64:ff9b::/96 (NAT64 well-known
	// prefix, RFC 6052) are judged by the IPv4 address they embed: see CheckAddr.
}

// nat64WKP is the NAT64 well-known prefix (RFC 6052 §2.1).
var nat64WKP = netip.MustParsePrefix("64:ff9b::/96")

// rfc1918 holds the three private-use blocks the LAN class admits.
var rfc1918 = [...]netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
}

// CheckAddr reports whether a may be dialed by the public transport: nil, or a
// *BlockedError naming the class that refuses it.
//
// An address with a zone is refused. An IPv4-mapped address (::ffff:0:0/96)
// and an address in the NAT64 well-known prefix (64:ff9b::/96) are judged by
// the IPv4 address they embed. Everything else is judged by the longest
// matching prefix of the refused tables above. It is safe for concurrent use.
func CheckAddr(a netip.Addr) error {
	if r := classify(a); r != "" {
		return &BlockedError{Reason: r}
	}
	return nil
}

// classify returns the reason a is refused, or "" when it is allowed.
func classify(a netip.Addr) string {
	if !a.IsValid() {
		return reasonInvalid
	}
	if a.Zone() != "" {
		return reasonZone
	}
	if a.Is4In6() {
		a = a.Unmap()
	} else if a.Is6() && nat64WKP.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	if a.Is4() {
		return longest(refused4[:], a)
	}
	return longest(refused6[:], a)
}

func longest(table []block, a netip.Addr) string {
	best, reason := -1, ""
	for _, bl := range table {
		if bl.prefix.Bits() > best && bl.prefix.Contains(a) {
			best, reason = bl.prefix.Bits(), bl.reason
		}
	}
	return reason
}

// parseHost reports whether host, the literal host of a request URL (as
// url.URL.Hostname returns it, or with an IPv6 literal still in brackets),
// may be handed to the public transport: nil, or a *BlockedError; for an
// IP literal it returns the address (the zero Addr for a host name).
//
//   - An IP literal (dotted-quad IPv4, IPv6 with or without brackets) is
//     judged by CheckAddr; a zone is refused.
//   - A numeric spelling that some resolver or URL parser would read as an
//     IPv4 address is refused as "malformed" (gate 5: malformed fails
//     closed): a last label that is all digits or 0x-prefixed hex, which
//     covers 127.1, 0x7f.1, 2130706433, 017700000001, 0x7f000001 and
//     127.000.0.1 (the WHATWG URL "ends in a number" rule).
//   - A name ending in a dot is refused (a trailing dot never
//     matches), as are localhost and *.localhost (RFC 6761 §6.3) and
//     single-label names, whose meaning depends on the machine's search list.
//   - Anything else must be an ASCII host name of LDH labels (A-labels for
//     IDNs), at most 253 characters; otherwise it is "malformed".
//
// A host name that passes is not yet safe: Public.Resolve checks every
// address it resolves to. parseHost is safe for concurrent use.
func parseHost(host string) (netip.Addr, error) {
	if host == "" || len(host) > 255 {
		return netip.Addr{}, &BlockedError{Reason: reasonMalformed}
	}
	if host[0] == '[' {
		if len(host) < 2 || host[len(host)-1] != ']' {
			return netip.Addr{}, &BlockedError{Reason: reasonMalformed}
		}
		return parseLiteral6(host[1 : len(host)-1])
	}
	if strings.IndexByte(host, ':') >= 0 || strings.IndexByte(host, '%') >= 0 {
		return parseLiteral6(host)
	}
	if host[len(host)-1] == '.' {
		return netip.Addr{}, &BlockedError{Reason: reasonTrailingDot}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddr(a); err != nil {
			return netip.Addr{}, err
		}
		return a, nil
	}
	if !validHostname(host) {
		return netip.Addr{}, &BlockedError{Reason: reasonMalformed}
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if isNumericLabel(last) {
		return netip.Addr{}, &BlockedError{Reason: reasonMalformed}
	}
	lower := strings.ToLower(host)
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return netip.Addr{}, &BlockedError{Reason: reasonLocalhost}
	}
	if strings.IndexByte(host, '.') < 0 {
		return netip.Addr{}, &BlockedError{Reason: reasonSingleLabel}
	}
	return netip.Addr{}, nil
}

// parseLiteral6 accepts only an IPv6 literal (dotted-quad tails included).
func parseLiteral6(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		// An IPv6 address followed by a broken zone ("fe80::1%") is still
		// a zone; anything else is a malformed host.
		if i := strings.IndexByte(s, '%'); i >= 0 {
			if z, err := netip.ParseAddr(s[:i]); err == nil && z.Is6() {
				return netip.Addr{}, &BlockedError{Reason: reasonZone}
			}
		}
		return netip.Addr{}, &BlockedError{Reason: reasonMalformed}
	}
	if err := CheckAddr(a); err != nil {
		return netip.Addr{}, err
	}
	return a, nil
}

// validHostname reports whether s is dot-separated labels of 1–63 ASCII
// letters, digits and hyphens, no label starting or ending with a hyphen
// (RFC 1123 §2.1), at most 253 characters.
func validHostname(s string) bool {
	if len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// isNumericLabel is the WHATWG URL Standard's "ends in a number" test for
// one label: all ASCII digits, or 0x/0X followed by hex digits (none too).
func isNumericLabel(s string) bool {
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		for i := 2; i < len(s); i++ {
			if !isHex(s[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// CheckLANHost reports whether host is a LAN device address of the LAN
// device class rfc1918-ipv4-literal: a canonical dotted-quad IPv4 literal (no
// leading zeros, no other spelling) inside 10.0.0.0/8, 172.16.0.0/12 or
// 192.168.0.0/16. It returns the address, or a *BlockedError ("malformed" for
// another spelling, "not-rfc1918" for any other address or a host name).
// Whether the LAN class may be used at all is the executor's decision (the
// desktop transport policy).
func CheckLANHost(host string) (netip.Addr, error) {
	a, err := netip.ParseAddr(host)
	if err != nil {
		if validHostname(host) && !isNumericLabel(host[strings.LastIndexByte(host, '.')+1:]) {
			return netip.Addr{}, &BlockedError{Reason: reasonNotLAN}
		}
		return netip.Addr{}, &BlockedError{Reason: reasonMalformed}
	}
	if !a.Is4() || a.String() != host {
		return netip.Addr{}, &BlockedError{Reason: reasonNotLAN}
	}
	for _, p := range rfc1918 {
		if p.Contains(a) {
			return a, nil
		}
	}
	return netip.Addr{}, &BlockedError{Reason: reasonNotLAN}
}
