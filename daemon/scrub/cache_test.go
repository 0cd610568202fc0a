package scrub

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestCacheNeverStale: a Set that takes its spellings from a warm Cache
// scrubs exactly its own values. A rotated value (a new set) is scrubbed
// on its very first Apply, the old one no longer is; two sets sharing the
// cache never take each other's spellings; a value added after an Apply
// is scrubbed by the next one; and a cached Set answers as a Set of its
// own does, on both of Apply's paths.
//
// conformance: P3-X14-40, P3-X14.1-01
func TestCacheNeverStale(t *testing.T) {
	const old, rotated, other = "sk_old_Zq8r2LkP9wXc", "sk_new_Tn4=/aB7dE1fG", "pk_other_M3nQ5rS7tU"
	var c Cache
	long := strings.Repeat("0123456789abcdef ", 4<<10) // past matchMin: the matcher's path
	for _, pad := range []string{"", long} {
		text := pad + "a=" + old + " b=" + rotated + " c=" + other + " d=" + strings.ReplaceAll(rotated, "/", `\/`) + pad
		apply := func(vals ...string) string {
			var s Set
			s.UseCache(&c)
			s.Add(vals...)
			return s.Apply(text)
		}
		if got := apply(old); strings.Contains(got, old) || !strings.Contains(got, rotated) || !strings.Contains(got, other) {
			t.Fatalf("set {old} over %d bytes: old kept or others scrubbed", len(text))
		}
		got := apply(rotated)
		if strings.Contains(got, rotated) || strings.Contains(got, `Tn4=\/aB7`) {
			t.Errorf("set {rotated}, first request after the rotation over %d bytes: the new value survives", len(text))
		}
		if !strings.Contains(got, old) {
			t.Errorf("set {rotated} over %d bytes scrubbed the old value: it used the old set's spellings", len(text))
		}
		if got := apply(other); strings.Contains(got, other) || !strings.Contains(got, old) || !strings.Contains(got, rotated) {
			t.Errorf("set {other} over %d bytes: it did not scrub exactly its own value", len(text))
		}
		// A value added after an Apply joins the next one.
		var s Set
		s.UseCache(&c)
		s.Add(old)
		s.Apply(text)
		s.Add(rotated)
		if got := s.Apply(text); strings.Contains(got, old) || strings.Contains(got, rotated) || !strings.Contains(got, other) {
			t.Errorf("set {old} + {rotated} added later over %d bytes: want both scrubbed, other kept", len(text))
		}
		// Cached and uncached agree, on both paths.
		var own Set
		own.Add(old, rotated)
		if a, b, c := s.applyEach(text), s.applyOnce(text), own.Apply(text); a != c || b != c {
			t.Errorf("cached applyEach/applyOnce differ from an uncached Set over %d bytes", len(text))
		}
	}
}

// TestCacheKey: the key is the set of values, whatever their order, and
// no two different sets share one (a value holding the separator
// included).
func TestCacheKey(t *testing.T) {
	if cacheKey([]string{"a", "b"}) != cacheKey([]string{"b", "a"}) {
		t.Error("order changes the key")
	}
	sets := [][]string{{"a:b"}, {"a", "b"}, {"1:a"}, {"a", ":b"}, {"a:", "b"}, {"ab"}, {"3:a:b"}, {""}, {}}
	seen := map[string][]string{}
	for _, s := range sets {
		k := cacheKey(s)
		if prev, ok := seen[k]; ok {
			t.Errorf("%q and %q share the key %q", prev, s, k)
		}
		seen[k] = s
	}
}

// TestCacheBoundedAndForget: the cache never holds more than
// maxCacheEntries sets, and Forget empties it.
func TestCacheBoundedAndForget(t *testing.T) {
	var c Cache
	for i := range maxCacheEntries * 3 {
		var s Set
		s.UseCache(&c)
		s.Add(fmt.Sprintf("hmac-%08d-per-request", i))
		s.Apply("x")
		if n := c.Len(); n > maxCacheEntries || i < maxCacheEntries && n != i+1 {
			t.Fatalf("after %d sets the cache holds %d", i+1, n)
		}
	}
	c.Forget()
	if n := c.Len(); n != 0 {
		t.Errorf("after Forget the cache holds %d", n)
	}
}

// TestCacheConcurrent: requests with different and equal sets share one
// cache at once, each scrubbing exactly its own values (run with -race).
func TestCacheConcurrent(t *testing.T) {
	var c Cache
	long := strings.Repeat("z", matchMin)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				mine := fmt.Sprintf("secret-%d-abcdefgh", (g+i)%4)
				theirs := fmt.Sprintf("secret-%d-abcdefgh", (g+i+1)%4)
				var s Set
				s.UseCache(&c)
				s.Add(mine)
				if i%5 == 0 {
					c.Forget()
				}
				got := s.Apply(long + mine + " " + theirs)
				if strings.Contains(got, mine) || !strings.Contains(got, theirs) {
					t.Errorf("goroutine %d: %q scrubbed wrong", g, mine)
					return
				}
			}
		})
	}
	wg.Wait()
}
