//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// harness is everything one run sets up.
type harness struct {
	dir  string
	pki  *pki
	pub  *upstream
	priv *upstream
}

// e2eSecret is the Coinbase-style API secret of the scenarios: base64 of 32
// bytes, the shape the exchange issues.
const e2eSecret = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

func setUpHarness(t *testing.T) *harness {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the end-to-end harness needs root (network namespaces); run scripts/e2e.sh as root")
	}
	h := &harness{dir: t.TempDir()}
	h.pki = newPKI(t, h.dir)
	pubNS().setUp(t)
	privNS().setUp(t)
	cert, key := h.pki.leaf(t, "api", "api.e2e.test")
	h.pub = startUpstream(t, pubNS(), upstreamConfig{Role: "pub", Listen: pubNS().nsAddr + ":443", Cert: cert, Key: key, Secret: e2eSecret}, h.dir)
	cert, key = h.pki.leaf(t, "private", "private.e2e.test")
	h.priv = startUpstream(t, privNS(), upstreamConfig{Role: "priv", Listen: privNS().nsAddr + ":443", Cert: cert, Key: key}, h.dir)
	return h
}

// direct sends one GET from the test process itself to an upstream at
// addr, verified by the test CA: the positive control that proves the
// upstream is reachable, so that snugd's refusing to reach it means
// something.
func (h *harness) direct(t *testing.T, addr, host, path string) int {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(h.pki.ca)
	tr := &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host},
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		},
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+path, nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("direct GET https://%s%s: %v", host, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestE2E(t *testing.T) {
	start := time.Now()
	h := setUpHarness(t)
	t.Run("upstreams answer directly", func(t *testing.T) {
		if got := h.direct(t, pubNS().nsAddr+":443", "api.e2e.test", "/ping"); got != 200 {
			t.Errorf("direct GET pub = %d, want 200", got)
		}
		if got := h.direct(t, privNS().nsAddr+":443", "private.e2e.test", "/ping"); got != 200 {
			t.Errorf("direct GET priv = %d, want 200", got)
		}
		if n := h.priv.count("accept"); n != 1 {
			t.Errorf("private upstream accepted %d connections, want 1", n)
		}
	})
	t.Logf("harness took %v", time.Since(start).Round(time.Millisecond))
}
