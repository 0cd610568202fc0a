package lan

import (
	"context"
	"net/netip"
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
