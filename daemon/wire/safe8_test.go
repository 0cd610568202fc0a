package wire

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestSafeWord: the word-at-a-time test agrees with jsonSafe byte by byte:
// every byte value at every position among safe neighbours, and random
// words drawn mostly from the bytes around the edges (0x1f, 0x20, '"',
// '\\', 0x7f, 0x80, 0xff and 0), where a borrow could hide one.
func TestSafeWord(t *testing.T) {
	want := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf || !jsonSafe[s[i]] {
				return false
			}
		}
		return true
	}
	for c := range 256 {
		for p := range 8 {
			b := []byte("abcdefgh")
			b[p] = byte(c)
			if got := safeWord(load8(string(b))); got != want(string(b)) {
				t.Fatalf("safeWord(%q) = %v", b, got)
			}
		}
	}
	edges := []byte{0, 1, 0x1f, 0x20, 0x21, '"', '#', '\\', 0x5b, 0x5d, 0x7f, 0x80, 0x81, 0xff, 'a'}
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 8)
	for range 200000 {
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = edges[r.IntN(len(edges))]
			} else {
				b[i] = byte(0x23 + r.IntN(0x5c-0x23))
			}
		}
		if got := safeWord(load8(string(b))); got != want(string(b)) {
			t.Fatalf("safeWord(%q) = %v", b, got)
		}
	}
}
