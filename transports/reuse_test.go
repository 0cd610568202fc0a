package transports_test

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/transports"
)

// countingUpstream starts a TLS upstream (HTTP/2 when h2) that counts the
// TCP connections it accepts and the protocol each request arrived on.
func countingUpstream(t testing.TB, h2 bool, body string) (srv *httptest.Server, roots *x509.CertPool, conns *atomic.Int64, protos *sync.Map) {
	t.Helper()
	conns = new(atomic.Int64)
	protos = new(sync.Map)
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, _ := protos.LoadOrStore(r.Proto, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		io.WriteString(w, body)
	}))
	srv.EnableHTTP2 = h2
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots = x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, roots, conns, protos
}

// hammer sends total requests through p from workers goroutines, the way the
// executor does (Resolve, then Do), and stops early when ctx ends. It returns
// how many succeeded and the first error.
func hammer(ctx context.Context, p *transports.Public, workers, total int, wantBody string) (int64, error) {
	var (
		next, ok atomic.Int64
		once     sync.Once
		first    error
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(total) && ctx.Err() == nil {
				req, _ := http.NewRequest("GET", "https://"+upstreamHost+"/items", nil)
				r, err := p.Resolve(ctx, upstreamHost)
				var resp *transports.Response
				if err == nil {
					resp, err = p.Do(ctx, req, r, transports.MaxBodyBytes)
				}
				if err == nil && string(resp.Body) != wantBody {
					err = io.ErrUnexpectedEOF
				}
				if err != nil {
					once.Do(func() { first = err })
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	return ok.Load(), first
}

// TestPublicReusesConnections: 16 concurrent workers sending 10,000 requests
// to one HTTP/1.1 upstream open a few dozen connections at most, not one per
// handshake-missed request (issue 15, item 2: the idle pool holds what the
// concurrency needs). An HTTP/2 upstream is spoken to over h2 and needs
// about one connection.
func TestPublicReusesConnections(t *testing.T) {
	const (
		workers = 16
		total   = 10_000
	)
	body := strings.Repeat("x", 512)
	for _, tc := range []struct {
		name     string
		h2       bool
		proto    string
		maxConns int64
	}{
		{"h1", false, "HTTP/1.1", 3 * workers},
		{"h2", true, "HTTP/2.0", workers}, // the first burst races its dials; then one h2 connection carries all
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, roots, conns, protos := countingUpstream(t, tc.h2, body)
			p, _, _ := publicTo(t, srv, roots, "192.0.2.10")
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			n, err := hammer(ctx, p, workers, total, body)
			if err != nil {
				t.Fatalf("a request failed: %v", err)
			}
			if n != total {
				t.Fatalf("%d of %d requests done before the time bound", n, total)
			}
			if c := conns.Load(); c > tc.maxConns {
				t.Errorf("upstream accepted %d connections for %d requests at concurrency %d, want ≤ %d", c, total, workers, tc.maxConns)
			} else {
				t.Logf("upstream accepted %d connection(s) for %d requests", c, total)
			}
			protos.Range(func(k, v any) bool {
				if k != tc.proto {
					t.Errorf("%d request(s) arrived over %v, want all over %s", v.(*atomic.Int64).Load(), k, tc.proto)
				}
				return true
			})
		})
	}
}

// BenchmarkParallelGET measures Public under 16 concurrent callers against
// one upstream, and reports the connections the upstream accepted per 10,000
// requests (the figure issue 15 tracks).
func BenchmarkParallelGET(b *testing.B) {
	body := strings.Repeat(`{"id":1,"name":"lamp","on":true},`, 32) // ~1 KiB
	for _, h2 := range []bool{false, true} {
		b.Run(map[bool]string{true: "h2", false: "h1"}[h2], func(b *testing.B) {
			srv, roots, conns, _ := countingUpstream(b, h2, body)
			p, _, _ := publicTo(b, srv, roots, "192.0.2.10")
			ctx := b.Context()
			b.SetParallelism(8) // 8 × GOMAXPROCS(2) = 16 callers on this machine
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", "https://"+upstreamHost+"/items", nil)
					r, err := p.Resolve(ctx, upstreamHost)
					if err != nil {
						b.Error(err)
						return
					}
					if _, err := p.Do(ctx, req, r, transports.MaxBodyBytes); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(conns.Load())*10_000/float64(b.N), "conns/10k")
		})
	}
}
