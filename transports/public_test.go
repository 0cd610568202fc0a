package transports_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/transports"
)

func okHandler(hits *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits != nil {
			hits.Add(1)
		}
		io.WriteString(w, "ok")
	})
}

// TestResolveRefusesLiteralHosts: a refused URL host never reaches the
// resolver or the dialer.
//
// conformance: P3-X14-16, P3-X14-17, P3-X14-18, P3-X14-19, P3-X14-20, P3-X14-21
func TestResolveRefusesLiteralHosts(t *testing.T) {
	hosts := []string{
		"127.0.0.1", "[::1]", "localhost", "api.localhost",
		"10.0.0.5", "192.168.1.20", "172.16.0.1",
		"169.254.169.254", "[fd00:ec2::254]", "100.100.100.200",
		"100.64.0.1",
		"[fe80::1]", "[::ffff:10.0.0.1]", "[::ffff:127.0.0.1]", "[fe80::1%25eth0]",
		"0x7f.1", "017700000001", "127.1", "2130706433", "0x7f000001",
		"api.example.com.", "metadata",
	}
	for _, host := range hosts {
		t.Run(host, func(t *testing.T) {
			res := &testutil.Resolver{Default: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}
			d := &testutil.Dialer{}
			p := &transports.Public{Resolver: res, Dial: d.Dial}
			r, err := p.Resolve(t.Context(), host)
			if reasonOf(err) == "" {
				t.Fatalf("Resolve(%q) = %v, %v, want a *BlockedError", host, r.Addrs(), err)
			}
			if n := res.Lookups(); n != 0 {
				t.Errorf("Resolve(%q) asked the resolver %d time(s), want 0", host, n)
			}
			if dials := d.Dials(); len(dials) != 0 {
				t.Errorf("Resolve(%q) dialed %q, want nothing", host, dials)
			}
		})
	}
}

// TestResolveRefusesAnswers: a name whose answer holds a refused address is
// refused as a whole, even beside public addresses, and nothing is dialed.
//
// conformance: P3-X14-16, P3-X14-17, P3-X14-18, P3-X14-19, P3-X14-20
func TestResolveRefusesAnswers(t *testing.T) {
	cases := []struct {
		name   string
		answer []string
		reason string
	}{
		{"loopback", []string{"127.0.0.1"}, "loopback"},
		{"loopback-v6", []string{"::1"}, "loopback"},
		{"rfc1918", []string{"10.0.0.5"}, "rfc1918"},
		{"metadata", []string{"169.254.169.254"}, "metadata"},
		{"metadata-v6", []string{"fd00:ec2::254"}, "metadata"},
		{"metadata-azure", []string{"168.63.129.16"}, "metadata"},
		{"metadata-nat64", []string{"64:ff9b::a9fe:a9fe"}, "metadata"},
		{"cgnat", []string{"100.64.0.1"}, "cgnat"},
		{"link-local-v6", []string{"fe80::1"}, "link-local"},
		{"mapped-private", []string{"::ffff:192.168.0.1"}, "rfc1918"},
		{"6to4-loopback", []string{"2002:7f00:1::1"}, "6to4"},
		{"teredo", []string{"2001::1"}, "teredo"},
		{"unspecified", []string{"0.0.0.0"}, "this-network"},
		{"mixed-public-first", []string{"192.0.2.10", "10.0.0.5"}, "rfc1918"},
		{"mixed-private-first", []string{"127.0.0.1", "192.0.2.10"}, "loopback"},
		{"mixed-v6", []string{"2001:db8::10", "192.0.2.10", "fc00::1"}, "unique-local"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			srv, roots := tlsUpstream(t, okHandler(&hits), true)
			p, res, d := publicTo(t, srv, roots, tc.answer...)
			_, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
			if got := reasonOf(err); got != tc.reason {
				t.Fatalf("fetch(answer %v) = %v, want reason %q", tc.answer, err, tc.reason)
			}
			if dials := d.Dials(); len(dials) != 0 {
				t.Errorf("fetch(answer %v) dialed %q, want no dial at all", tc.answer, dials)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("upstream saw %d request(s), want 0", n)
			}
			if n := res.Lookups(); n != 1 {
				t.Errorf("resolver asked %d time(s), want 1", n)
			}
		})
	}
}

