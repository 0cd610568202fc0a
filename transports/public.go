package transports

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"
)

// publicIdleConns is how many idle connections one Public transport keeps
// (per (host, address set); at most poolSize such transports exist). It is
// sized for the concurrency the loopback API serves in a burst.
const publicIdleConns = 64

// maxAddrs bounds how many checked addresses a Resolved keeps (and Do may
// try in turn). Every answer is still checked; only the tail is dropped.
const maxAddrs = 16

// Resolver looks up the addresses of a host name. *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Public is the public HTTPS transport (gates 5, 9 and 10). It
// resolves a host once, refuses the request if any answer is refused, dials
// only the checked addresses, verifies the certificate for the host name,
// ignores proxy settings, never follows a redirect, and reads the body under
// a cap. Nothing in it can turn a check off.
//
// The zero Public is ready to use and is what a deployment uses. A Public
// must not be copied after first use; it is safe for concurrent use. Call
// CloseIdleConnections when done with it.
type Public struct {
	// Resolver answers the DNS lookups. Nil means net.DefaultResolver. Tests
	// only. It is asked for the rooted name ("api.example.com.") so that no
	// search domain is ever appended, with network "ip".
	Resolver Resolver

	// Dial opens TCP connections. Nil means a net.Dialer whose Control hook
	// refuses any socket whose address CheckAddr refuses (a backstop behind
	// the Resolve check). Tests only: an injected Dial is handed only
	// addresses that passed CheckAddr and belong to the request's Resolved,
	// and may connect them wherever the test likes.
	Dial DialFunc

	// RootCAs verifies upstream certificates. Nil means the system roots.
	RootCAs *x509.CertPool

	// DialTimeout bounds one connection attempt (zero: 10s).
	// TLSHandshakeTimeout bounds the handshake (zero: 10s).
	// ResponseHeaderTimeout bounds the wait for the response head after the
	// request is written (zero: 2m). IdleConnTimeout is how long an idle
	// pooled connection is kept (zero: 90s). The caller's context bounds the
	// whole exchange, body included.
	DialTimeout           time.Duration
	TLSHandshakeTimeout   time.Duration
	ResponseHeaderTimeout time.Duration
	IdleConnTimeout       time.Duration

	// Answers, when set, lets Resolve reuse a vetted answer for the same
	// host name for a while (see Answers) instead of asking Resolver on
	// every request. Nil: every Resolve of a host name looks it up.
	Answers *Answers

	pool pool
}

// Resolved is the outcome of Public.Resolve: a host and the addresses that
// passed the SSRF check, in the resolver's order. Only Resolve makes one; the
// zero Resolved holds no address and Do refuses it.
type Resolved struct {
	host  string     // lowercase host name, or the canonical IP literal
	lit   netip.Addr // the literal, when host is one
	addrs []netip.Addr
	key   string // pool key: host and the sorted address set
}

// Host returns the host the addresses belong to (lowercase).
func (r Resolved) Host() string { return r.host }

// Addrs returns a copy of the checked addresses, in dialing order.
func (r Resolved) Addrs() []netip.Addr { return slices.Clone(r.addrs) }

// matches reports whether hostname (a request URL's Hostname) names r's host.
func (r Resolved) matches(hostname string) bool {
	if r.lit.IsValid() {
		a, err := netip.ParseAddr(hostname)
		return err == nil && a == r.lit
	}
	return strings.EqualFold(hostname, r.host)
}

