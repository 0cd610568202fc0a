package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkNet is a GET through the whole executor: gate 1's parse, the
// index lookup, one resolve through the injected resolver, the credential
// read, a header template render, a pooled TLS round trip and gate 10,
// for a small answer and two of 1 MiB (the body cap) that hold no secret:
// plain text, and JSON text as scripts/bench's /big sends it.
func BenchmarkNet(b *testing.B) {
	big := strings.Repeat("0123456789abcdef", 1<<20/16) // scripts/bench's /big before it was JSON
	for _, bc := range []struct{ name, body string }{{"small", `{"ok":true}`}, {"1MiB", big}, {"1MiB-json", benchJSON(1 << 20)}} {
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
			call := NetCall{AppID: "app1", Frame: frame("GET", "https://api.example.com/v1/items", nil), Delivery: DeliveryApp}
			ctx := context.Background()
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				res := r.d.Net(ctx, call)
				if res.Code != "" || res.Status != 200 {
					b.Fatalf("Net = %+v", res)
				}
				res.Release() // as the API handler does once the frame is written
			}
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

// benchJSON is scripts/bench's /big (bigJSON there): n bytes of JSON text,
// an array of small objects, with a '"' every 17 bytes or so, as dense as
// a 1 MiB body's escapes can be and still fit the net frame size class.
func benchJSON(n int) string {
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	var obj []byte
	for i := 0; ; i++ {
		obj = obj[:0]
		if i > 0 {
			obj = append(obj, ',')
		}
		obj = fmt.Appendf(obj, `{"t":%d,"v":[%d.%02d,%d.%02d,1013.%02d,0.%04d,17.%02d,%d.%02d,%d.%d,%d]}`,
			1733011200+60*i, 18+i%9, i%100, 40+i%50, i*7%100, i*3%100, i*37%10000, i*11%100, 3+i%6, i*13%100, 60+i%30, i%10, i*17%1000)
		if b.Len()+len(obj)+1 > n {
			break
		}
		b.Write(obj)
	}
	for b.Len() < n-1 {
		b.WriteByte(' ')
	}
	b.WriteByte(']')
	return b.String()
}
