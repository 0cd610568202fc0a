package template_test

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/template"
)

// BenchmarkRenderCoinbaseExchange renders the four-header Coinbase Exchange
// example template.
func BenchmarkRenderCoinbaseExchange(b *testing.B) {
	set := mustCompile(b, coinbaseFields, coinbaseExchange())
	values := map[string]string{
		"api_key":    "f6a3c1b2e4d5a6b7c8d9e0f1a2b3c4d5",
		"api_secret": base64.StdEncoding.EncodeToString(coinbaseSecret),
		"passphrase": "a passphrase",
	}
	req := template.Request{
		Method:       "POST",
		URL:          "https://api.exchange.coinbase.com/orders",
		PathAndQuery: "/orders",
		Body:         `{"size":"0.01","price":"0.100","side":"buy","product_id":"BTC-USD"}`,
	}
	env := template.Env{Now: func() time.Time { return time.Unix(1700000000, 0) }}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := set.Render(values, req, env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileCoinbaseExchange lints and compiles the same template.
func BenchmarkCompileCoinbaseExchange(b *testing.B) {
	tpl := coinbaseExchange()
	b.ReportAllocs()
	for b.Loop() {
		if _, fs := template.Compile(coinbaseFields, tpl); fs != nil {
			b.Fatal(fs)
		}
	}
}
