package daemon

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/internal/benchdata"
)

// BenchmarkNet is a GET through the whole executor: gate 1's parse, the
// index lookup, one resolve through the injected resolver, the credential
// read, a header template render, a pooled TLS round trip and gate 10,
// for a small answer and two of 1 MiB (the body cap) that hold no secret:
// plain text, and JSON text as scripts/bench's /big sends it.
func BenchmarkNet(b *testing.B) {
	big := strings.Repeat("0123456789abcdef", 1<<20/16) // scripts/bench's /big before it was JSON
	for _, bc := range []struct{ name, body string }{{"small", `{"ok":true}`}, {"1MiB", big}, {"1MiB-json", string(benchdata.Readings(1 << 20))}} {
		b.Run(bc.name, func(b *testing.B) {
			r := newRig(b)
			r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", strconv.Itoa(len(bc.body)))
				io.WriteString(w, bc.body)
			})
			v := apiKeyReq("ex", apiHost)
			v["request"] = map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}}
			r.connect(b, "app1", v, map[string]string{"api_key": secretKey})
			call := fetch.NetCall{AppID: "app1", Frame: frame("GET", "https://api.example.com/v1/items", nil), Delivery: fetch.DeliveryApp}
			ctx := context.Background()
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			var took []time.Duration // each request's time, for the p50
			for b.Loop() {
				start := time.Now()
				res := r.d.exec.Net(ctx, call)
				took = append(took, time.Since(start))
				if res.Code != "" || res.Status != 200 {
					b.Fatalf("Net = %+v", res)
				}
				res.Release() // as the API handler does once the frame is written
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
		})
	}
}

// BenchmarkDirectClient is the same GET with a plain http.Client to the
// same upstream: the floor BenchmarkNet/small is measured against.
func BenchmarkDirectClient(b *testing.B) {
	up := newTestUpstream(b)
	client := up.srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Get(up.srv.URL + "/v1/items")
		if err != nil {
			b.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
}
