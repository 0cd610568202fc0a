package wire

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a small JSON scanner. encoding/json cannot parse the strict
// frames: it matches keys case-insensitively ("URL" fills url), keeps the
// last of two duplicate keys without saying so, and needs a second decode
// to learn which keys were present. The scanner makes one pass over a
// frame, validates all of it, and returns its top-level members with their
// raw values; the frame parsers decode only the values they know.

// errSyntax is returned for any text that is not valid JSON.
var errSyntax = errors.New("invalid JSON")

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// A member is one key of a JSON object and the raw text of its value.
type member struct {
	key []byte // decoded
	val []byte // raw JSON, starting at its first byte
}

// Kinds of JSON value, named by their first byte.
const (
	kindObject = '{'
	kindArray  = '['
	kindString = '"'
	kindNumber = '0'
	kindTrue   = 't'
	kindFalse  = 'f'
	kindNull   = 'n'
)

func (m member) kind() byte { return kindOf(m.val) }

func kindOf(v []byte) byte {
	if len(v) == 0 {
		return 0
	}
	if c := v[0]; c == '-' || ('0' <= c && c <= '9') {
		return kindNumber
	}
	return v[0]
}

type scanner struct {
	data  []byte
	i     int
	depth int
}

// scanObject validates raw as one JSON object surrounded by optional
// whitespace and appends its members, in document order, to out. Keys are
// decoded; duplicates are kept. raw must be valid UTF-8 (checked by the
// caller, once per frame).
func scanObject(raw []byte, out []member) ([]member, error) {
	s := scanner{data: raw}
	s.ws()
	if s.i >= len(raw) || raw[s.i] != '{' {
		return out, errSyntax
	}
	out, err := s.object(out, true)
	if err != nil {
		return out, err
	}
	s.ws()
	if s.i != len(raw) {
		return out, errSyntax
	}
	return out, nil
}

// members re-scans a value that scanObject already validated.
func members(val []byte, out []member) []member {
	s := scanner{data: val}
	out, _ = s.object(out, true)
	return out
}

func (s *scanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object scans the object at s.i. When keep is true it appends the members
// to out.
func (s *scanner) object(out []member, keep bool) ([]member, error) {
	s.i++ // '{'
	s.depth++
	if s.depth > maxDepth {
		return out, errSyntax
	}
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		s.depth--
		return out, nil
	}
	for {
		s.ws()
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			return out, errSyntax
		}
		start := s.i
		escaped, err := s.str()
		if err != nil {
			return out, err
		}
		var key []byte
		if keep {
			key = s.data[start+1 : s.i-1]
			if escaped {
				key = unescape(key)
			}
		}
		s.ws()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return out, errSyntax
		}
		s.i++
		s.ws()
		vstart := s.i
		if err := s.value(); err != nil {
			return out, err
		}
		if keep {
			out = append(out, member{key: key, val: s.data[vstart:s.i]})
		}
		s.ws()
		if s.i >= len(s.data) {
			return out, errSyntax
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return out, nil
		default:
			return out, errSyntax
		}
	}
}

func (s *scanner) array() error {
	s.i++ // '['
	s.depth++
	if s.depth > maxDepth {
		return errSyntax
	}
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		s.depth--
		return nil
	}
	for {
		s.ws()
		if err := s.value(); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.data) {
			return errSyntax
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return nil
		default:
			return errSyntax
		}
	}
}

func (s *scanner) value() error {
	if s.i >= len(s.data) {
		return errSyntax
	}
	switch c := s.data[s.i]; {
	case c == '{':
		_, err := s.object(nil, false)
		return err
	case c == '[':
		return s.array()
	case c == '"':
		_, err := s.str()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	}
	return errSyntax
}

func (s *scanner) literal(lit string) error {
	if len(s.data)-s.i < len(lit) || string(s.data[s.i:s.i+len(lit)]) != lit {
		return errSyntax
	}
	s.i += len(lit)
	return nil
}

// number scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	d := s.data
	if d[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(d) && d[s.i] == '0':
		s.i++
	case s.i < len(d) && '1' <= d[s.i] && d[s.i] <= '9':
		s.digits()
	default:
		return errSyntax
	}
	if s.i < len(d) && d[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return errSyntax
		}
	}
	if s.i < len(d) && (d[s.i] == 'e' || d[s.i] == 'E') {
		s.i++
		if s.i < len(d) && (d[s.i] == '+' || d[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return errSyntax
		}
	}
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.data) && '0' <= s.data[s.i] && s.data[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// str scans the string at s.i (its opening quote) and reports whether it
// holds an escape.
func (s *scanner) str() (escaped bool, err error) {
	d := s.data
	i := s.i + 1
	for {
		// The common bytes first, in a tight loop.
		for i < len(d) && d[i] >= 0x20 && d[i] != '"' && d[i] != '\\' {
			i++
		}
		if i >= len(d) {
			s.i = i
			return escaped, errSyntax
		}
		switch d[i] {
		case '"':
			s.i = i + 1
			return escaped, nil
		case '\\':
			escaped = true
			if i+1 >= len(d) {
				s.i = i
				return escaped, errSyntax
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex4(d[i+2:i+6]) {
					s.i = i
					return escaped, errSyntax
				}
				i += 6
			default:
				s.i = i
				return escaped, errSyntax
			}
		default: // a control character
			s.i = i
			return escaped, errSyntax
		}
	}
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
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

// unescape decodes the body of a validated JSON string that holds at
// least one escape. Lone surrogates become U+FFFD, as encoding/json and
// a browser's fetch (USVString conversion) turn them.
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
						r = utf16.DecodeRune(r, r2)
						i += 6
						out = utf8.AppendRune(out, r)
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

// stringValue decodes a raw JSON string value.
func stringValue(v []byte) string {
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') >= 0 {
		return string(unescape(body))
	}
	return string(body)
}

// rawStringIs reports whether the raw JSON string v decodes to want,
// without allocating when v holds no escape.
func rawStringIs(v []byte, want string) bool {
	if kindOf(v) != kindString {
		return false
	}
	body := v[1 : len(v)-1]
	if string(body) == want {
		return true
	}
	return bytes.IndexByte(body, '\\') >= 0 && string(unescape(body)) == want
}

// numberValue parses a raw JSON number.
func numberValue(v []byte) (float64, bool) {
	if kindOf(v) != kindNumber {
		return 0, false
	}
	if len(v) == 1 {
		return float64(v[0] - '0'), true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// intValue parses a raw JSON number that is a mathematical integer in
// [lo, hi]. Like JSON Schema's "integer", 200.0 and 2e2 count.
func intValue(v []byte, lo, hi int) (int, bool) {
	f, ok := numberValue(v)
	if !ok || f < float64(lo) || f > float64(hi) || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}

// chars counts the characters of s as JSON Schema's maxLength counts
// them: Unicode code points.
func chars(s string) int { return utf8.RuneCountInString(s) }