// Resolve runs the SSRF gate for host, the literal host of the request URL:
// the host rules (parseHost), then (for a host name) ONE lookup whose every answer must pass
// CheckAddr. Any refused answer refuses the whole request with a
// *BlockedError, so a mixed public/private answer never dials
// anything. An empty answer is ErrNoAddress; a resolver failure a
// *FetchError. An IP literal is judged as it stands and not looked up.
// With Answers set, a host name whose vetted answer Answers still keeps
// gets that very Resolved back without a lookup: the addresses checked
// then are the addresses Do dials.
//
// The executor calls Resolve at gate 5 and hands the result to Do at gate 9;
// nothing is looked up in between, so DNS rebinding cannot slip between the
// check and the connect.
func (p *Public) Resolve(ctx context.Context, host string) (Resolved, error) {
	lit, err := parseHost(host)
	if err != nil {
		return Resolved{}, err
	}
	if lit.IsValid() {
		a := lit.Unmap()
		return newResolved(lit.String(), lit, []netip.Addr{a}), nil
	}
	name := strings.ToLower(host)
	if p.Answers == nil {
		r, _, err := p.lookup(ctx, name)
		return r, err
	}
	r, seq, ok := p.Answers.lookup(name, time.Now())
	if ok {
		return r, nil
	}
	r, ttl, err := p.lookup(ctx, name)
	if err != nil {
		p.Answers.drop(name, seq)
		return Resolved{}, err
	}
	p.Answers.keep(name, seq, r, time.Now(), ttl)
	return r, nil
}

// lookup asks the resolver for name (lowercase) once and checks every
// answer; ttl is how long the answer may be kept (AnswerWindow unless the
// resolver reports a TTL).
func (p *Public) lookup(ctx context.Context, name string) (_ Resolved, ttl time.Duration, _ error) {
	var (
		answers []netip.Addr
		err     error
	)
	ttl = AnswerWindow
	if tr, ok := p.resolver().(TTLResolver); ok {
		answers, ttl, err = tr.LookupNetIPTTL(ctx, "ip", name+".")
	} else {
		answers, err = p.resolver().LookupNetIP(ctx, "ip", name+".")
	}
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return Resolved{}, 0, ErrNoAddress
		}
		return Resolved{}, 0, failure(ctx, "resolve", err)
	}
	if len(answers) == 0 {
		return Resolved{}, 0, ErrNoAddress
	}
	addrs := make([]netip.Addr, 0, min(len(answers), maxAddrs))
	for _, a := range answers {
		if err := CheckAddr(a); err != nil {
			return Resolved{}, 0, err // one refused answer refuses the request
		}
		a = a.Unmap()
		if len(addrs) < maxAddrs && !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return newResolved(name, netip.Addr{}, addrs), ttl, nil
}

func newResolved(host string, lit netip.Addr, addrs []netip.Addr) Resolved {
	sorted := slices.Clone(addrs)
	slices.SortFunc(sorted, netip.Addr.Compare)
	var k strings.Builder
	k.WriteString(host)
	for _, a := range sorted {
		k.WriteByte('|')
		k.WriteString(a.String())
	}
	return Resolved{host: host, lit: lit, addrs: addrs, key: k.String()}
}

func (p *Public) resolver() Resolver {
	if p.Resolver != nil {
		return p.Resolver
	}
	return net.DefaultResolver
}

// Do sends req to the addresses of r and returns the answer with its body
// read under limit bytes (limit ≤ 0 means MaxBodyBytes); a longer body is
// ErrBodyTooLarge, never a truncated one.
//
// req must be an https request for r's host (anything else is ErrScheme or
// ErrRequestRefused, and nothing is sent); ctx governs it, not req's own
// context. Do dials only the addresses in r, in order, moving to the next
// when a dial fails, and reuses only connections dialed for the same host and
// the same address set. The certificate is verified for the host name. Proxy
// settings in the environment are ignored. A 3xx answer, 304 included, comes
// back as a Response with a nil Body and is never followed.
//
// Errors: *BlockedError (an address failed the dial-time backstop),
// ErrBodyTooLarge, ErrNoAddress, ErrScheme, ErrRequestRefused, or a
// *FetchError; their texts never carry the URL or a header value. Like any
// RoundTripper, Do closes req.Body, even on error.
func (p *Public) Do(ctx context.Context, req *http.Request, r Resolved, limit int64) (*Response, error) {
	if len(r.addrs) == 0 {
		return abandon(req, ErrNoAddress)
	}
	if req.URL == nil || req.URL.Scheme != "https" {
		return abandon(req, ErrScheme)
	}
	u := req.URL
	if u.User != nil || u.Opaque != "" || !r.matches(u.Hostname()) || (req.Host != "" && req.Host != u.Host) {
		return abandon(req, ErrRequestRefused)
	}
	if _, err := splitPort(u.Port(), 443); err != nil {
		return abandon(req, err)
	}
	rt := p.pool.get(r.key, func() *http.Transport { return p.newTransport(r) })
	ctx = context.WithValue(ctx, checkedKey{}, r.key)
	return roundTrip(ctx, rt, req, limit)
}

