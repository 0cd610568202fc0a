//go:build !amd64 || purego

package wire

import "unicode/utf8"

// haveEscapeASCII is false: the word loop does all the work here.
const haveEscapeASCII = false

const (
	escapeASCIIAhead = 64
	escapeASCIIRoom  = 256
)

func escapeASCII(_, _ []byte, _ *[utf8.RuneSelf]escEntry) (int, int) { return 0, 0 }
