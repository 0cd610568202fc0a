package wire

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
)

// This file encodes snug:net-response without encoding/json: no
// reflection, no intermediate struct, no second buffer, and no compaction
// pass over a Marshaler's output. A 1 MiB body is copied once, escaped on
// the way. The output is byte for byte what NetResponse.MarshalJSON
// writes (netresponse_encode_test.go checks it over a corpus), so either
// may be used anywhere.
//
// EncodeNetResponse (frames.go), and so Encode, write net-responses with it.

// appendNetResponse appends r's JSON, exactly as r.MarshalJSON writes it,
// to dst and returns the extended slice.
func appendNetResponse(dst []byte, r NetResponse) []byte {
	if r.Error == nil {
		// The body dominates; grow once for it, an eighth more for its
		// escapes (a JSON body's quotes), and the frame around it, but
		// never past the frame's size class: a frame that outgrows it is
		// replaced anyway, and a dst of the class's size is then reused
		// without a copy.
		n := r.BodyLen() + r.BodyLen()/8 + len(r.URL) + len(r.RequestID) + 128 + 64*len(r.Headers)
		dst = slices.Grow(dst, min(n, MaxNetFrameBytes+1))
	}
	dst = append(dst, `{"type":"`+TypeNetResponse+`","v":`...)
	dst = strconv.AppendInt(dst, protocolVersion, 10)
	dst = append(dst, `,"requestId":`...)
	dst = appendJSONString(dst, r.RequestID)
	if r.Error != nil {
		dst = append(dst, `,"ok":false,"error":`...)
		dst = appendErrorBody(dst, *r.Error)
		if r.URL != "" {
			dst = append(dst, `,"url":`...)
			dst = appendJSONString(dst, r.URL)
		}
		return append(dst, '}')
	}
	dst = append(dst, `,"ok":true,"status":`...)
	dst = strconv.AppendInt(dst, int64(r.Status), 10)
	dst = append(dst, `,"headers":{`...)
	if len(r.Headers) > 0 {
		// encoding/json writes map keys in sorted order.
		names := make([]string, 0, len(r.Headers))
		for name := range r.Headers {
			names = append(names, name)
		}
		slices.Sort(names)
		for i, name := range names {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, name)
			dst = append(dst, ':')
			dst = appendJSONString(dst, r.Headers[name])
		}
	}
	dst = append(dst, `},"body":`...)
	if r.body != nil {
		dst = appendJSONBytes(dst, r.body)
	} else {
		dst = appendJSONString(dst, r.Body)
	}
	if r.Truncated {
		dst = append(dst, `,"truncated":true`...)
	}
	if r.URL != "" {
		dst = append(dst, `,"url":`...)
		dst = appendJSONString(dst, r.URL)
	}
	return append(dst, '}')
}

// appendErrorBody appends b as ErrorBody.MarshalJSON writes it.
func appendErrorBody(dst []byte, b ErrorBody) []byte {
	dst = append(dst, `{"code":`...)
	dst = appendJSONString(dst, string(b.Code))
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, b.Message)
	dst = append(dst, `,"retryable":`...)
	dst = strconv.AppendBool(dst, b.Retryable)
	if b.Code == errcode.ParseFailed {
		dst = append(dst, `,"rawExcerpt":`...)
		dst = appendJSONString(dst, b.RawExcerpt)
		dst = append(dst, `,"attemptsRemaining":`...)
		dst = strconv.AppendInt(dst, int64(b.AttemptsRemaining), 10)
	}
	return append(dst, '}')
}

// Word-at-a-time constants: every byte 0x01, and every byte 0x80.
const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

const hexDigits = "0123456789abcdef"

// bytestring is what the escape reads: a string field of a frame, or an
// answer body held as the bytes it was read into (NewNetResponseBytes).
// The code is the same for both; only escapeASCII takes bytes alone.
type bytestring interface{ ~string | ~[]byte }

// load8 reads s[i:i+8] as a little-endian word: one load.
func load8[S bytestring](s S, i int) uint64 {
	t := s[i : i+8]
	return uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
		uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
}