// TestDNSRebinding: a resolver that answers public, then private. The
// checked answer is the one dialed; Do never looks the name up again; the
// second, private answer is refused and never dialed.
//
// conformance: P3-X14-16, P3-X14-17
func TestDNSRebinding(t *testing.T) {
	srv, roots := tlsUpstream(t, okHandler(nil), true)
	p, res, d := publicTo(t, srv, roots, "192.0.2.10")
	res.Script(upstreamHost, "192.0.2.10")
	res.Script(upstreamHost, "127.0.0.1")
	d.Route("127.0.0.1:443", srv.Listener.Addr().String()) // would succeed, if ever dialed

	r, err := p.Resolve(t.Context(), upstreamHost)
	if err != nil {
		t.Fatalf("Resolve(%q) first answer = %v, want the public address", upstreamHost, err)
	}
	// Between gate 5 and gate 9 the name now points at loopback. Do must
	// not ask again.
	resp, err := p.Do(t.Context(), newRequest(t, "GET", "https://"+upstreamHost+"/"), r, 0)
	if err != nil {
		t.Fatalf("Do(first Resolved) = %v, want a response", err)
	}
	if want := netip.MustParseAddrPort("192.0.2.10:443"); resp.RemoteAddr != want {
		t.Errorf("Do(first Resolved).RemoteAddr = %v, want %v", resp.RemoteAddr, want)
	}
	if n := res.Lookups(); n != 1 {
		t.Errorf("resolver asked %d time(s) after Resolve and Do, want 1", n)
	}
	// The next request resolves again and meets the rebinding answer.
	_, err = fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
	if got := reasonOf(err); got != "loopback" {
		t.Fatalf("fetch after rebinding = %v, want reason loopback", err)
	}
	if dials := d.Dials(); !slices.Equal(dials, []string{"192.0.2.10:443"}) {
		t.Errorf("dials = %q, want only the checked public address", dials)
	}
}

// TestResolveNoAddress: an empty answer is ErrNoAddress (a fetch failure,
// not a refusal), a not-found answer too, and other resolver failures are a
// *FetchError whose text names neither the host nor the resolver's words.
func TestResolveNoAddress(t *testing.T) {
	notFound := &net.DNSError{Err: "no such host", Name: "secret-host.example.com", IsNotFound: true}
	timeout := &net.DNSError{Err: "i/o timeout", Name: "secret-host.example.com", IsTimeout: true}
	cases := []struct {
		name string
		res  *testutil.Resolver
		want error
	}{
		{"empty", &testutil.Resolver{Default: []netip.Addr{}}, transports.ErrNoAddress},
		{"nil", &testutil.Resolver{}, transports.ErrNoAddress},
		{"not-found", failingResolver(notFound), transports.ErrNoAddress},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &transports.Public{Resolver: tc.res}
			if _, err := p.Resolve(t.Context(), "secret-host.example.com"); !errors.Is(err, tc.want) {
				t.Errorf("Resolve = %v, want %v", err, tc.want)
			}
		})
	}
	p := &transports.Public{Resolver: failingResolver(timeout)}
	_, err := p.Resolve(t.Context(), "secret-host.example.com")
	var fe *transports.FetchError
	if !errors.As(err, &fe) || fe.Op != "resolve" {
		t.Fatalf("Resolve(resolver timeout) = %v, want a *FetchError for resolve", err)
	}
	if hasAny(err.Error(), "secret-host", "timeout") {
		t.Errorf("Resolve(resolver timeout).Error() = %q carries the cause's text", err)
	}
	if !errors.Is(err, timeout) {
		t.Errorf("Resolve(resolver timeout) does not unwrap to the cause for the log")
	}
}

// TestResolveAsksRootedName: the resolver is asked once, for the lowercase
// rooted name, so no search domain is ever appended.
func TestResolveAsksRootedName(t *testing.T) {
	res := &testutil.Resolver{Default: []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("::ffff:192.0.2.11")}}
	p := &transports.Public{Resolver: res}
	r, err := p.Resolve(t.Context(), "API.Example.COM")
	if err != nil {
		t.Fatalf("Resolve = %v", err)
	}
	if !slices.Equal(res.Queries(), []string{"api.example.com."}) {
		t.Errorf("resolver asked %q, want [\"api.example.com.\"]", res.Queries())
	}
	if r.Host() != "api.example.com" {
		t.Errorf("Resolved.Host() = %q, want %q", r.Host(), "api.example.com")
	}
	want := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11")}
	if !slices.Equal(r.Addrs(), want) {
		t.Errorf("Resolved.Addrs() = %v, want %v (deduplicated, unmapped, in order)", r.Addrs(), want)
	}
}

