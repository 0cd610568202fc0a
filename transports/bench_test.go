package transports_test

import (
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/snug/snugd/transports"
)

// BenchmarkGET compares one GET through Public (Resolve, then Do: the
// executor's gate 5 and gate 9) with a plain http.Client GET to the same TLS
// upstream on loopback. Public reaches it at a documentation-range address
// through the injected resolver and dialer; both keep their connection
// pooled, so this measures the per-request overhead of the checks, the
// per-set transport lookup and the capped read.
func BenchmarkGET(b *testing.B) {
	body := strings.Repeat(`{"id":1,"name":"lamp","on":true},`, 32) // ~1 KiB
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	})
	for _, h2 := range []bool{true, false} {
		proto := map[bool]string{true: "h2", false: "h1"}[h2]
		srv, roots := tlsUpstream(b, h, h2)
		b.Run("public-"+proto, func(b *testing.B) {
			p, _, _ := publicTo(b, srv, roots, "192.0.2.10")
			ctx := b.Context()
			for b.Loop() {
				req, _ := http.NewRequest("GET", "https://"+upstreamHost+"/lights", nil)
				r, err := p.Resolve(ctx, upstreamHost)
				if err != nil {
					b.Fatal(err)
				}
				resp, err := p.Do(ctx, req, r, transports.MaxBodyBytes)
				if err != nil || len(resp.Body) != len(body) {
					b.Fatalf("Do = %v, %v", resp, err)
				}
			}
		})
		b.Run("direct-"+proto, func(b *testing.B) {
			c := srv.Client()
			for b.Loop() {
				req, _ := http.NewRequestWithContext(b.Context(), "GET", srv.URL+"/lights", nil)
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || len(got) != len(body) {
					b.Fatalf("GET = %d bytes, %v", len(got), err)
				}
			}
		})
	}
}

// BenchmarkCheckAddr measures the classifier on a public and a refused
// address.
func BenchmarkCheckAddr(b *testing.B) {
	for _, s := range []string{"8.8.8.8", "169.254.169.254", "2606:4700:4700::1111", "64:ff9b::a9fe:a9fe"} {
		a := netip.MustParseAddr(s)
		b.Run(s, func(b *testing.B) {
			for b.Loop() {
				_ = transports.CheckAddr(a)
			}
		})
	}
}

// BenchmarkCheckHost measures the host check on a name and a literal.
func BenchmarkCheckHost(b *testing.B) {
	for _, s := range []string{"api.example.com", "[2001:db8::1]", "0x7f.1"} {
		b.Run(s, func(b *testing.B) {
			for b.Loop() {
				_ = transports.CheckHost(s)
			}
		})
	}
}
