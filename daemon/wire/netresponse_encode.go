package wire

import (
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
		n := len(r.Body) + len(r.Body)/8 + len(r.URL) + len(r.RequestID) + 128 + 64*len(r.Headers)
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
	dst = appendJSONString(dst, r.Body)
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

// jsonSafe marks the ASCII bytes a JSON string holds as they are, the way
// encoding/json does with HTML escaping off: everything from 0x20 up but
// '"' and '\\' (0x7f included).
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// Word-at-a-time constants: every byte 0x01, and every byte 0x80.
const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// load8 reads the eight bytes of t (len(t) == 8) as a little-endian
// word: one load.
func load8(t string) uint64 {
	return uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
		uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
}

// safeWord reports whether the eight bytes of w are all jsonSafe: none
// below 0x20, none '"' or '\\', none non-ASCII. Each test is exact for
// the word as a whole (the "has a byte less than n" and "has a zero
// byte" identities, n ≤ 128), so no unsafe byte is ever skipped.
func safeWord(w uint64) bool {
	ctl := (w - lo8*0x20) & ^w           // high bit: a byte < 0x20 (or a borrow past one)
	q := w ^ (lo8 * '"')                 // a zero byte where w has '"'
	b := w ^ (lo8 * '\\')                // a zero byte where w has '\\'
	quote := (q - lo8) & ^q              // high bit: a zero byte in q
	bslash := (b - lo8) & ^b             // high bit: a zero byte in b
	return (ctl|quote|bslash|w)&hi8 == 0 // w's own high bits: non-ASCII
}

// appendJSONString appends s as a JSON string exactly as encoding/json
// writes it with SetEscapeHTML(false): '"' and '\\' escaped; \b, \f, \n,
// \r and \t by name; other control bytes as \u00xx; invalid UTF-8 as
// \ufffd, one per bad byte; U+2028 and U+2029 as \u2028 and \u2029 (so the
// output is also valid JavaScript); everything else, <, > and & included,
// as it is. Safe runs are copied in one append.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight safe bytes at a time: most of a body needs no escape.
		// Then byte by byte to the byte that needs one (JSON text has
		// one every few bytes), and back to words only after it.
		for i+8 <= len(s) && safeWord(load8(s[i:i+8])) {
			i += 8
		}
		for i < len(s) && s[i] < utf8.RuneSelf && jsonSafe[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
