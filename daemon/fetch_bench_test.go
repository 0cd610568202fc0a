package daemon

import (
	"context"
	"io"
	"testing"
)

// BenchmarkNet is a GET through the whole executor: gate 1's parse, the
// index lookup, one resolve through the injected resolver, the credential
// read, a header template render, a pooled TLS round trip and gate 10.
func BenchmarkNet(b *testing.B) {
	r := newRig(b)
	v := apiKeyReq("ex", apiHost)
	v["request"] = map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}}
	r.connect(b, "app1", v, map[string]string{"api_key": secretKey})
	call := NetCall{AppID: "app1", Frame: frame("GET", "https://api.example.com/v1/items", nil), Delivery: DeliveryApp}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := r.d.Net(ctx, call); res.Code != "" || res.Status != 200 {
			b.Fatalf("Net = %+v", res)
		}
	}
}

// BenchmarkDirectClient is the same GET with a plain http.Client to the
// same upstream: the floor BenchmarkNet is measured against.
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
