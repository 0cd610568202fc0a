package requirement

import (
	"strings"
	"testing"
)

// BenchmarkParse parses a realistic Coinbase Exchange requirement: three
// fields, a five-step walkthrough, four header templates (one HMAC
// signature), one host and a test request.
func BenchmarkParse(b *testing.B) {
	raw := readTestdata(b, "coinbase-exchange.json")
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, vs := Parse(raw, Options{}); vs != nil {
			b.Fatal(vs)
		}
	}
}

// BenchmarkParseAdversarial parses a maximal-size document built to make
// the credential detector and the text checks work hardest: one long
// instruction-like string of repeated near-matches.
func BenchmarkParseAdversarial(b *testing.B) {
	for _, tc := range []struct{ name, unit string }{
		{"assignments", "key="}, {"bearer", "bearer "}, {"charrefs", "&a"}, {"tokens", "a "}, {"jwt", "eyJa."},
	} {
		b.Run(tc.name, func(b *testing.B) {
			text := strings.Repeat(tc.unit, (MaxSize-200)/len(tc.unit))
			raw := []byte(`{"slot":"a","provider":{"name":"x"},"kind":"none","declaredApiHosts":["a.example"],"registration":{"instructions":["` + text + `"]}}`)
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if r, _ := Parse(raw, Options{}); r != nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

func BenchmarkCanonical(b *testing.B) {
	r := mustParse(b, readTestdata(b, "coinbase-exchange.json"), Options{})
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Canonical()
	}
}

func BenchmarkNormalizeHost(b *testing.B) {
	for _, h := range []string{"api.exchange.coinbase.com", "API.Exchange.Coinbase.com", "api.bücher.de"} {
		b.Run(h, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NormalizeHost(h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDeriveAllowedHosts(b *testing.B) {
	r := mustParse(b, encode(b, registryDoc()), Options{AllowUserLayer: true})
	b.ReportAllocs()
	for b.Loop() {
		_ = HostsJSON(DeriveAllowedHosts(r))
	}
}

func BenchmarkDetectCredential(b *testing.B) {
	s := "Open https://home.openweathermap.org/api_keys, create a key and paste it here."
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		DetectCredential(s)
	}
}
