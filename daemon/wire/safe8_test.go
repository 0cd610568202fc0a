package wire

import (
	"math/bits"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestUnsafeBytes: the word-at-a-time flags agree with a byte-by-byte
// reading of what a JSON string holds as it is: zero exactly when all
// eight bytes are safe, and the lowest flag exactly on the first unsafe
// byte. Every byte value at every position among safe neighbours, and
// random words drawn mostly from the bytes around the edges (0x1f, 0x20,
// '"', '\\', 0x7f, 0x80, 0xff and 0), where a borrow could hide one.
func TestUnsafeBytes(t *testing.T) {
	safe := func(c byte) bool { return c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\' }
	first := func(s string) int { // the first unsafe byte, or 8
		for i := 0; i < len(s); i++ {
			if !safe(s[i]) {
				return i
			}
		}
		return 8
	}
	check := func(s string) {
		t.Helper()
		m := unsafeBytes(load8(s, 0))
		if got, want := bits.TrailingZeros64(m)/8, first(s); got != want || (m == 0) != (want == 8) {
			t.Fatalf("unsafeBytes(%q) = %#x: first unsafe byte %d, want %d", s, m, got, want)
		}
	}
	for c := range 256 {
		for p := range 8 {
			b := []byte("abcdefgh")
			b[p] = byte(c)
			check(string(b))
		}
	}
	edges := []byte{0, 1, 0x1f, 0x20, 0x21, '"', '#', '\\', 0x5b, 0x5d, 0x7f, 0x80, 0x81, 0xa2, 0xdc, 0xff, 'a'}
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
		check(string(b))
	}
}
