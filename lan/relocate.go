package lan

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"time"
)

// Relocate looks for a paired bridge at a new address (a DHCP lease that
// changed). Among bridges, a Discover result, it probes with Verify each
// selectable bridge at another address than from and returns the first
// whose certificate has the fingerprint pin: the same certificate is the
// same bridge, whatever else the answer claims. hint narrows the probes
// to bridges announcing that bridge id (pass the recorded pin's CN, which
// on a Hue bridge is its id); an invalid or empty hint probes every
// selectable bridge. The hint only saves probes, it decides nothing.
//
// ok is false when no bridge matched; probes that fail are skipped. dial
// is called with "<address>:443" for each address probed (nil: a
// net.Dialer that can reach nothing else). The caller stages the new
// address as a pending change of the row: re-approval shows the diff, and
// the credential and pin stay as they are. Safe for concurrent use.
//
// Relocate does not look at from: a relay elsewhere on the LAN that
// forwards to the bridge presents the pinned certificate too. ProveMove
// adds that look; callers staging a move call ProveMove.
func Relocate(ctx context.Context, bridges []Bridge, from, pin, hint string, dial DialFunc) (c Candidate, ok bool) {
	if !validPin(pin) {
		return Candidate{}, false
	}
	id, hinted := NormalizeBridgeID(hint)
	old, _ := netip.ParseAddr(from)
	for _, b := range bridges {
		if ctx.Err() != nil {
			return Candidate{}, false
		}
		if !b.Selectable || (hinted && b.BridgeID != id) {
			continue
		}
		a, err := ParseAddress(b.Address)
		if err != nil || a == old {
			continue
		}
		cand, err := Verify(ctx, b.Address, dial)
		if err == nil && cand.Pin == pin {
			return cand, true
		}
	}
	return Candidate{}, false
}

// moveProbeTimeout bounds the look at a row's approved address: a bridge
// that is there completes a TLS handshake on the LAN in well under a
// second.
const moveProbeTimeout = 5 * time.Second

// Move is a paired bridge proven to have moved: To presents the pinned
// certificate at a new address, and at From, the row's approved address,
// no device presents it any more.
type Move struct {
	From netip.Addr
	To   Candidate
}

// ProveMove is Relocate with the move proven: it finds, as Relocate does,
// a selectable bridge of the discovery at another address than from whose
// certificate has the fingerprint pin, and then looks at from itself. Only
// when nothing presents the pinned certificate there (nothing answers, or
// a device answers with another certificate) has the bridge moved; while
// the bridge still answers at from, the match elsewhere is the bridge
// reached through a relay, and ok is false. Finding the match first means
// from is dialed only when another address claims the bridge.
//
// from must be a canonical RFC-1918 dotted quad and pin a fingerprint,
// else ok is false and nothing is dialed. dial is called with
// "<address>:443" for each address probed, from included (nil: a
// net.Dialer that can reach nothing else). The caller stages Move.To's
// address for re-approval, which shows From beside it; the credential
// and pin stay as they are. Safe for concurrent use.
func ProveMove(ctx context.Context, bridges []Bridge, from, pin, hint string, dial DialFunc) (m Move, ok bool) {
	old, err := ParseAddress(from)
	if err != nil || !validPin(pin) {
		return Move{}, false
	}
	cand, ok := Relocate(ctx, bridges, from, pin, hint, dial)
	if !ok || presentsPin(ctx, old, pin, dial) || ctx.Err() != nil {
		return Move{}, false
	}
	return Move{From: old, To: cand}, true
}

// presentsPin reports whether a device at addr:443 completes a TLS
// handshake presenting the certificate whose fingerprint is pin, within
// moveProbeTimeout. No request is sent: the handshake is the question.
func presentsPin(ctx context.Context, addr netip.Addr, pin string, dial DialFunc) bool {
	target := netip.AddrPortFrom(addr, 443)
	if dial == nil {
		d := &net.Dialer{Timeout: moveProbeTimeout, Control: onlyTo(target)}
		dial = d.DialContext
	}
	ctx, cancel := context.WithTimeout(ctx, moveProbeTimeout)
	defer cancel()
	conn, err := dial(ctx, "tcp", target.String())
	if err != nil {
		return false
	}
	defer conn.Close()
	tc := tls.Client(conn, &tls.Config{
		InsecureSkipVerify: true, // VerifyConnection is the one check, as in newClient
		MinVersion:         tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return ErrCertificateChanged
			}
			return CheckPin(pin, cs.PeerCertificates[0].Raw)
		},
	})
	return tc.HandshakeContext(ctx) == nil
}