// unsafeBytes returns the high bit of every byte of w (little-endian)
// that a JSON string cannot hold as it is, the way encoding/json writes
// one with HTML escaping off: a byte below 0x20, '"', '\\', or a
// non-ASCII byte (which may need \ufffd or \u2028). Everything from 0x20
// up but '"' and '\\' is safe, 0x7f included.
//
// It is zero exactly when all eight bytes are safe, and its lowest set
// bit is exactly the first unsafe byte: a subtraction borrows out of a
// byte only where that byte is itself flagged (below 0x20, or a '"' or
// '\\' made zero by the xor), so a borrow can mark a byte above the first
// unsafe one but never one below it, and a safe byte (0x20–0x7f, neither
// '"' nor '\\') sets no high bit in any of the four terms. Bytes above
// the first unsafe one may be flagged wrongly; the encoder looks only at
// the lowest.
func unsafeBytes(w uint64) uint64 {
	q := w ^ (lo8 * '"')
	b := w ^ (lo8 * '\\')
	return ((w - lo8*0x20) | (q - lo8) | (b - lo8) | w) & hi8
}

// jsonEsc is what encoding/json (HTML escaping off) writes for each
// ASCII byte, as a little-endian word and its length: the byte itself
// when it is safe (length 1); \" and \\; the five named controls \b,
// \f, \n, \r and \t; and \u00xx for every other byte below 0x20. The
// fast loop stores the whole word and advances by the length: one table
// load and one store per escape, whichever escape it is.
var jsonEsc = func() (t [utf8.RuneSelf]escEntry) {
	set := func(c byte, e string) {
		var w [8]byte
		copy(w[:], e)
		t[c].word, t[c].n = binary.LittleEndian.Uint64(w[:]), len(e)
	}
	for c := range byte(utf8.RuneSelf) {
		set(c, string(c))
	}
	for c := range byte(0x20) {
		set(c, `\u00`+hexDigits[c>>4:c>>4+1]+hexDigits[c&0xf:c&0xf+1])
	}
	for _, e := range []struct {
		c byte
		e string
	}{{'"', `\"`}, {'\\', `\\`}, {'\b', `\b`}, {'\f', `\f`}, {'\n', `\n`}, {'\r', `\r`}, {'\t', `\t`}} {
		set(e.c, e.e)
	}
	return t
}()

// escapeASCIIAside is how far the word loop goes on after escapeASCII
// stops at a non-ASCII byte, before escapeASCII is tried again; it grows
// fourfold, up to escapeASCIIAsideMax, while escapeASCII stops within
// escapeASCIIFar bytes, and drops back when it reads that far.
const (
	escapeASCIIAside    = 256
	escapeASCIIAsideMax = 64 << 10
	escapeASCIIFar      = 256
)

// escEntry is one entry of jsonEsc: the escape as a little-endian word
// and its length. Its layout (a word, then an int: 16 bytes) is what
// escapeASCII's assembly reads.
type escEntry struct {
	word uint64
	n    int
}

// The six-byte escapes of the non-ASCII cases, as little-endian words:
// \ufffd for a byte that is not valid UTF-8, and \u2028 (\u2029 is one
// more in its last byte).
var (
	escBadByte = binary.LittleEndian.Uint64([]byte(`\ufffd` + "\x00\x00"))
	escU2028   = binary.LittleEndian.Uint64([]byte(`\u2028` + "\x00\x00"))
)

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it with SetEscapeHTML(false): '"' and '\\' escaped; \b, \f, \n,
// \r and \t by name; other control bytes as \u00xx; invalid UTF-8 as
// \ufffd, one per bad byte; U+2028 and U+2029 as \u2028 and \u2029 (so the
// output is also valid JavaScript); everything else, <, > and & included,
// as it is.
//
// While dst has fastRoom bytes of room and s eight bytes left, appendJSONFast
// does the work by index in dst's spare capacity; the rest (the last
// bytes of s, or a full dst) goes one character at a time by append,
// which grows dst only when the output does not fit: a frame that fits
// its buffer stays in it.
func appendJSONString(dst []byte, s string) []byte { return appendJSON(dst, s) }

