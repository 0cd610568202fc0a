package lan

import "errors"

// The refusals of discovery, the verify probe and pairing. Each is a fixed
// sentence a caller may show as it is: none ever carries text from the
// network, the bridge or the device that answered. Callers branch on them
// with errors.Is.
var (
	// ErrNoInterface: no interface is up, multicast-capable, not loopback
	// and holding an IPv4 address, so there is no network to browse.
	ErrNoInterface = errors.New("no network interface can reach the local network")

	// ErrNotPrivate: the address is not a canonical RFC-1918 IPv4 dotted
	// quad. Nothing was dialed.
	ErrNotPrivate = errors.New("the address is not a private (RFC 1918) IPv4 address")

	// ErrUnreachable: the device could not be reached over HTTPS at the
	// address (dial, TLS handshake or HTTP exchange failed or timed out).
	ErrUnreachable = errors.New("no device answered over HTTPS at this address")

	// ErrNotBridge: the device answered the verify probe, but not like a
	// Hue bridge (no bridge id, an unknown model, a malformed answer).
	ErrNotBridge = errors.New("the device at this address does not answer like a Hue bridge")

	// ErrCertificateChanged: the device presented a certificate whose
	// fingerprint is not the pin. The connection was closed during the
	// TLS handshake, before any request byte was sent.
	ErrCertificateChanged = errors.New("the bridge's certificate changed")

	// ErrLinkTimeout: the link button was not pressed before the pairing
	// deadline.
	ErrLinkTimeout = errors.New("the link button was not pressed in time")

	// ErrPairingRefused: the bridge answered the pairing request with an
	// error other than "link button not pressed".
	ErrPairingRefused = errors.New("the bridge refused the pairing request")

	// ErrBadAnswer: the bridge's answer to the pairing request is not the
	// documented shape, or its key is not one a header can carry.
	ErrBadAnswer = errors.New("the bridge's answer to the pairing request is malformed")

	// ErrVanished: the bridge stopped answering during pairing.
	ErrVanished = errors.New("the bridge stopped answering during pairing")

	// ErrBadCandidate: Pair was given a candidate Verify did not produce
	// (no address or no pin).
	ErrBadCandidate = errors.New("pairing needs a verified bridge")
)
