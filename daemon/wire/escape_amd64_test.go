//go:build amd64 && !purego

package wire

import (
	"bytes"
	"strings"
	"testing"
)

// TestEscapeWordLoopAlone: on a machine with AVX2 every other escape test
// runs escapeASCII; the word loop alone, which a machine without it runs,
// must give the same output.
func TestEscapeWordLoopAlone(t *testing.T) {
	if !haveEscapeASCII {
		t.Skip("no AVX2 here: every escape test already runs the word loop alone")
	}
	haveEscapeASCII = false
	defer func() { haveEscapeASCII = true }()
	t.Run("references", TestAppendJSONStringMatchesReferences)
	t.Run("blocks", TestAppendJSONStringBlocks)
}

// TestEscapeASCIIBounds: escapeASCII never reads past src or writes past
// the room it was given, whatever the text, at the edges of its checks
// (src of 64 to 80 bytes, room of 256 to 264), and what it wrote and read
// is a correct escape of what it read.
func TestEscapeASCIIBounds(t *testing.T) {
	if !haveEscapeASCII {
		t.Skip("no AVX2 here")
	}
	texts := []string{strings.Repeat("a", 80), strings.Repeat(`"`, 80), strings.Repeat("\x01", 80), strings.Repeat(`ab"`, 27), strings.Repeat("x", 35) + "\u00e9" + strings.Repeat(`x"`, 21), strings.Repeat("\x01\"", 40)}
	for _, text := range texts {
		for n := 64; n <= len(text); n++ {
			src := text[:n]
			for room := 256; room <= 264; room++ {
				buf := make([]byte, room+16)
				for i := range buf {
					buf[i] = 0xAA
				}
				w, r := escapeASCII(buf[:room], []byte(src), &jsonEsc)
				if r < 0 || r > n || w < 0 || w > room {
					t.Fatalf("src %q, room %d: wrote %d, read %d", src, room, w, r)
				}
				if !bytes.Equal(buf[room:], bytes.Repeat([]byte{0xAA}, 16)) {
					t.Fatalf("src %q, room %d: wrote past the room", src, room)
				}
				want := stdJSONString(t, src[:r])
				if got := buf[:w]; !bytes.Equal(got, want[1:len(want)-1]) {
					t.Fatalf("src %q, room %d: %q for %q, want %q", src, room, got, src[:r], want[1:len(want)-1])
				}
			}
		}
	}
}
