package api

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/hostauth"

	"github.com/snug/snugd/internal/testutil"
)

// BenchmarkChain measures the security chain and echo around a handler
// that does no I/O: an open route, and an authenticated one from a paired
// web origin (Host, Origin admission, token and binding, CORS headers).
func BenchmarkChain(b *testing.B) {
	d, err := daemon.New(b.Context(), daemon.Config{DataDir: filepath.Join(b.TempDir(), "d")})
	if err != nil {
		b.Fatal(err)
	}
	runDaemon(b, d)
	defer d.Close()
	p, err := d.Hosts().Pair(b.Context(), hostauth.PairRequest{Name: "bench", Surface: hostauth.SurfaceWeb, Origin: webOrigin, Challenge: testutil.ChallengeOf(verifier)}, webOrigin)
	if err != nil {
		b.Fatal(err)
	}
	d.Hosts().Approve(b.Context(), p.Code)
	r, err := d.Hosts().Redeem(b.Context(), p.ID, verifier, webOrigin)
	if err != nil {
		b.Fatal(err)
	}
	h := New(DepsOf(d), Options{}).TCPHandler(4747)
	run := func(b *testing.B, path string, header map[string]string) {
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Host = "127.0.0.1:4747"
			for k, v := range header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("GET %s = %d %s", path, rec.Code, rec.Body)
			}
		}
	}
	b.Run("open", func(b *testing.B) { run(b, "/v1/health", nil) })
	b.Run("authenticated", func(b *testing.B) {
		run(b, "/v1/schemas", map[string]string{"Origin": webOrigin, "Authorization": "Bearer " + r.Token.Reveal()})
	})
}