// TestResolveKeepsAtMostMaxAddrs: a long answer keeps its first 16
// addresses, every one of them, and every answer is still checked: a
// refused one past the sixteenth refuses the request.
func TestResolveKeepsAtMostMaxAddrs(t *testing.T) {
	var many []netip.Addr
	for i := range 20 {
		many = append(many, netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i)}))
	}
	p := &transports.Public{Resolver: &testutil.Resolver{Default: many}}
	r, err := p.Resolve(t.Context(), "api.example.com")
	if err != nil || !slices.Equal(r.Addrs(), many[:16]) {
		t.Fatalf("Resolve(20 answers) = %v, %v; want the first 16", r.Addrs(), err)
	}
	p = &transports.Public{Resolver: &testutil.Resolver{Default: append(many, netip.MustParseAddr("127.0.0.1"))}}
	if _, err := p.Resolve(t.Context(), "api.example.com"); reasonOf(err) != "loopback" {
		t.Fatalf("Resolve(20 answers, then loopback) = %v, want reason loopback", err)
	}
}

// TestDoRefusesShape: Do sends nothing for a request it will not carry.
func TestDoRefusesShape(t *testing.T) {
	var hits atomic.Int32
	srv, roots := tlsUpstream(t, okHandler(&hits), true)
	p, _, d := publicTo(t, srv, roots, "192.0.2.10")
	r, err := p.Resolve(t.Context(), upstreamHost)
	if err != nil {
		t.Fatal(err)
	}
	hostOverride := newRequest(t, "GET", "https://"+upstreamHost+"/")
	hostOverride.Host = "evil.example.com"
	cases := []struct {
		name string
		req  *http.Request
		r    transports.Resolved
		want error
	}{
		{"http", newRequest(t, "GET", "http://"+upstreamHost+"/"), r, transports.ErrScheme},
		{"ftp", newRequest(t, "GET", "ftp://"+upstreamHost+"/"), r, transports.ErrScheme},
		{"other-host", newRequest(t, "GET", "https://other.example.com/"), r, transports.ErrRequestRefused},
		{"userinfo", newRequest(t, "GET", "https://user:pw@"+upstreamHost+"/"), r, transports.ErrRequestRefused},
		{"empty-userinfo", newRequest(t, "GET", "https://@"+upstreamHost+"/"), r, transports.ErrRequestRefused},
		{"host-override", hostOverride, r, transports.ErrRequestRefused},
		{"port-zero", newRequest(t, "GET", "https://"+upstreamHost+":0/"), r, transports.ErrRequestRefused},
		{"port-leading-zero", newRequest(t, "GET", "https://"+upstreamHost+":0443/"), r, transports.ErrRequestRefused},
		{"port-too-big", newRequest(t, "GET", "https://"+upstreamHost+":65536/"), r, transports.ErrRequestRefused},
		{"zero-resolved", newRequest(t, "GET", "https://"+upstreamHost+"/"), transports.Resolved{}, transports.ErrNoAddress},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := &closeRecorder{Reader: strings.NewReader("x")}
			tc.req.Body = body
			_, err := p.Do(t.Context(), tc.req, tc.r, 0)
			if !errors.Is(err, tc.want) {
				t.Errorf("Do(%s) = %v, want %v", tc.name, err, tc.want)
			}
			if !body.closed.Load() {
				t.Errorf("Do(%s) left the request body open", tc.name)
			}
		})
	}
	if dials := d.Dials(); len(dials) != 0 || hits.Load() != 0 {
		t.Errorf("refused requests dialed %q and reached the upstream %d time(s), want nothing", dials, hits.Load())
	}
}

type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

// TestDialFallback: a dial failure moves to the next checked address, in
// the resolver's order; the response names the address that answered.
func TestDialFallback(t *testing.T) {
	srv, roots := tlsUpstream(t, okHandler(nil), true)
	p, _, d := publicTo(t, srv, roots, "192.0.2.1", "2001:db8::2", "192.0.2.3")
	d.Refuse("192.0.2.1:443")
	d.Refuse("[2001:db8::2]:443")
	resp, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
	if err != nil {
		t.Fatalf("fetch = %v, want the third address to answer", err)
	}
	if want := netip.MustParseAddrPort("192.0.2.3:443"); resp.RemoteAddr != want {
		t.Errorf("RemoteAddr = %v, want %v", resp.RemoteAddr, want)
	}
	if want := []string{"192.0.2.1:443", "[2001:db8::2]:443", "192.0.2.3:443"}; !slices.Equal(d.Dials(), want) {
		t.Errorf("dials = %q, want %q", d.Dials(), want)
	}
	// All fail: a *FetchError, text free of addresses.
	d.Refuse("192.0.2.3:443")
	p.CloseIdleConnections()
	_, err = fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/?q=secret"), 0)
	var fe *transports.FetchError
	if !errors.As(err, &fe) {
		t.Fatalf("fetch with every dial failing = %v, want a *FetchError", err)
	}
	if hasAny(err.Error(), "192.0.2", "2001:db8", upstreamHost, "secret") {
		t.Errorf("fetch error %q names an address, the host or the query", err)
	}
}

