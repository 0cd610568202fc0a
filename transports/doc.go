// Package transports holds snugd's outbound fetchers: public HTTPS with
// dial-time SSRF checks (the address classifier lives here) and HTTP(S) to a
// LAN device's RFC-1918 literal with a TOFU certificate pin. They take pins,
// limits and resolvers as plain values and report what they saw; they store
// nothing and know nothing of grants, SQL or the API.
//
// # The SSRF classifier
//
// CheckAddr judges one address against a table of refused prefixes (every
// IANA special-purpose block that is not globally reachable, multicast,
// reserved, broadcast, everything in IPv6 outside 2000::/3, cloud metadata
// endpoints), by longest match; IPv4-mapped and NAT64 well-known-prefix
// addresses are judged by the IPv4 address they embed, zones are refused, and
// the documentation blocks are the one deliberate exception. Resolve first judges
// the literal host of a URL: literals go to CheckAddr, numeric spellings and
// trailing dots fail closed, localhost and single labels are refused.
// CheckLANHost admits the LAN device class: a canonical RFC-1918 dotted quad.
// A refusal is a *BlockedError whose Reason is a fixed word.
//
// # Public
//
// The executor runs gate 5 before the user's confirm (gate 6) and fetches at
// gate 9, so Public works in two steps with nothing looked up in between:
//
//	r, err := pub.Resolve(ctx, u.Hostname()) // gate 5: host rules, one lookup, every answer checked
//	...                                      // gate 6 (confirm), 7 (strip), 8 (inject)
//	resp, err := pub.Do(ctx, req, r, limit)  // gate 9 and 10: dial r's addresses only, read under limit
//
// Do dials only r's checked addresses (a dialer Control hook re-checks the
// socket address as a backstop), verifies TLS for the host name, ignores
// proxy variables, returns a 3xx as a response instead of following it, and
// reads the body under the limit while reading. Connections are pooled per
// (host, exact set of checked addresses), so a connection dialed for one
// Resolved never serves a request whose Resolved excludes its address;
// HTTP/2 is negotiated when the upstream offers it.
//
// With an Answers, Resolve reuses a name's vetted answer for up to
// AnswerWindow (less when a TTLResolver reports a shorter TTL) instead of
// looking it up per request: only answers whose every address passed are
// kept, a refused or failed lookup drops what was kept, the reused
// Resolved is the checked one (so the dial still goes to exactly its
// addresses), and at most MaxAnswers names are held.
//
// # LAN
//
// LAN is the only place gate 5 stands down, and only for the LAN class: it
// dials the URL's RFC-1918 literal itself (no DNS), and for https trusts the
// device's leaf certificate by its SHA-256 pin alone (Fingerprint), aborting
// the handshake on a mismatch before a request byte is written. Probe reads
// the fingerprint for first pairing. Whether a request may take the LAN path
// (desktop policy, ceiling) is the executor's decision.
//
// # Errors
//
// No error text carries a URL, a query, a header value or an address; causes
// are kept behind Unwrap for the log. See errors.go for the vocabulary and
// how the executor maps it to wire codes.
//
// # What the executor still owns
//
// The transports send the caller's headers as given and add none (no
// transparent gzip), so a compressed answer arrives compressed: the executor
// must not forward an app's Accept-Encoding if it wants gate 10's value scrub
// to see plain text. The caller's context bounds the whole exchange.
//
// Imports: the standard library and daemon's leaf vocabulary (daemon/errcode,
// daemon/wire) only; today it needs neither.
package transports
