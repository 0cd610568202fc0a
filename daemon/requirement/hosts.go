package requirement

import (
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// A HostError says why a string is not an acceptable hostname. Rule is one
// of the host.* rule names. The message never repeats the input.
type HostError struct {
	Rule string
	msg  string
}

func (e *HostError) Error() string { return "host " + e.msg }

func hostErr(rule, msg string) *HostError { return &HostError{Rule: rule, msg: msg} }

// maxHostLen is the schema bound on a declared host and the DNS
// bound on a name's text form.
const maxHostLen = 253

// hostProfile is the IDNA profile hosts are normalized with: UTS #46
// non-transitional processing ("ß" stays "ß", as browsers do today) with
// lookup mapping (case folding, width folding), STD3 ASCII rules, hyphen and
// joiner checks, the Bidi rule and DNS length checks. It is built per call
// rather than kept in a package variable; see NormalizeHost for the fast
// path that skips it for names that are already normalized.
func hostProfile() *idna.Profile {
	return idna.New(
		idna.MapForLookup(),
		idna.Transitional(false),
		idna.BidiRule(),
		idna.StrictDomainName(true),
		idna.ValidateLabels(true),
		idna.CheckHyphens(true),
		idna.CheckJoiners(true),
		idna.VerifyDNSLength(true),
	)
}

// NormalizeHost returns the normalized form of a bare DNS hostname: IDNA
// non-transitional ToASCII under a strict lookup profile, lowercase, no
// trailing dot. It is the one normalization used on both sides of the
// ceiling check (gate 4: the frozen ceiling holds its output, and the
// executor normalizes a request's host with it), so it must stay stable:
// NormalizeHost(NormalizeHost(s)) == NormalizeHost(s).
//
// It refuses, with a *HostError: an empty string; more than 253 characters
// or a label over 63 octets; a scheme, userinfo, port, path, query or
// fragment; a trailing dot; an IP literal in any form (IPv4, IPv6, bracketed,
// with a zone); a numeric spelling the WHATWG URL parser would read as an
// IPv4 address (127.1, 0x7f.1, 2130706433, 010.0.0.1 — any name whose last
// label is all digits or 0x-hex), also when it only appears after mapping
// (fullwidth digits); and anything IDNA processing rejects (underscores,
// spaces, invalid punycode, disallowed code points). A LAN row's RFC-1918
// literal is not a hostname and is checked with IsRFC1918Literal instead.
// NormalizeHost is safe for concurrent use.
func NormalizeHost(s string) (string, error) {
	if isNormalLDH(s) {
		// The common case, and the executor's hot path: already normal.
		// Such a name is an IP literal only as a dotted quad, which ends
		// in a number.
		switch {
		case !endsInNumber(s):
			return s, nil
		case isIPLiteral(s):
			return "", hostErr(RuleHostIPLiteral, "must be a DNS name, not an IP address")
		default:
			return "", hostErr(RuleHostNumeric, "must not be a numeric address spelling")
		}
	}
	if s == "" {
		return "", hostErr(RuleHostEmpty, "is empty")
	}
	if utf8.RuneCountInString(s) > maxHostLen {
		return "", hostErr(RuleHostTooLong, "is longer than 253 characters")
	}
	if strings.Contains(s, "://") {
		return "", hostErr(RuleHostScheme, "must be a bare hostname without a scheme")
	}
	if strings.ContainsRune(s, '@') {
		return "", hostErr(RuleHostUserinfo, "must not carry userinfo")
	}
	if strings.ContainsAny(s, "/?#\\") {
		return "", hostErr(RuleHostPath, "must not carry a path, query or fragment")
	}
	if isIPLiteral(s) {
		return "", hostErr(RuleHostIPLiteral, "must be a DNS name, not an IP address")
	}
	if strings.ContainsRune(s, ':') {
		return "", hostErr(RuleHostPort, "must not carry a port")
	}
	if strings.HasSuffix(s, ".") {
		return "", hostErr(RuleHostTrailingDot, "must not end with a dot")
	}
	for _, r := range s {
		if invisibleRune(r) || r == ' ' {
			// UTS #46 would silently delete some of these (U+200B, U+00AD);
			// a host that hides characters is refused, not cleaned.
			return "", hostErr(RuleHostInvalid, "is not a valid hostname")
		}
	}
	out, err := hostProfile().ToASCII(s)
	if err != nil {
		return "", hostErr(RuleHostInvalid, "is not a valid hostname")
	}
	// Mapping can create what the checks above looked for (fullwidth
	// digits, U+3002 as a dot), so the output is checked again.
	switch {
	case strings.HasSuffix(out, "."):
		return "", hostErr(RuleHostTrailingDot, "must not end with a dot")
	case isIPLiteral(out):
		return "", hostErr(RuleHostIPLiteral, "must be a DNS name, not an IP address")
	case endsInNumber(out):
		return "", hostErr(RuleHostNumeric, "must not be a numeric address spelling")
	case len(out) > maxHostLen:
		return "", hostErr(RuleHostTooLong, "is longer than 253 characters")
	case !isLDH(out):
		// Cannot happen with STD3 rules; refuse rather than trust it.
		return "", hostErr(RuleHostInvalid, "is not a valid hostname")
	}
	return out, nil
}

// isNormalLDH reports whether s is already in normalized form without IDNA
// work: dot-separated labels of 1–63 lowercase letters, digits and hyphens,
// no label starting or ending with a hyphen or carrying hyphens in its third
// and fourth positions (which also excludes xn-- labels: those need their
// punycode checked), at most 253 octets. For such a name IDNA processing is
// the identity, which the tests check against the profile.
func isNormalLDH(s string) bool {
	if len(s) == 0 || len(s) > maxHostLen {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		n := len(label)
		if n == 0 || n > 63 || label[0] == '-' || label[n-1] == '-' {
			return false
		}
		if n >= 4 && label[2] == '-' && label[3] == '-' {
			return false
		}
		for i := 0; i < n; i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// isLDH reports whether s is dot-separated labels of 1–63 lowercase
// letters, digits and hyphens: the only shape IDNA ToASCII output may have.
func isLDH(s string) bool {
	for label := range strings.SplitSeq(s, ".") {
		if len(label) == 0 || len(label) > 63 {
			return false
		}
		if !allBytes(label, func(c byte) bool { return c >= 'a' && c <= 'z' || isDigit(c) || c == '-' }) {
			return false
		}
	}
	return true
}

// isIPLiteral reports whether s is an IP address in any form netip accepts,
// or bracketed like a URL's IPv6 host.
func isIPLiteral(s string) bool {
	if strings.HasPrefix(s, "[") {
		return true
	}
	_, err := netip.ParseAddr(s)
	return err == nil
}

// endsInNumber is the WHATWG URL "ends in a number" check: the last label is
// all ASCII digits, or "0x"/"0X" followed by hex digits only. A host for
// which it holds is parsed as an IPv4 address by browsers (127.1, 0x7f.1,
// 2130706433), so a ceiling never holds one.
func endsInNumber(s string) bool {
	last := s[strings.LastIndexByte(s, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X") {
		for i := 2; i < len(last); i++ {
			if !isHex(last[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(last); i++ {
		if !isDigit(last[i]) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// rfc1918 are the three private IPv4 blocks of RFC 1918.
func rfc1918() [3]netip.Prefix {
	return [3]netip.Prefix{
		netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, 0, 0}), 8),
		netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 16, 0, 0}), 12),
		netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 168, 0, 0}), 16),
	}
}

// IsRFC1918Literal reports whether s is the canonical dotted-quad spelling
// of an address in 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16: four decimal
// octets without leading zeros, no zone, nothing around it. It is the one
// host a LAN row's ceiling may hold; "010.0.0.1",
// "10.1", "::ffff:10.0.0.1" and "172.32.0.1" are not.
func IsRFC1918Literal(s string) bool {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() || a.String() != s {
		return false
	}
	for _, p := range rfc1918() {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// DeriveAllowedHosts is deriveConnectionAllowedHosts: the ceiling
// frozen at approval. It is the union of DeclaredAPIHosts, the host of every
// OAuth endpoint (authorize, token, refresh, revoke), and the userLayer's
// declared hosts and endpoint hosts. lanHost contributes nothing, so a
// pre-collection LAN row derives an empty ceiling, which refuses every host;
// a post-collection row's ceiling holds its one RFC-1918 literal.
//
// The result is normalized, unique and sorted by bytes, so the same
// requirement always derives the same bytes however its hosts were
// permuted, repeated or cased (import compares them byte for byte).
// It is never nil. A host that does not normalize is left out, which only
// narrows the ceiling; a Requirement from Parse has none.
func DeriveAllowedHosts(r *Requirement) []string {
	hosts := []string{}
	addDeclared := func(list []string, lan bool) {
		for _, h := range list {
			if lan && IsRFC1918Literal(h) {
				hosts = append(hosts, h)
			} else if n, err := NormalizeHost(h); err == nil {
				hosts = append(hosts, n)
			}
		}
	}
	addEndpoints := func(e Endpoints) {
		for _, u := range []string{e.Authorize, e.Token, e.Refresh, e.Revoke} {
			if u == "" {
				continue
			}
			pu, err := url.Parse(u)
			if err != nil {
				continue
			}
			if n, err := NormalizeHost(pu.Hostname()); err == nil {
				hosts = append(hosts, n)
			}
		}
	}
	addDeclared(r.DeclaredAPIHosts, r.LANHost != nil)
	addEndpoints(r.Endpoints)
	if ul := r.UserLayer; ul != nil {
		addDeclared(ul.DeclaredAPIHosts, false)
		addEndpoints(ul.Endpoints)
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// HostsJSON returns the exact text stored in snug_connections.allowed_hosts
// for hosts: a whitespace-free JSON array of strings in the given order,
// "[]" when empty. Pass it DeriveAllowedHosts' result.
func HostsJSON(hosts []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, h := range hosts {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(&b, h)
	}
	b.WriteByte(']')
	return b.String()
}