// appendJSONBytes is appendJSONString for text held as bytes, which it
// reads in place (no string is made of them) and does not keep.
func appendJSONBytes(dst, b []byte) []byte { return appendJSON(dst, b) }

// escapeASCIIOf runs escapeASCII over s[i:] when s is bytes (the answer
// body, the one long text a frame holds); over a string field it does
// nothing, and the word loop does the work.
func escapeASCIIOf[S bytestring](dst []byte, s S, i int) (written, read int) {
	if b, ok := any(s).([]byte); ok {
		return escapeASCII(dst, b[i:], &jsonEsc)
	}
	return 0, 0
}

// decodeRune decodes the rune at s[i:j] as utf8.DecodeRuneInString does.
func decodeRune[S bytestring](s S, i, j int) (rune, int) {
	switch v := any(s).(type) {
	case string:
		return utf8.DecodeRuneInString(v[i:j])
	case []byte:
		return utf8.DecodeRune(v[i:j])
	}
	return utf8.DecodeRuneInString(string(s[i:j])) // unreachable: a named type of either
}

// isBytes reports whether S is held as bytes (so escapeASCII can read it).
func isBytes[S bytestring](s S) bool {
	_, ok := any(s).([]byte)
	return ok
}

func appendJSON[S bytestring](dst []byte, s S) []byte {
	dst = append(dst, '"')
	aside := escapeASCIIAside
	asm := haveEscapeASCII && isBytes(s)
	for i := 0; i < len(s); {
		if asm && len(s)-i >= escapeASCIIAhead && cap(dst)-len(dst) >= escapeASCIIRoom {
			w, r := escapeASCIIOf(dst[len(dst):cap(dst)], s, i)
			dst, i = dst[:len(dst)+w], i+r
			if i+escapeASCIIAhead <= len(s) && cap(dst)-len(dst) >= escapeASCIIRoom {
				// It stopped at a non-ASCII byte: word by word through
				// the next stretch, which decodes its runes (text with
				// one non-ASCII rune seldom has just one). When it
				// stopped soon, the text is mostly not ASCII, where the
				// word loop is the faster: the stretch doubles, up to
				// escapeASCIIAsideMax, until escapeASCII reads far again.
				if r < escapeASCIIFar {
					aside = min(4*aside, escapeASCIIAsideMax)
				} else {
					aside = escapeASCIIAside
				}
				dst, i = appendJSONFast(dst, s, i, i+aside)
			}
			continue
		}
		if i+8 <= len(s) && cap(dst)-len(dst) >= fastRoom {
			dst, i = appendJSONFast(dst, s, i, len(s))
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			e := jsonEsc[c]
			dst = appendWord(dst, e.word, e.n)
			i++
			continue
		}
		r, size := decodeRune(s, i, len(s))
		switch {
		case r == utf8.RuneError && size == 1:
			dst = appendWord(dst, escBadByte, 6)
		case r == '\u2028' || r == '\u2029':
			dst = appendWord(dst, escU2028+uint64(r&1)<<40, 6)
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// appendWord appends the first n bytes of the little-endian word w.
func appendWord(dst []byte, w uint64, n int) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], w)
	return append(dst, b[:n]...)
}

// fastRoom is the spare capacity one step of appendJSONFast may write
// into: a stored word, and after up to seven safe bytes of it an escape
// stored as a word of eight (15 bytes in all).
const fastRoom = 16

