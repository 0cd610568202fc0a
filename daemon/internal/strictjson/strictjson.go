// Package strictjson is snugd's one strict JSON reader (RFC 8259), shared
// by the frame parsers of daemon/wire and the requirement parser of
// daemon/requirement. encoding/json cannot stand in for it: it matches keys
// case-insensitively, keeps the last of two duplicate keys without saying
// so, turns invalid UTF-8 into U+FFFD, loses member order, and needs a
// second decode to learn which keys were present.
//
// A Reader makes one pass over a document and validates all of it. It has
// two policies for text, chosen by its caller: Strict refuses invalid UTF-8
// and an escape that decodes to a lone surrogate (a requirement must be
// representable as UTF-8 byte for byte); otherwise the caller has already
// checked the document is valid UTF-8 and a lone surrogate decodes to
// U+FFFD, as encoding/json and a browser's fetch (USVString conversion)
// turn it (a frame reads as the app that sent it meant it). Both refuse a
// byte order mark, nesting deeper than MaxDepth, and everything RFC 8259
// refuses. Duplicate keys are kept, in document order, for the caller to
// refuse with its own words.
//
// Errors are *SyntaxError: they name a byte offset, never the document's
// bytes.
//
// Imports: the standard library only. Only daemon's subpackages reach it.
package strictjson

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Kind is a JSON value's type, named by its first byte.
type Kind byte

// The kinds of JSON value.
const (
	Object Kind = '{'
	Array  Kind = '['
	String Kind = '"'
	Number Kind = '0'
	True   Kind = 't'
	False  Kind = 'f'
	Null   Kind = 'n'
)

// KindOf returns the kind of the raw JSON value raw; 0 for no value.
func KindOf(raw []byte) Kind {
	if len(raw) == 0 {
		return 0
	}
	if c := raw[0]; c == '-' || ('0' <= c && c <= '9') {
		return Number
	}
	return Kind(raw[0])
}

// Value is one node of a decoded document.
type Value struct {
	Kind Kind
	// Text is a string's decoded text or a number's literal text.
	Text    string
	Items   []*Value
	Members []Member // in document order, duplicates kept
}

// Member is one member of a decoded object.
type Member struct {
	Name  string
	Value *Value
}

// A SyntaxError is a document that is not strict JSON. Its text names the
// byte offset, never the bytes.
type SyntaxError struct {
	Offset int
	What   string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid json at byte %d: %s", e.Offset, e.What)
}

// Reader reads strict JSON under one policy. The zero Reader has no
// nesting bound and the lenient text policy; callers set both. A Reader is
// a value and safe for concurrent use.
type Reader struct {
	// MaxDepth bounds nesting: the top-level object or array is depth 1.
	// Zero means no bound.
	MaxDepth int
	// Strict refuses invalid UTF-8 and escapes that decode to a lone
	// surrogate. Without it the caller has checked UTF-8, and a lone
	// surrogate decodes to U+FFFD.
	Strict bool
}

// Decode reads exactly one JSON value, with optional surrounding
// whitespace, into a tree.
func (r Reader) Decode(data []byte) (*Value, error) {
	s := scanner{Reader: r, data: data, build: true}
	s.skipSpace()
	v, err := s.value(0)
	if err != nil {
		return nil, err
	}
	s.skipSpace()
	if s.pos != len(data) {
		return nil, s.fail("data after the top-level value")
	}
	return v, nil
}

// ScanObject validates data as one JSON object with optional surrounding
// whitespace and calls member for each of its top-level members in
// document order, duplicates included, with the decoded key and the
// value's raw text. Nothing below the top level is decoded. The slices
// passed to member alias data, except an escaped key.
func (r Reader) ScanObject(data []byte, member func(key, val []byte)) error {
	s := scanner{Reader: r, data: data}
	s.skipSpace()
	if s.pos >= len(data) || data[s.pos] != '{' {
		return s.fail("expected an object")
	}
	if err := s.object(1, member); err != nil {
		return err
	}
	s.skipSpace()
	if s.pos != len(data) {
		return s.fail("data after the top-level value")
	}
	return nil
}

