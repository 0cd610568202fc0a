package transports

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// MaxBodyBytes is the response body cap of the net frame size classes (1 MiB), used when Do is
// given a limit of zero or less.
const MaxBodyBytes = 1 << 20

// Defaults for the zero timeouts of Public and LAN.
const (
	defaultDialTimeout           = 10 * time.Second
	defaultTLSHandshakeTimeout   = 10 * time.Second
	defaultResponseHeaderTimeout = 2 * time.Minute // some APIs think long before they answer
	defaultIdleConnTimeout       = 90 * time.Second

	// maxResponseHeaderBytes bounds the response head. A net-response frame
	// has 64 KiB of margin beyond the body, and the executor
	// whitelists headers anyway.
	maxResponseHeaderBytes = 64 << 10

	// redirectDrain is how much of a 3xx body is read (and dropped) so the
	// connection can be reused; the rest is abandoned with the connection.
	redirectDrain = 16 << 10
)

// DialFunc opens a network connection; (*net.Dialer).DialContext has this
// shape. The transports call it only with an IP literal and a port.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Response is what an upstream answered. Body is nil for a 3xx answer (the
// executor refuses redirects and never needs it) and holds the
// whole body otherwise, never more than the limit. Header is passed through
// as received (canonical keys, repeated values kept); the executor filters
// it. RemoteAddr is the checked address the connection was dialed to, for
// the journal: it must never be disclosed to an app.
//
// A Body of the whole cap's size class may be a pooled buffer: Release
// hands it back for a later response once nothing uses it (or anything
// aliasing it) any more. Not calling Release is always safe.
type Response struct {
	StatusCode int
	Proto      string // "HTTP/1.1" or "HTTP/2.0"
	Header     http.Header
	Body       []byte
	RemoteAddr netip.AddrPort
}

// Release ends the caller's use of Body: a buffer of the cap's size class
// is zeroed, every byte of its capacity (the raw body can hold a
// credential the upstream reflected, and a Read may use all of its buffer
// as scratch), and put back for reuse; Body is then nil. Nothing that
// aliases Body may be used after Release. A second Release does nothing.
func (r *Response) Release() {
	putBody(r.Body)
	r.Body = nil
}

// bodyClass is the capacity of a pooled read buffer: a body at the cap,
// plus the one byte that detects a longer one. Only buffers of exactly
// this capacity are pooled, so the pool holds nothing else and each
// buffer in it is bounded.
const bodyClass = MaxBodyBytes + 1

// bodies holds zeroed read buffers of capacity bodyClass. sync.Pool drops
// what it holds at garbage collection, so it never pins more than what
// recent concurrent requests used.
var bodies sync.Pool

// getBody returns an empty buffer of capacity bodyClass, every byte zero.
func getBody() []byte {
	if b, ok := bodies.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, bodyClass)
}

// putBody zeroes b's whole capacity and pools it, when it has the pooled
// class's capacity; any other buffer is left to the collector.
func putBody(b []byte) {
	if cap(b) != bodyClass {
		return
	}
	b = b[:cap(b)]
	clear(b)
	b = b[:0]
	bodies.Put(&b)
}

// dialedConn marks a connection the transports dialed, and remembers the
// checked address it was dialed to (the injected test dialers connect
// elsewhere, so the socket's own RemoteAddr would not say).
type dialedConn struct {
	net.Conn
	checked netip.AddrPort
}

