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
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/transports"
	"github.com/snug/snugd/transports/transporttest"
)

// upstreamHost is the host name the Public tests address; the httptest
// certificate is valid for *.example.com.
const upstreamHost = "api.example.com"

// tlsUpstream starts an httptest TLS server (HTTP/2 when h2) and returns it
// with a pool trusting its certificate.
func tlsUpstream(t testing.TB, h http.Handler, h2 bool) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = h2
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, roots
}

// publicTo returns a Public whose resolver answers addrs for upstreamHost and
// whose dialer routes every addr (port 443) to srv.
func publicTo(t testing.TB, srv *httptest.Server, roots *x509.CertPool, addrs ...string) (*transports.Public, *testutil.Resolver, *testutil.Dialer) {
	t.Helper()
	res := &testutil.Resolver{}
	var answer []netip.Addr
	d := &testutil.Dialer{}
	for _, a := range addrs {
		ip := netip.MustParseAddr(a)
		answer = append(answer, ip)
		d.Route(netip.AddrPortFrom(ip.Unmap(), 443).String(), srv.Listener.Addr().String())
	}
	res.Default = answer // every host; a test scripts a sequence per host
	p := &transports.Public{Resolver: res, Dial: d.Dial, RootCAs: roots}
	t.Cleanup(p.CloseIdleConnections)
	return p, res, d
}

// fetch is the journey the executor makes: Resolve at gate 5, Do at gate 9.
func fetch(ctx context.Context, p *transports.Public, req *http.Request, limit int64) (*transports.Response, error) {
	r, err := p.Resolve(ctx, req.URL.Hostname())
	if err != nil {
		return nil, err
	}
	return p.Do(ctx, req, r, limit)
}

func publicHarness(h2 bool) transporttest.Harness {
	return transporttest.Harness{Start: func(t *testing.T, h http.Handler) transporttest.Target {
		srv, roots := tlsUpstream(t, h, h2)
		p, _, _ := publicTo(t, srv, roots, "192.0.2.10", "2001:db8::10")
		return transporttest.Target{
			URL: "https://" + upstreamHost,
			Do: func(ctx context.Context, req *http.Request, limit int64) (*transports.Response, error) {
				return fetch(ctx, p, req, limit)
			},
		}
	}}
}

// lanTo returns a LAN whose dialer routes addr to srv.
func lanTo(t testing.TB, srv *httptest.Server, addr string) (*transports.LAN, *testutil.Dialer) {
	t.Helper()
	d := &testutil.Dialer{}
	d.Route(addr, srv.Listener.Addr().String())
	l := &transports.LAN{Dial: d.Dial}
	t.Cleanup(l.CloseIdleConnections)
	return l, d
}

func lanHTTPSHarness(h2 bool) transporttest.Harness {
	return transporttest.Harness{Start: func(t *testing.T, h http.Handler) transporttest.Target {
		srv, _ := tlsUpstream(t, h, h2)
		l, _ := lanTo(t, srv, "192.168.1.20:443")
		pin := transports.Fingerprint(srv.Certificate().Raw)
		return transporttest.Target{
			URL: "https://192.168.1.20",
			Do: func(ctx context.Context, req *http.Request, limit int64) (*transports.Response, error) {
				return l.Do(ctx, req, pin, limit)
			},
		}
	}}
}

func lanHTTPHarness() transporttest.Harness {
	return transporttest.Harness{Start: func(t *testing.T, h http.Handler) transporttest.Target {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		l, _ := lanTo(t, srv, "10.0.0.5:8080")
		return transporttest.Target{
			URL: "http://10.0.0.5:8080",
			Do: func(ctx context.Context, req *http.Request, limit int64) (*transports.Response, error) {
				return l.Do(ctx, req, "", limit)
			},
		}
	}}
}

// validity returns the span of every test certificate: 1970 to 2100, so
// that certificates also hold inside a synctest bubble, whose clock starts in
// 2000.
func validity() (from, until time.Time) {
	return time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
}

// deviceCert makes a self-signed certificate like a LAN device's: an ECDSA
// key, the given common name, no host names.
func deviceCert(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	from, until := validity()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    from,
		NotAfter:     until,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// deviceUpstream starts a TLS server presenting cert, reporting connection
// states to connState when it is not nil.
func deviceUpstream(t testing.TB, h http.Handler, cert tls.Certificate, connState func(net.Conn, http.ConnState)) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = connState
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func newRequest(t testing.TB, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatalf("http.NewRequest(%q, %q) = %v", method, url, err)
	}
	return req
}

// reasonOf returns the BlockedError reason of err, or "" when err is not one.
func reasonOf(err error) string {
	var b *transports.BlockedError
	if errors.As(err, &b) {
		return b.Reason
	}
	return ""
}

// hasAny reports whether s contains any of subs.
func hasAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// httpUpstream starts a plain-http server.
func httpUpstream(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// failingResolver fails every lookup with err.
func failingResolver(err error) *testutil.Resolver {
	r := &testutil.Resolver{}
	r.Fail(err)
	return r
}