// SkipSpace returns the offset of the first byte at or after i that is
// not JSON whitespace.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Unquote decodes a raw JSON string value that a lenient Reader already
// validated, a lone surrogate becoming U+FFFD.
func Unquote(raw []byte) string {
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		return string(unescape(body))
	}
	return string(body)
}

// StringIs reports whether the raw JSON value raw is a string that decodes
// to want (as Unquote decodes it), without allocating when raw holds no
// escape.
func StringIs(raw []byte, want string) bool {
	if KindOf(raw) != String {
		return false
	}
	body := raw[1 : len(raw)-1]
	if string(body) == want {
		return true
	}
	return bytes.IndexByte(body, '\\') >= 0 && string(unescape(body)) == want
}

type scanner struct {
	Reader
	data  []byte
	pos   int
	build bool   // whether value returns a tree
	last  *Value // under build, the node of the member object just passed to member
}

func (s *scanner) fail(what string) error {
	return &SyntaxError{Offset: s.pos, What: what}
}

func (s *scanner) skipSpace() { s.pos = SkipSpace(s.data, s.pos) }

func (s *scanner) deep(depth int) bool { return s.MaxDepth > 0 && depth > s.MaxDepth }

// value scans the value at s.pos, nested depth levels deep; it returns a
// node when s.build is set.
func (s *scanner) value(depth int) (*Value, error) {
	if s.pos >= len(s.data) {
		return nil, s.fail("unexpected end of input")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		if !s.build {
			return nil, s.object(depth+1, nil)
		}
		v := &Value{Kind: Object}
		err := s.object(depth+1, func(key, _ []byte) {
			v.Members = append(v.Members, Member{Name: string(key), Value: s.last})
		})
		return v, err
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		start := s.pos
		escaped, err := s.str()
		if err != nil || !s.build {
			return nil, err
		}
		return &Value{Kind: String, Text: s.text(start, escaped)}, nil
	case c == '-' || ('0' <= c && c <= '9'):
		start := s.pos
		if err := s.number(); err != nil || !s.build {
			return nil, err
		}
		return &Value{Kind: Number, Text: string(s.data[start:s.pos])}, nil
	case c == 't':
		return s.literal("true", True)
	case c == 'f':
		return s.literal("false", False)
	case c == 'n':
		return s.literal("null", Null)
	default:
		return nil, s.fail("unexpected character")
	}
}

func (s *scanner) literal(word string, k Kind) (*Value, error) {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return nil, s.fail("invalid literal")
	}
	s.pos += len(word)
	if !s.build {
		return nil, nil
	}
	return &Value{Kind: k}, nil
}

// object scans the object at s.pos, depth levels deep, calling member (if
// not nil) after each member's value with the decoded key and the value's
// raw text; when s.build is set, s.last holds the value's node then.
func (s *scanner) object(depth int, member func(key, val []byte)) error {
	if s.deep(depth) {
		return s.fail("nesting too deep")
	}
	s.pos++ // '{'
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return s.fail("expected an object key")
		}
		kstart := s.pos
		escaped, err := s.str()
		if err != nil {
			return err
		}
		var key []byte
		if member != nil {
			key = s.data[kstart+1 : s.pos-1]
			if escaped {
				key = s.decode(key)
			}
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return s.fail("expected ':' after an object key")
		}
		s.pos++
		s.skipSpace()
		vstart := s.pos
		v, err := s.value(depth)
		if err != nil {
			return err
		}
		if member != nil {
			s.last = v
			member(key, s.data[vstart:s.pos])
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return s.fail("unexpected end of input in an object")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.fail("expected ',' or '}' in an object")
		}
	}
}

func (s *scanner) array(depth int) (*Value, error) {
	if s.deep(depth) {
		return nil, s.fail("nesting too deep")
	}
	s.pos++ // '['
	var v *Value
	if s.build {
		v = &Value{Kind: Array}
	}
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return v, nil
	}
	for {
		s.skipSpace()
		item, err := s.value(depth)
		if err != nil {
			return nil, err
		}
		if s.build {
			v.Items = append(v.Items, item)
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return nil, s.fail("unexpected end of input in an array")
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return v, nil
		default:
			return nil, s.fail("expected ',' or ']' in an array")
		}
	}
}