// CloseIdleConnections closes every idle pooled connection.
func (p *Public) CloseIdleConnections() { p.pool.closeIdle() }

// checkedKey carries the pool key of the request's Resolved into the dial
// context (net/http keeps the request context's values for the dial).
type checkedKey struct{}

// newTransport builds the transport for one (host, address set). Its dialer
// is bound to r: it can dial nothing but r's addresses, and refuses a dial
// whose request context names another set.
func (p *Public) newTransport(r Resolved) *http.Transport {
	dial := p.Dial
	if dial == nil {
		d := &net.Dialer{
			Timeout:   orDefault(p.DialTimeout, defaultDialTimeout),
			KeepAlive: 30 * time.Second,
			Control:   publicControl,
		}
		dial = d.DialContext
	}
	dialTimeout := orDefault(p.DialTimeout, defaultDialTimeout)
	host, addrs, key := r.host, slices.Clone(r.addrs), r.key
	return &http.Transport{
		Proxy: nil, // never a proxy, whatever the environment says
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			h, portStr, err := net.SplitHostPort(address)
			if err != nil || !(Resolved{host: host, lit: r.lit}).matches(h) {
				return nil, ErrRequestRefused
			}
			if k, _ := ctx.Value(checkedKey{}).(string); k != key {
				return nil, ErrRequestRefused
			}
			port, err := splitPort(portStr, 443)
			if err != nil {
				return nil, err
			}
			var lastErr error
			for _, a := range addrs {
				if err := CheckAddr(a); err != nil {
					return nil, err // cannot happen: Resolve checked them
				}
				ap := netip.AddrPortFrom(a, port)
				dctx, cancel := context.WithTimeout(ctx, dialTimeout)
				c, err := dial(dctx, "tcp", ap.String())
				cancel()
				if err == nil {
					return &dialedConn{Conn: c, checked: ap}, nil
				}
				lastErr = err
				if ctx.Err() != nil {
					break
				}
			}
			return nil, lastErr
		},
		TLSClientConfig: &tls.Config{
			RootCAs:    p.RootCAs,
			MinVersion: tls.VersionTLS12,
			// ServerName stays empty: net/http fills in the URL's host,
			// which Do has checked equals r's host.
		},
		ForceAttemptHTTP2:     true, // a custom DialContext turns HTTP/2 off otherwise
		TLSHandshakeTimeout:   orDefault(p.TLSHandshakeTimeout, defaultTLSHandshakeTimeout),
		ResponseHeaderTimeout: orDefault(p.ResponseHeaderTimeout, defaultResponseHeaderTimeout),
		IdleConnTimeout:       orDefault(p.IdleConnTimeout, defaultIdleConnTimeout),
		// One transport serves one (host, address set), so the per-host and
		// total idle limits are the same number: enough for the concurrency
		// the daemon serves, so a burst of parallel requests keeps its
		// connections instead of paying a TLS handshake for a third of them
		//. An HTTP/2 upstream needs one connection anyway.
		MaxIdleConns:           publicIdleConns,
		MaxIdleConnsPerHost:    publicIdleConns,
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		// No transparent gzip: the request carries exactly the caller's
		// headers and the body comes back exactly as sent.
		DisableCompression: true,
	}
}

// publicControl is the default dialer's last look at the socket address
// before connect(2): a backstop that refuses what CheckAddr refuses even if a
// caller bypassed Resolve.
func publicControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &BlockedError{Reason: reasonMalformed}
	}
	return CheckAddr(ap.Addr())
}
