//go:build amd64 && !purego

package wire

import (
	"unicode/utf8"

	"golang.org/x/sys/cpu"
)

// haveEscapeASCII says escapeASCII runs here: it needs AVX2.
var haveEscapeASCII = cpu.X86.HasAVX2

// What escapeASCII needs to run a step: 64 bytes of src (a chunk of 32
// and the 32 an escape in it may reload after itself), and room in dst
// for a chunk's worst output, every byte a six-byte \u00xx, and the 32
// bytes a reload stores past it (224, rounded up).
const (
	escapeASCIIAhead = 64
	escapeASCIIRoom  = 256
)

// escapeASCII escapes src into dst as appendJSONString does, 32 bytes at
// a time, while src has escapeASCIIAhead bytes left and dst
// escapeASCIIRoom bytes of room, and stops at the first non-ASCII byte
// (whose rune the caller decodes). It returns the bytes it wrote to dst
// and read from src. It may store into dst past what it wrote (up to the
// room it checked); those bytes are not part of the output.
//
// A step loads a chunk of 32 bytes and stores it as it is, then compares
// it at once against the three kinds of unsafe byte (below 0x20 or from
// 0x80 up, by one signed compare; '"'; '\\'). With none it moves on 32.
// Else, for each unsafe byte of an all-ASCII chunk, lowest first, it
// stores the byte's jsonEsc entry as a word where the byte lands and the
// 32 bytes after the byte again after the escape, shifted by what the
// escape added: the escapes of one chunk depend on each other only by
// that shift, so they overlap in the pipeline, and a chunk costs one
// mispredicted branch at most (where its mask runs out) where the word
// loop paid about two per escape. A chunk holding a non-ASCII byte goes
// one unsafe byte at a time, up to that byte.
//
// Why it is safe: it starts a step only while read ≤ len(src)-64 and
// written ≤ len(dst)-256, limits it computes itself from the slice
// headers it is given (so a caller's wrong check cannot make it read or
// write outside them); a step reads at most 64 bytes of src and writes at
// most 224 of dst (32 bytes each escaped as six, and the 32-byte reload
// after them); it indexes tab only with an ASCII byte; it writes nothing
// but dst and keeps no pointer past its return. TestEscapeASCIIBounds
// checks the edges with guard bytes.
//
//go:noescape
func escapeASCII(dst, src []byte, tab *[utf8.RuneSelf]escEntry) (written, read int)