// number checks the RFC 8259 number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	d := s.data
	if d[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(d) && d[s.pos] == '0':
		s.pos++
	case s.pos < len(d) && '1' <= d[s.pos] && d[s.pos] <= '9':
		s.digits()
	default:
		return s.fail("invalid number")
	}
	if s.pos < len(d) && d[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.fail("invalid number")
		}
	}
	if s.pos < len(d) && (d[s.pos] == 'e' || d[s.pos] == 'E') {
		s.pos++
		if s.pos < len(d) && (d[s.pos] == '+' || d[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.fail("invalid number")
		}
	}
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

// str validates the string at s.pos (its opening quote), leaves s.pos
// just past its closing quote, and reports whether it holds an escape.
func (s *scanner) str() (escaped bool, err error) {
	d := s.data
	s.pos++ // '"'
	for {
		// The common bytes first, in a tight loop.
		for s.pos < len(d) && d[s.pos] >= 0x20 && d[s.pos] != '"' && d[s.pos] != '\\' && (d[s.pos] < utf8.RuneSelf || !s.Strict) {
			s.pos++
		}
		if s.pos >= len(d) {
			return escaped, s.fail("unterminated string")
		}
		switch c := d[s.pos]; {
		case c == '"':
			s.pos++
			return escaped, nil
		case c == '\\':
			escaped = true
			if err := s.escape(); err != nil {
				return escaped, err
			}
		case c < 0x20:
			return escaped, s.fail("control character in a string")
		default: // Strict, and not ASCII
			r, size := utf8.DecodeRune(d[s.pos:])
			if r == utf8.RuneError && size <= 1 {
				return escaped, s.fail("invalid utf-8 in a string")
			}
			s.pos += size
		}
	}
}

// escape validates the backslash escape at s.pos. Under Strict a \u
// escape that is a surrogate must be the high half of a pair whose low
// half follows at once.
func (s *scanner) escape() error {
	if s.pos+1 >= len(s.data) {
		return s.fail("unterminated escape")
	}
	c := s.data[s.pos+1]
	s.pos += 2
	switch c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return nil
	case 'u':
		r, err := s.hex4()
		if err != nil || !s.Strict || !utf16.IsSurrogate(r) {
			return err
		}
		if r >= 0xDC00 || s.pos+1 >= len(s.data) || s.data[s.pos] != '\\' || s.data[s.pos+1] != 'u' {
			return s.fail("lone surrogate escape")
		}
		s.pos += 2
		r2, err := s.hex4()
		if err != nil {
			return err
		}
		if utf16.DecodeRune(r, r2) == utf8.RuneError {
			return s.fail("lone surrogate escape")
		}
		return nil
	default:
		s.pos -= 2
		return s.fail("invalid escape")
	}
}

func (s *scanner) hex4() (rune, error) {
	if len(s.data)-s.pos < 4 {
		return 0, s.fail("short unicode escape")
	}
	n, err := strconv.ParseUint(string(s.data[s.pos:s.pos+4]), 16, 32)
	if err != nil {
		return 0, s.fail("invalid unicode escape")
	}
	s.pos += 4
	return rune(n), nil
}

// text decodes the string that str validated from start to s.pos.
func (s *scanner) text(start int, escaped bool) string {
	body := s.data[start+1 : s.pos-1]
	if !escaped {
		return string(body)
	}
	return string(s.decode(body))
}

// decode decodes a validated string body that holds an escape. Under
// Strict every surrogate escape is half of a pair (str checked it), so
// unescape's U+FFFD never appears.
func (s *scanner) decode(body []byte) []byte { return unescape(body) }

// unescape decodes the body of a validated JSON string that holds at
// least one escape. Lone surrogates become U+FFFD.
func unescape(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch b[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(b[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if r < 0xDC00 && i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
					if r2 := hex4(b[i+2 : i+6]); 0xDC00 <= r2 && r2 <= 0xDFFF {
						out = utf8.AppendRune(out, utf16.DecodeRune(r, r2))
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, b[i+1])
		}
		i += 2
	}
	return out
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}
