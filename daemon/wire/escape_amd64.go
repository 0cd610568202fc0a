//go:build amd64 && !purego

package wire

import (
	"unicode/utf8"

	"golang.org/x/sys/cpu"
)

// haveEscapeASCII says escapeASCII runs here: it needs AVX2.
var haveEscapeASCII = cpu.X86.HasAVX2

// What escapeASCII needs to run a step: 32 bytes of src to load, and
// room in dst for the 32 it stores and an escape word after up to 31 of
// them (64, rounded up).
const (
	escapeASCIIAhead = 32
	escapeASCIIRoom  = 64
)

// escapeASCII escapes src into dst as appendJSONString does, 32 bytes at
// a time, while src has escapeASCIIAhead bytes left and dst
// escapeASCIIRoom bytes of room, and stops at the first non-ASCII byte
// (whose rune the caller decodes). It returns the bytes it wrote to dst
// and read from src. It may store into dst past what it wrote (up to the
// room it checked); those bytes are not part of the output.
//
// A step loads 32 bytes and stores them as they are, then compares them
// at once against the three kinds of unsafe byte (below 0x20 or from 0x80
// up, by one signed compare; '"'; '\\'). With none it moves on 32; else
// it keeps the safe prefix it stored, writes the first unsafe byte's
// jsonEsc entry as a word and moves past it. Text whose escapes fall at
// irregular places (JSON) costs no mispredicted branch per escape, which
// the word loop paid about twice.
//
//go:noescape
func escapeASCII(dst []byte, src string, tab *[utf8.RuneSelf]escEntry) (written, read int)