// TestDialUsesURLPort: the checked address is dialed on the URL's port.
func TestDialUsesURLPort(t *testing.T) {
	srv, roots := tlsUpstream(t, okHandler(nil), false)
	p, _, d := publicTo(t, srv, roots, "192.0.2.10")
	d.Route("192.0.2.10:8443", srv.Listener.Addr().String())
	if _, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+":8443/"), 0); err != nil {
		t.Fatalf("fetch(:8443) = %v", err)
	}
	if want := []string{"192.0.2.10:8443"}; !slices.Equal(d.Dials(), want) {
		t.Errorf("dials = %q, want %q", d.Dials(), want)
	}
}

// TestPoolKeyedByResolvedSet: a pooled connection serves only requests
// whose Resolved holds exactly the set it was dialed for. Same set: reused.
// Any other set: a new connection to one of the new set's addresses, never
// the old connection.
func TestPoolKeyedByResolvedSet(t *testing.T) {
	for _, h2 := range []bool{true, false} {
		t.Run(map[bool]string{true: "h2", false: "h1"}[h2], func(t *testing.T) {
			var conns atomic.Int32
			srv := httptest.NewUnstartedServer(okHandler(nil))
			srv.EnableHTTP2 = h2
			srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.StartTLS()
			t.Cleanup(srv.Close)
			roots := x509.NewCertPool()
			roots.AddCert(srv.Certificate())
			p, res, d := publicTo(t, srv, roots, "192.0.2.1", "192.0.2.2")
			a1, a2 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
			for _, answer := range [][]netip.Addr{{a1}, {a1}, {a2}, {a2, a1}, {a1, a2}} {
				var addrs []string
				for _, a := range answer {
					addrs = append(addrs, a.String())
				}
				res.Script(upstreamHost, addrs...)
			}
			steps := []struct {
				remote string
				dials  []string
				conns  int32
			}{
				{"192.0.2.1:443", []string{"192.0.2.1:443"}, 1},
				{"192.0.2.1:443", []string{"192.0.2.1:443"}, 1},                                   // same set: pooled
				{"192.0.2.2:443", []string{"192.0.2.1:443", "192.0.2.2:443"}, 2},                  // {.2} excludes .1: new connection
				{"192.0.2.2:443", []string{"192.0.2.1:443", "192.0.2.2:443", "192.0.2.2:443"}, 3}, // {.2,.1}: a set of its own
				{"192.0.2.2:443", []string{"192.0.2.1:443", "192.0.2.2:443", "192.0.2.2:443"}, 3}, // same set, other order: pooled
			}
			for i, st := range steps {
				resp, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
				if err != nil {
					t.Fatalf("step %d: fetch = %v", i, err)
				}
				if resp.RemoteAddr.String() != st.remote {
					t.Errorf("step %d: RemoteAddr = %v, want %v", i, resp.RemoteAddr, st.remote)
				}
				if !slices.Equal(d.Dials(), st.dials) {
					t.Errorf("step %d: dials = %q, want %q", i, d.Dials(), st.dials)
				}
				if n := conns.Load(); n != st.conns {
					t.Errorf("step %d: upstream saw %d connection(s), want %d", i, n, st.conns)
				}
			}
			if want := "HTTP/1.1"; h2 {
				want = "HTTP/2.0"
				resp, _ := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
				if resp == nil || resp.Proto != want {
					t.Errorf("Proto = %v, want %s", resp, want)
				}
			}
		})
	}
}

