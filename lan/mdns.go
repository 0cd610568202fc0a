package lan

import (
	"encoding/binary"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// mDNS wire facts (RFC 6762).
const (
	mdnsPort      = 5353
	maxPacket     = 9000 // RFC 6762 §17: the largest mDNS message a responder sends
	headerLen     = 12
	flagResponse  = 0x8000 // QR
	opcodeMask    = 0x7800
	rcodeMask     = 0x000f
	classMask     = 0x7fff // the top bit is the cache-flush bit (RFC 6762 §10.2)
	hueServiceFQN = hueService + ".local."
)

// mdnsGroup is the IPv4 mDNS group, 224.0.0.251.
var mdnsGroup = netip.AddrFrom4([4]byte{224, 0, 0, 251})

// parseResponse reads one mDNS message record by record and returns the
// records that parsed. A record whose data does not parse (python-zeroconf
// 0.47's NSEC with an empty bitmap block, an unknown layout, a bad length)
// is skipped and the rest of the message is still read: one bad record
// never hides the others, as it does for a whole-message parser. A record
// whose name or header cannot be read ends the message there, since
// nothing after it can be located; what came before is kept.
//
// ok is false for anything that is not an mDNS response: shorter than a
// header, a query (QR clear), or a non-zero opcode or rcode, which
// RFC 6762 §18.3 and §18.11 say to ignore. Question entries are skipped.
// The function is pure, so it can be fuzzed.
func parseResponse(msg []byte) (rrs []dns.RR, ok bool) {
	if len(msg) < headerLen || len(msg) > maxPacket {
		return nil, false
	}
	flags := binary.BigEndian.Uint16(msg[2:])
	if flags&flagResponse == 0 || flags&opcodeMask != 0 || flags&rcodeMask != 0 {
		return nil, false
	}
	qd := int(binary.BigEndian.Uint16(msg[4:]))
	n := int(binary.BigEndian.Uint16(msg[6:])) + int(binary.BigEndian.Uint16(msg[8:])) + int(binary.BigEndian.Uint16(msg[10:]))
	off := headerLen
	for range qd {
		_, next, err := dns.UnpackDomainName(msg, off)
		if err != nil || next+4 > len(msg) {
			return nil, true
		}
		off = next + 4 // type and class
	}
	for i := 0; i < n && off < len(msg); i++ {
		rr, next, err := dns.UnpackRR(msg, off)
		if next <= off || next > len(msg) {
			break // the header did not parse: the next record cannot be found
		}
		off = next
		if err != nil || rr == nil {
			continue
		}
		if rr.Header().Class&classMask != dns.ClassINET {
			continue
		}
		rrs = append(rrs, rr)
	}
	return rrs, true
}

// instanceLabel returns the instance label of a service instance name
// under `_hue._tcp.local.`, still in presentation form
// (`Hue\ Bridge\ -\ 23BFC2`), and reports whether name is one. A name
// with more than one label before the service (a subtype, or anything
// else) is not.
func instanceLabel(name string) (string, bool) {
	if len(name) <= len(hueServiceFQN)+1 {
		return "", false
	}
	cut := len(name) - len(hueServiceFQN)
	if !strings.EqualFold(name[cut:], hueServiceFQN) || name[cut-1] != '.' {
		return "", false
	}
	label := name[:cut-1]
	if trailing := len(label) - len(strings.TrimRight(label, `\`)); trailing%2 == 1 {
		return "", false // the dot before the service is escaped: one label
	}
	for i := 0; i < len(label); i++ {
		switch label[i] {
		case '\\':
			i++ // an escaped byte, a dot included, is part of the label
		case '.':
			return "", false
		}
	}
	return label, true
}

// isHueService reports whether name is `_hue._tcp.local.`, the owner of
// the browse's PTR records.
func isHueService(name string) bool { return strings.EqualFold(name, hueServiceFQN) }
