package lan

import (
	"net/netip"
	"strings"
)

// Limits on the text a discovery answer may bring. Everything in an mDNS
// answer is chosen by whoever sent it, so each field is bounded and reduced
// to what a person can safely read.
const (
	maxNameBytes    = 64 // a bridge's instance name as shown
	maxModelIDBytes = 16 // "BSB002"; longer is not a Hue model id
	maxTXTStrings   = 32 // TXT strings looked at per answer
)

// Reasons a discovered device cannot be chosen. Each is a fixed sentence:
// none contains text from the answer. A conflict's Reason is
// ReasonConflicting with a count before it and the claiming addresses
// after it ("two devices claim to be this bridge: 192.168.77.10,
// 192.168.77.23"); branch on Bridge.Conflicts, not on the text.
const (
	ReasonNotPrivate  = "its address is not a private (RFC 1918) IPv4 address"
	ReasonNoIPv4      = "it announced no IPv4 address"
	ReasonNoBridgeID  = "it announced no valid bridge id"
	ReasonPort        = "it does not serve HTTPS on port 443"
	ReasonConflicting = "devices claim to be this bridge"
)

// Bridge is one Hue bridge (or a device claiming to be one) that answered a
// discovery. Every field came off the network and is a claim, not a fact:
// only the verify probe and the pin (Verify, Pair) prove anything. Strings
// are printable ASCII and bounded.
type Bridge struct {
	BridgeID string // 16 lowercase hex digits from TXT bridgeid; "" when none was valid
	Address  string // the IPv4 address it announced as a dotted quad; "" when none
	Port     int    // the port of its SRV record
	Name     string // its instance name ("Hue Bridge - 23BFC2"), for display
	ModelID  string // TXT modelid ("BSB002"), for display; "" when none was valid

	// Selectable reports whether Address may be collected for a LAN row:
	// an RFC-1918 IPv4 address on port 443 with a valid bridge id, which
	// no other device claims. Otherwise Reason says why not.
	Selectable bool
	Reason     string

	// Conflicts lists, in the order they answered, every address at which
	// a device claimed this entry's bridge id or instance name, when there
	// is more than one: each such entry is not selectable, whichever
	// answered first. nil when there is no conflict.
	Conflicts []string
}

// answer is what one mDNS service answer carried, as the mDNS library
// decoded it: the instance label and the TXT strings still in their
// RFC 1035 presentation form (`\ `, `\"`, `\DDD` escapes).
type answer struct {
	instance string
	port     int
	txt      []string
	ipv4     []netip.Addr
}

// bridgeFrom turns one answer into a Bridge. It is pure, so it can be
// fuzzed: any input gives a bounded, printable Bridge.
func bridgeFrom(a answer) Bridge {
	b := Bridge{
		Name: printable(unescape(a.instance), maxNameBytes),
		Port: a.port,
	}
	id, model := parseTXT(a.txt)
	b.BridgeID = id
	b.ModelID = model
	var first netip.Addr
	for _, ip := range a.ipv4 {
		ip = ip.Unmap()
		if !ip.Is4() {
			continue
		}
		if !first.IsValid() {
			first = ip
		}
		if IsPrivate(ip) {
			first = ip
			break
		}
	}
	if first.IsValid() {
		b.Address = first.String()
	}
	switch {
	case !first.IsValid():
		b.Reason = ReasonNoIPv4
	case !IsPrivate(first):
		b.Reason = ReasonNotPrivate
	case b.BridgeID == "":
		b.Reason = ReasonNoBridgeID
	case b.Port != 443:
		b.Reason = ReasonPort
	default:
		b.Selectable = true
	}
	return b
}

// parseTXT reads the bridgeid and modelid keys of a TXT record (RFC 6763
// §6: "key=value" strings, keys case-insensitive, the first occurrence of a
// key wins). A bridge id that is not 16 hex digits, or a model id that is
// not short and alphanumeric, reads as absent.
func parseTXT(txt []string) (bridgeID, modelID string) {
	var seenID, seenModel bool
	for i, s := range txt {
		if i == maxTXTStrings {
			break
		}
		k, v, ok := strings.Cut(unescape(s), "=")
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "bridgeid":
			if !seenID {
				seenID = true
				bridgeID, _ = NormalizeBridgeID(v)
			}
		case "modelid":
			if !seenModel {
				seenModel = true
				if validModelID(v) {
					modelID = v
				}
			}
		}
	}
	return bridgeID, modelID
}

// NormalizeBridgeID returns a bridge id in its canonical form, 16 lowercase
// hex digits (the EUI-64 the bridge derives from its MAC address, e.g.
// "001788fffe23bfc2"), and reports whether id was one. Hue spells it
// lowercase in mDNS TXT and in its certificate's CN, uppercase in
// /api/0/config.
func NormalizeBridgeID(id string) (string, bool) {
	if len(id) != 16 {
		return "", false
	}
	out := make([]byte, 16)
	for i := range 16 {
		c := id[i]
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			c += 'a' - 'A'
		default:
			return "", false
		}
		out[i] = c
	}
	return string(out), true
}

// validModelID reports whether s is a plausible model id: 1–16 ASCII
// letters and digits.
func validModelID(s string) bool {
	if s == "" || len(s) > maxModelIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// unescape undoes RFC 1035 §5.1 presentation escapes as the mDNS library
// writes them: `\DDD` (a decimal byte value) and `\X` (X itself). A
// malformed escape is kept literally.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		if i+3 < len(s) && isDigit(s[i+1]) && isDigit(s[i+2]) && isDigit(s[i+3]) {
			if v := int(s[i+1]-'0')*100 + int(s[i+2]-'0')*10 + int(s[i+3]-'0'); v <= 255 {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// printable keeps the printable ASCII of s, at most n bytes of it, with
// leading and trailing spaces trimmed: the text is attacker-chosen and is
// shown to a person.
func printable(s string, n int) string {
	out := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s) && len(out) < n; i++ {
		if c := s[i]; c >= 0x20 && c <= 0x7e {
			out = append(out, c)
		}
	}
	return strings.TrimSpace(string(out))
}

// IsPrivate reports whether a is an IPv4 address in 10.0.0.0/8,
// 172.16.0.0/12 or 192.168.0.0/16 (RFC 1918), the only class a LAN row may
// collect. An IPv4-mapped IPv6 address is not one: the row holds
// a dotted quad.
func IsPrivate(a netip.Addr) bool {
	if !a.Is4() {
		return false
	}
	b := a.As4()
	return b[0] == 10 || b[0] == 172 && b[1]&0xf0 == 16 || b[0] == 192 && b[1] == 168
}

// ParseAddress reads the address of a LAN row: a canonical dotted quad in
// RFC 1918 space ("192.168.1.20"; no port, no leading zeros, no other
// spelling). Anything else is ErrNotPrivate.
func ParseAddress(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !IsPrivate(a) || a.String() != s {
		return netip.Addr{}, ErrNotPrivate
	}
	return a, nil
}