// TestTLSVerifiesHost: the certificate is verified against the host name
// and the configured roots; a failure sends no request.
func TestTLSVerifiesHost(t *testing.T) {
	var hits atomic.Int32
	srv, roots := tlsUpstream(t, okHandler(&hits), true)
	t.Run("wrong-name", func(t *testing.T) {
		// The httptest certificate covers *.example.com, not example.org.
		d := &testutil.Dialer{}
		d.Route("192.0.2.10:443", srv.Listener.Addr().String())
		p := &transports.Public{
			Resolver: &testutil.Resolver{Default: []netip.Addr{netip.MustParseAddr("192.0.2.10")}},
			Dial:     d.Dial,
			RootCAs:  roots,
		}
		t.Cleanup(p.CloseIdleConnections)
		_, err := fetch(t.Context(), p, newRequest(t, "GET", "https://api.example.org/"), 0)
		var fe *transports.FetchError
		var cv *tls.CertificateVerificationError
		if !errors.As(err, &fe) || !errors.As(err, &cv) {
			t.Errorf("fetch(name outside the certificate) = %v, want a *FetchError caused by certificate verification", err)
		}
	})
	t.Run("system-roots", func(t *testing.T) {
		p, _, _ := publicTo(t, srv, nil, "192.0.2.10")
		_, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
		var cv *tls.CertificateVerificationError
		if !errors.As(err, &cv) {
			t.Errorf("fetch(test certificate, system roots) = %v, want a certificate verification failure", err)
		}
	})
	if n := hits.Load(); n != 0 {
		t.Errorf("upstream saw %d request(s) over unverified TLS, want 0", n)
	}
}

// TestIPLiteralHost: a documentation-range literal host is judged as it
// stands, never looked up, dialed as itself and verified against its IP SAN.
func TestIPLiteralHost(t *testing.T) {
	for _, lit := range []string{"192.0.2.10", "2001:db8::10"} {
		t.Run(lit, func(t *testing.T) {
			ip := netip.MustParseAddr(lit)
			cert, roots := ipCert(t, ip)
			srv := httptest.NewUnstartedServer(okHandler(nil))
			srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
			srv.StartTLS()
			t.Cleanup(srv.Close)
			res := &testutil.Resolver{}
			d := &testutil.Dialer{}
			ap := netip.AddrPortFrom(ip, 443).String()
			d.Route(ap, srv.Listener.Addr().String())
			p := &transports.Public{Resolver: res, Dial: d.Dial, RootCAs: roots}
			t.Cleanup(p.CloseIdleConnections)
			host := lit
			if ip.Is6() {
				host = "[" + lit + "]"
			}
			resp, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+host+"/"), 0)
			if err != nil {
				t.Fatalf("fetch(https://%s/) = %v", host, err)
			}
			if string(resp.Body) != "ok" || res.Lookups() != 0 || !slices.Equal(d.Dials(), []string{ap}) {
				t.Errorf("fetch(https://%s/) = %q, resolver calls %d, dials %q; want ok, 0, [%s]", host, resp.Body, res.Lookups(), d.Dials(), ap)
			}
		})
	}
}

// ipCert makes a self-signed certificate for one IP address and a pool
// trusting it.
func ipCert(t *testing.T, ip netip.Addr) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	from, until := validity()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "literal"},
		NotBefore:             from,
		NotAfter:              until,
		IPAddresses:           []net.IP{ip.AsSlice()},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, roots
}

// TestLimitDefault: a zero limit is MaxBodyBytes; a smaller limit holds.
//
// conformance: P3-X14-39
func TestLimitDefault(t *testing.T) {
	srv, roots := tlsUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(make([]byte, transports.MaxBodyBytes+1))
	}), true)
	p, _, _ := publicTo(t, srv, roots, "192.0.2.10")
	for _, limit := range []int64{0, -1, 100} {
		if _, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), limit); !errors.Is(err, transports.ErrBodyTooLarge) {
			t.Errorf("fetch(1 MiB + 1 body, limit %d) = %v, want ErrBodyTooLarge", limit, err)
		}
	}
	if _, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), transports.MaxBodyBytes+1); err != nil {
		t.Errorf("fetch(1 MiB + 1 body, limit 1 MiB + 1) = %v, want the body", err)
	}
}

// TestConcurrentFetches exercises the pool and the trace under -race.
func TestConcurrentFetches(t *testing.T) {
	srv, roots := tlsUpstream(t, okHandler(nil), true)
	p, res, _ := publicTo(t, srv, roots, "192.0.2.1", "192.0.2.2")
	res.Script(upstreamHost, "192.0.2.1")
	res.Script(upstreamHost, "192.0.2.2")
	res.Script(upstreamHost, "192.0.2.1", "192.0.2.2")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	errc := make(chan error, 32)
	for range 32 {
		go func() {
			resp, err := fetch(ctx, p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
			if err == nil && string(resp.Body) != "ok" {
				err = errors.New("wrong body")
			}
			errc <- err
		}()
	}
	for range 32 {
		if err := <-errc; err != nil {
			t.Errorf("concurrent fetch = %v", err)
		}
	}
}
