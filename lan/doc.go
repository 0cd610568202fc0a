// Package lan finds Philips Hue bridges on the user's network and pairs
// with them: mDNS discovery (grandcat/zeroconf), the exchange pairing
// family with its verify probe, and the TOFU certificate pin (the
// connection's lanPin). It is a leaf: it takes plain values (an
// address, a dial function, bounds) and returns plain results; it stores
// nothing, logs nothing and decides no policy. The daemon composes it.
//
// # Discovery
//
//	func Browse(ctx context.Context, cfg DiscoverConfig) (Discovery, error)
//	func Discover(ctx context.Context, cfg DiscoverConfig) ([]Bridge, error)
//
// browses `_hue._tcp.local.` over IPv4 on demand only (nothing listens
// between calls, and nothing ever answers), for at most 10 s (3 s by
// default), on the interfaces that are up, multicast-capable, not loopback
// and hold an IPv4 address. zeroconf sends the queries; a listener of the
// package's own on the mDNS group and port hears every response on those
// interfaces during the browse, from every source address, and reads it
// record by record with miekg/dns, so a record that does not parse is
// skipped and the rest of the message still counts. Records from one
// address are combined only with each other.
//
// Each Bridge is the instance name, the TXT bridgeid and modelid and the A
// record of one device's answer, one entry per bridge id (or instance
// name) and address, with every string bounded and reduced to printable
// ASCII. Only a Bridge with Selectable set may be collected: an RFC-1918
// IPv4 address on port 443 with a valid bridge id that no other device
// claims. When one bridge id or instance name is claimed at two addresses,
// every such entry is not selectable and says so, with the addresses
// (Bridge.Conflicts): which answered first decides nothing. The others are
// listed with a fixed Reason. The browse always runs to its timeout; the
// entries of the first Max devices (default 16) with answers that could
// be selected are listed, and a later device's claims still mark
// conflicts (Discovery.LimitReached says one was left out); devices whose
// answers cannot be selected do not count. Everything in a Bridge is a
// claim; only Verify and the pin prove anything.
//
// # The exchange, verify before claim
//
//	func Verify(ctx context.Context, addr string, dial DialFunc) (Candidate, error)
//	func Pair(ctx context.Context, c Candidate, cfg PairConfig) (Credentials, error)
//
// Verify is the verify probe: GET https://<addr>/api/0/config must answer
// the public config of a Hue bridge (bridge id, a Hue model id, software and
// API versions). The leaf certificate the device presented becomes the
// candidate pin (Candidate.Pin, SHA-256 of the DER in lowercase hex, as the
// LAN transport spells it); its CN is kept as a diagnostic only. Pair then
// POSTs {"devicetype": DeviceType(cfg.Host), "generateclientkey": true} to
// /api on connections that must present the same leaf (the handshake
// fails before a request byte otherwise: ErrCertificateChanged), about once
// a second while the bridge answers error 101, reporting StatePressButton
// and the deadline once through PairConfig.Status, for 30 s by default and
// 60 s at most. On success it returns the application key and client key
// (as Secret, which never prints) with the pin and CN: the caller writes
// them with lanVerifiedAt in one transaction.
//
// The caller passes the dial function: the daemon's reaches nothing but the
// row's frozen address (transports' LAN-guarded dialer). The package checks
// on its own as well: addr must be a canonical RFC-1918 dotted quad
// (ParseAddress, else ErrNotPrivate and nothing is dialed), and the dial
// function is only ever called with "<addr>:443". A nil dial function
// means a net.Dialer that can connect to nothing else.
//
// CheckPin compares a certificate with a recorded pin (ErrCertificateChanged
// on a mismatch), for re-pinning and for naming a changed certificate.
//
// # A bridge that moved
//
//	func ProveMove(ctx context.Context, bridges []Bridge, from, pin, hint string, dial DialFunc) (Move, bool)
//
// probes the selectable bridges of a discovery at addresses other than the
// row's for the one presenting the pinned certificate (the pin, not the
// announced id or CN, says it is the same bridge), and then the row's own
// address: only when nothing presents the pinned certificate there any
// more has the bridge moved. A relay elsewhere that forwards to the bridge
// presents its certificate too, and while the bridge still answers at its
// address nothing is proven. The caller stages the new address for
// re-approval, which shows both; the key and pin carry over. Relocate is
// the search alone.
//
// # Refusals
//
// Every error the exchange returns is one of the exported Err values, a
// fixed sentence that carries nothing the network said, or ctx's error
// when the caller's ctx ended first. A Bridge's Reason is one of the
// exported Reason constants.
//
// # Residual
//
// Trust on first use: an attacker already on the LAN at the moment of first
// pairing, answering at the collected address with a Hue-shaped config, is
// pinned instead of the bridge. The host discloses this; later
// certificate changes are refused, never silently accepted.
//
// Imports: the standard library, zeroconf, miekg/dns, x/net/ipv4 and
// daemon's leaf vocabulary.
// Never transports, never daemon. Its subpackage huesim is a Hue bridge
// simulator for tests (this package's and the end-to-end harness's); no
// production code imports it.
package lan
