package transports

import "errors"

// The errors below are the whole vocabulary the transports answer with. None of
// their Error() texts carries a URL, a query, a header value or an address: the
// executor may show them, and it logs the causes kept behind Unwrap.
//
// How the executor maps them (daemon's choice, listed here for the reader):
// *BlockedError → NET_SSRF_BLOCKED; ErrBodyTooLarge → NET_SIZE_EXCEEDED; ErrNoAddress and *FetchError → NET_FETCH_FAILED;
// ErrPinMismatch, ErrPinRequired → NET_FETCH_FAILED; ErrScheme and
// ErrRequestRefused are the caller's own mistakes and never reach the wire as
// anything but a refusal.
var (
	// ErrBodyTooLarge reports a response body longer than the limit given to
	// Do. The transport stops reading at limit+1 bytes and closes the body; no
	// truncated body is ever returned.
	ErrBodyTooLarge = errors.New("response body exceeds the size limit")

	// ErrNoAddress reports a DNS answer that held no address (a
	// fetch failure, not an SSRF refusal), or a Resolved that holds none.
	ErrNoAddress = errors.New("dns answer holds no address")

	// ErrScheme reports a request URL whose scheme the transport does not
	// speak: Public speaks https only, LAN http and https.
	ErrScheme = errors.New("scheme refused by the transport")

	// ErrRequestRefused reports a request whose shape the transport will not
	// send: userinfo or an opaque URL, a Host override that differs from the
	// URL, a bad port, or (Public) a URL host other than the Resolved one.
	ErrRequestRefused = errors.New("request refused by the transport")

	// ErrPinRequired reports an https request to a LAN device without a
	// certificate pin of 64 lowercase hex digits (no pin, no trust).
	ErrPinRequired = errors.New("lan https needs a certificate pin")

	// ErrPinMismatch reports a LAN device whose leaf certificate does not
	// match the pin. The handshake is aborted before any request byte is
	// written (a mismatch fails closed).
	ErrPinMismatch = errors.New("device certificate does not match the pin")
)

// BlockedError reports that the SSRF guard refused a
// host or an address. Reason is a fixed word naming the class, never the
// address itself:
//
//	malformed, trailing-dot, localhost, single-label   (the host rules)
//	invalid, zone                                       (an address the classifier cannot judge)
//	this-network, unspecified, loopback, rfc1918, cgnat, link-local, metadata,
//	ietf-protocol, benchmarking, 6to4, multicast, reserved, broadcast,
//	ipv4-compatible, nat64-local, discard-only, dummy, teredo, unique-local,
//	site-local, ipv6-non-global                         (CheckAddr's table)
//	not-rfc1918                                         (LAN: the host is not the LAN class)
type BlockedError struct {
	Reason string
}

func (e *BlockedError) Error() string {
	return "destination refused by the ssrf guard: " + e.Reason
}

// FetchError reports a transport failure: the resolver failed, no checked
// address could be dialed, TLS failed, the upstream broke off, or the context
// ended. Op is a fixed word ("resolve", "request", "read", "tls"); Error() is
// built from Op alone. Err is the cause, for the log only: net/http and the
// resolver put host names, addresses and sometimes URLs in their texts.
// errors.Is(err, context.Canceled) and context.DeadlineExceeded work through
// Unwrap when the caller's context ended.
type FetchError struct {
	Op  string
	Err error
}

func (e *FetchError) Error() string { return "fetch failed: " + e.Op }

// Unwrap returns the cause, for logging and errors.Is; never show it to an app.
func (e *FetchError) Unwrap() error { return e.Err }
