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
			s.comp = nil
			s.applyOnce("x")
		}
	})
}

// BenchmarkScrubRequest is gate 10's scrub as a request pays it: a new Set
// per request holding one api key, over a small answer and a 1 MiB one,
// compiling its spellings alone ("fresh") or taking them from a warm Cache
// ("cached"). The JSON body is full of the key's rarest byte, '_' (in
// keys, ids and tags, as snake_case APIs write them), where the matcher's
// skip stops often.
func BenchmarkScrubRequest(b *testing.B) {
	const key = "sk_test_51Hx/Secret+Key=Value&x"
	big := strings.Repeat("0123456789abcdef", 1<<16)
	var c Cache
	json := strings.Repeat(`{"item_id":"a1b2_c3d4","created_at":"2026-12-01T15:04:05Z","display_name":"item number 7","tag_list":["x_1","y_2"]},`, 1<<20/112)
	for _, bc := range []struct{ name, body string }{{"small", `{"id":1,"name":"lamp","on":true,"level":42}`}, {"1MiB", big}, {"1MiB-json", json}} {
		for _, mode := range []string{"fresh", "cached"} {
			b.Run(bc.name+"/"+mode, func(b *testing.B) {
				b.SetBytes(int64(len(bc.body)))
				b.ReportAllocs()
				for b.Loop() {
					var s Set
					if mode == "cached" {
						s.UseCache(&c)
					}
					s.Add(key)
					s.Apply(bc.body)
				}
			})
		}
	}
}

// BenchmarkCacheHit is a request's fetch of its compiled spellings from
// the shared Cache (every request but its value set's first): one value,
// as an API-key connection injects.
func BenchmarkCacheHit(b *testing.B) {
	var c Cache
	vals := []string{"sk_live_Zq8r2LkP9wXc+Tn4="}
	c.lookup(vals)
	b.ReportAllocs()
	for b.Loop() {
		c.lookup(vals)
	}
}
