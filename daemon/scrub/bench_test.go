package scrub

import (
	"fmt"
	"strings"
	"testing"
)

// benchSet is twelve credential-shaped values (with "/", "+" and "=" so
// each has percent and JSON spellings) and a 1 MiB JSON-ish body holding
// a few echoes.
func benchSet() (*Set, string) {
	var s Set
	for i := range 12 {
		s.Add(fmt.Sprintf("sk_live_%02d/Zq8r2LkP9wXc+Tn4=", i))
	}
	var b strings.Builder
	for b.Len() < 1<<20 {
		fmt.Fprintf(&b, `{"id":%d,"name":"item number %d","tags":["a","b"],"url":"https:\/\/example.com\/x"},`, b.Len(), b.Len())
		if b.Len()%(64<<10) < 100 {
			b.WriteString(`"echo":"sk_live_03\/Zq8r2LkP9wXc+Tn4=",`)
		}
	}
	return &s, b.String()[:1<<20]
}

// BenchmarkScrub1MiB compares one search per spelling (the scrub before
// the matcher) with the one-pass matcher, over a 1 MiB body and twelve
// secrets in all their spellings; "build" is the matcher's construction.
func BenchmarkScrub1MiB(b *testing.B) {
	s, body := benchSet()
	b.Logf("%d values, %d spellings", len(s.Values()), len(s.Candidates()))
	b.Run("each", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			s.applyEach(body)
		}
	})
	b.Run("once", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		s.applyOnce(body) // the matcher is built once per Set
		for b.Loop() {
			s.applyOnce(body)
		}
	})
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			s.m = nil
			s.applyOnce("x")
		}
	})
}