// roundTrip sends req on rt and reads the answer under limit. It never
// follows a redirect (rt is an *http.Transport, not a Client) and wraps every
// failure in a text-free error.
func roundTrip(ctx context.Context, rt http.RoundTripper, req *http.Request, limit int64) (*Response, error) {
	if limit <= 0 {
		limit = MaxBodyBytes
	}
	var (
		mu     sync.Mutex
		remote netip.AddrPort
	)
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			c := info.Conn
			if tc, ok := c.(*tls.Conn); ok {
				c = tc.NetConn()
			}
			if dc, ok := c.(*dialedConn); ok {
				mu.Lock()
				remote = dc.checked
				mu.Unlock()
			}
		},
	}
	resp, err := rt.RoundTrip(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	if err != nil {
		return nil, failure(ctx, "request", err)
	}
	defer resp.Body.Close()
	mu.Lock()
	out := &Response{
		StatusCode: resp.StatusCode,
		Proto:      resp.Proto,
		Header:     resp.Header,
		RemoteAddr: remote,
	}
	mu.Unlock()
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		// Redirects are not followed: any 3xx, 304 included, goes back to the caller as it
		// is; the body is not wanted.
		_, _ = io.CopyN(io.Discard, resp.Body, redirectDrain)
		return out, nil
	}
	body, err := readCapped(resp.Body, limit, resp.ContentLength)
	if err != nil {
		if errors.Is(err, ErrBodyTooLarge) {
			return nil, ErrBodyTooLarge
		}
		return nil, failure(ctx, "read", err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		// net/http's HTTP/1.1 transport can end a body cleanly when the
		// context is canceled mid-body: closing the TLS connection sends
		// close_notify, the upstream's handler ends, and its last chunk
		// arrives before the socket closes (seen with Go 1.26). What was
		// read may be a truncated body, so it is never delivered.
		putBody(body)
		return nil, &FetchError{Op: "read", Err: ctxErr}
	}
	out.Body = body
	return out, nil
}

// poolJump is the size from which readCapped's growth jumps to the pooled
// class buffer.
const poolJump = 128 << 10

// readCapped reads r to its end, keeping at most limit bytes in memory. If r
// holds more than limit bytes it stops after reading limit+1 and reports
// ErrBodyTooLarge (capped while reading, never after
// buffering, never truncated). hint is the declared length, or -1.
//
// A buffer of the default cap's full size (bodyClass) comes from the pool
// of zeroed read buffers; on an error it goes back, zeroed, at once.
func readCapped(r io.Reader, limit, hint int64) ([]byte, error) {
	size := int64(512)
	if hint > 0 {
		size = min(hint, limit) + 1
	}
	buf := newBodyBuf(0, size)
	for {
		if len(buf) == cap(buf) {
			// Grow geometrically, but never past limit+1; at the default
			// cap, a body that outgrows poolJump/2 without an honest
			// length (chunked, HTTP/2 without content-length) goes
			// straight to a pooled class buffer rather than on through
			// the doublings, each a fresh allocation and a copy of all
			// read so far (a 1 MiB body: a MiB of each).
			next := min(int64(cap(buf))*2, limit+1)
			if limit+1 == bodyClass && next >= poolJump {
				next = bodyClass
			}
			if next <= int64(cap(buf)) {
				next = int64(cap(buf)) + 1
			}
			grown := newBodyBuf(len(buf), next)
			copy(grown, buf)
			putBody(buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			putBody(buf)
			return nil, ErrBodyTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			putBody(buf)
			return nil, err
		}
	}
}

// newBodyBuf returns a buffer of length n and capacity size: a pooled one
// when size is the pooled class.
func newBodyBuf(n int, size int64) []byte {
	if size == bodyClass {
		return getBody()[:n]
	}
	return make([]byte, n, size)
}

// failure wraps err for the caller. A refusal by the dial-time SSRF check
// stays a *BlockedError and a pin mismatch stays ErrPinMismatch; when ctx
// ended, the cause is ctx's error so errors.Is finds context.Canceled or
// context.DeadlineExceeded; everything else is a *FetchError whose text is
// op alone.
func failure(ctx context.Context, op string, err error) error {
	var blocked *BlockedError
	if errors.As(err, &blocked) {
		return &BlockedError{Reason: blocked.Reason}
	}
	if errors.Is(err, ErrPinMismatch) {
		return ErrPinMismatch
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &FetchError{Op: op, Err: ctxErr}
	}
	return &FetchError{Op: op, Err: err}
}

// splitPort returns the port of a request URL, or def when it has none. A
// port that is not a canonical decimal 1–65535 refuses the request.
func splitPort(p string, def uint16) (uint16, error) {
	if p == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 || strconv.FormatUint(n, 10) != p {
		return 0, ErrRequestRefused
	}
	return uint16(n), nil
}

// abandon closes the request body, as a RoundTripper must even when it
// sends nothing, and returns err. (It is not a refusal with a code: the
// daemon's and the API's refuse build those.)
func abandon(req *http.Request, err error) (*Response, error) {
	if req != nil && req.Body != nil {
		req.Body.Close()
	}
	return nil, err
}

// orDefault returns d, or def when d is zero or negative.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
