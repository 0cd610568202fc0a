package registry

import "testing"

// BenchmarkResolve measures the borrow ban on the three paths a proposal
// takes: a borrow (the Coinbase Exchange signing flow, the largest shipped
// option), a LAN borrow keeping the collected address, and a requirement
// that triggers nothing. Each ends in requirement.Parse of the result.
func BenchmarkResolve(b *testing.B) {
	g, err := Load()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		d    doc
	}{
		{"borrow", apiKeyDoc("Coinbase Exchange", "api.exchange.coinbase.com")},
		{"lan", lanDoc("Philips Hue", "192.168.1.20")},
		{"none", apiKeyDoc("Acme Weather", "api.acme.example")},
	} {
		r := parse(b, bc.d)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.Resolve(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoad measures decoding and checking the shipped registry, which
// the daemon does once at start.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(); err != nil {
			b.Fatal(err)
		}
	}
}