// appendJSONFast is appendJSONString's loop over s[i:] while s has eight
// bytes left, dst fastRoom bytes of room and i is below end. It returns
// dst extended and where it stopped (a step may end a rune past end).
//
// Each step stores the next eight bytes of s as they are and advances
// past their safe prefix. When all eight are safe it then tries whole
// 32-byte blocks (four words, their flags or-ed: one test); else it
// handles the first unsafe byte alone, an ASCII escape by one table load
// and one stored word, a non-ASCII byte by decoding its rune (and, for a
// valid one, the run of valid runes after it, copied at once), and the
// next step starts after it. So no safe ASCII run, short or long, costs a
// copy call or an append, and a run of CJK or Cyrillic costs one copy.
func appendJSONFast[S bytestring](dst []byte, s S, i, end int) ([]byte, int) {
	n := len(dst)
	buf := dst[:cap(dst)]
	for i+8 <= len(s) && i < end && n+fastRoom <= len(buf) {
		w := load8(s, i)
		m := unsafeBytes(w)
		if m == 0 {
			binary.LittleEndian.PutUint64(buf[n:], w)
			i, n = i+8, n+8
			for i+32 <= len(s) && i < end && n+32 <= len(buf) {
				w0, w1, w2, w3 := load8(s, i), load8(s, i+8), load8(s, i+16), load8(s, i+24)
				if unsafeBytes(w0)|unsafeBytes(w1)|unsafeBytes(w2)|unsafeBytes(w3) != 0 {
					break
				}
				b := buf[n : n+32]
				binary.LittleEndian.PutUint64(b[0:], w0)
				binary.LittleEndian.PutUint64(b[8:], w1)
				binary.LittleEndian.PutUint64(b[16:], w2)
				binary.LittleEndian.PutUint64(b[24:], w3)
				i, n = i+32, n+32
			}
			continue
		}
		binary.LittleEndian.PutUint64(buf[n:], w)
		k := bits.TrailingZeros64(m) >> 3
		i, n = i+k, n+k
		if c := s[i]; c < utf8.RuneSelf {
			e := jsonEsc[c]
			binary.LittleEndian.PutUint64(buf[n:], e.word)
			i, n = i+1, n+e.n
			continue
		}
		r, size := decodeRune(s, i, len(s))
		switch {
		case r == utf8.RuneError && size == 1:
			binary.LittleEndian.PutUint64(buf[n:], escBadByte)
			n += 6
		case r == '\u2028' || r == '\u2029':
			binary.LittleEndian.PutUint64(buf[n:], escU2028+uint64(r&1)<<40)
			n += 6
		default:
			// Non-ASCII text (CJK, Cyrillic) runs rune after rune: the
			// rune and the run of valid runes after it that need no
			// escape, as far as dst has room, are copied at once.
			if j := plainRun(s, i+size, i+len(buf)-n); j > i+size {
				n += copy(buf[n:], s[i:j])
				i = j
				continue
			}
			// Else its bytes as they are (at most four, and the word
			// stored above already holds those that fall inside it).
			for j := range size {
				buf[n+j] = s[i+j]
			}
			n += size
		}
		i += size
	}
	return buf[:n], i
}

// plainRun returns where the run of non-ASCII runes at s[i:] that JSON
// holds as they are ends: valid UTF-8, neither U+2028 nor U+2029, and
// none of it past lim. It decodes two- and three-byte sequences itself,
// with utf8's ranges (no overlong form, no surrogate), and stops at
// anything else: an ASCII byte, a bad byte, a sequence cut by lim, which
// the caller handles one rune at a time. A four-byte rune goes through
// utf8.DecodeRuneInString.
func plainRun[S bytestring](s S, i, lim int) int {
	lim = min(lim, len(s))
	for i < lim {
		switch c := s[i]; {
		case c < 0xc2: // ASCII, a continuation byte, or an overlong lead
			return i
		case c < 0xe0:
			if i+2 > lim || s[i+1]&0xc0 != 0x80 {
				return i
			}
			i += 2
		case c < 0xf0:
			if i+3 > lim {
				return i
			}
			c1, c2 := s[i+1], s[i+2]
			lo, hi := byte(0x80), byte(0xbf)
			switch c {
			case 0xe0:
				lo = 0xa0 // below: overlong
			case 0xed:
				hi = 0x9f // above: a surrogate
			}
			if c1 < lo || c1 > hi || c2&0xc0 != 0x80 || c == 0xe2 && c1 == 0x80 && c2&^1 == 0xa8 {
				return i
			}
			i += 3
		default:
			r, size := decodeRune(s, i, lim)
			if r == utf8.RuneError && size == 1 {
				return i
			}
			i += size
		}
	}
	return i
}
