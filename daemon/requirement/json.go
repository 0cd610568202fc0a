package requirement

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is a small strict JSON reader. encoding/json would do most of
// the work, but it keeps the last of two duplicate keys, turns invalid UTF-8
// and lone surrogates into U+FFFD, and loses member order; a requirement
// needs all three refused or kept, so it gets its own RFC 8259 reader that
// builds a tree the schema walk and the canonical encoder share.

// maxDepth bounds nesting for every document this package reads. A
// requirement nests four levels deep at most; the bound keeps an arbitrary
// document handed to Canonical from exhausting the stack.
const maxDepth = 128

type jsonKind uint8

const (
	jsonNull jsonKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// jsonValue is one node of a decoded document. s holds a string's decoded
// text or a number's literal text; members keep the document's order.
type jsonValue struct {
	kind    jsonKind
	b       bool
	s       string
	items   []*jsonValue
	members []jsonMember
}

type jsonMember struct {
	name  string
	value *jsonValue
}

// typeName names a value's JSON type for messages.
func (v *jsonValue) typeName() string {
	switch v.kind {
	case jsonNull:
		return "null"
	case jsonBool:
		return "a boolean"
	case jsonNumber:
		return "a number"
	case jsonString:
		return "a string"
	case jsonArray:
		return "an array"
	default:
		return "an object"
	}
}

// A syntaxError is a document that is not JSON. Its text names the byte
// offset, never the bytes.
type syntaxError struct {
	offset int
	what   string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid json at byte %d: %s", e.offset, e.what)
}

// A duplicateKeyError is an object that names one member twice. path is the
// schema path of the second occurrence.
type duplicateKeyError struct {
	path string
}

func (e *duplicateKeyError) Error() string {
	return "duplicate key at " + e.path
}

// decodeJSON reads exactly one JSON value from data. It refuses what RFC
// 8259 refuses plus: invalid UTF-8, escapes that decode to a lone surrogate,
// a byte order mark, nesting deeper than maxDepth, and duplicate object keys.
// Duplicate keys do not stop the read: every one is reported, so a caller
// can name them all.
func decodeJSON(data []byte) (*jsonValue, []*duplicateKeyError, error) {
	d := decoder{data: data}
	d.skipSpace()
	v, err := d.value(0)
	if err != nil {
		return nil, nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, nil, d.fail("data after the top-level value")
	}
	return v, d.dups, nil
}

type decoder struct {
	data []byte
	pos  int
	dups []*duplicateKeyError
	// stack is the path to the value being read, rendered into a string
	// only when a duplicate key needs naming.
	stack []pathSeg
}

// A pathSeg is one step of a path: an object member (name, at position
// pos) or, when index >= 0, an array element.
type pathSeg struct {
	name  string
	pos   int
	index int
}

func (d *decoder) path() string {
	p := ""
	for _, s := range d.stack {
		if s.index >= 0 {
			p = indexPath(p, s.index)
		} else {
			p = joinKey(p, s.name, s.pos)
		}
	}
	return p
}

func (d *decoder) fail(what string) error {
	return &syntaxError{offset: d.pos, what: what}
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (*jsonValue, error) {
	if d.pos >= len(d.data) {
		return nil, d.fail("unexpected end of input")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		return &jsonValue{kind: jsonString, s: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return d.literal("true", &jsonValue{kind: jsonBool, b: true})
	case c == 'f':
		return d.literal("false", &jsonValue{kind: jsonBool})
	case c == 'n':
		return d.literal("null", &jsonValue{kind: jsonNull})
	default:
		return nil, d.fail("unexpected character")
	}
}

func (d *decoder) literal(word string, v *jsonValue) (*jsonValue, error) {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return nil, d.fail("invalid literal")
	}
	d.pos += len(word)
	return v, nil
}

func (d *decoder) object(depth int) (*jsonValue, error) {
	if depth > maxDepth {
		return nil, d.fail("nesting too deep")
	}
	d.pos++ // '{'
	v := &jsonValue{kind: jsonObject}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return v, nil
	}
	var seen map[string]bool
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.fail("expected an object key")
		}
		name, err := d.str()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.fail("expected ':' after an object key")
		}
		d.pos++
		d.skipSpace()
		if seen == nil {
			seen = make(map[string]bool)
		}
		d.stack = append(d.stack, pathSeg{name: name, pos: len(v.members), index: -1})
		if seen[name] {
			d.dups = append(d.dups, &duplicateKeyError{path: d.path()})
		}
		seen[name] = true
		mv, err := d.value(depth)
		d.stack = d.stack[:len(d.stack)-1]
		if err != nil {
			return nil, err
		}
		v.members = append(v.members, jsonMember{name: name, value: mv})
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.fail("unexpected end of input in an object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return v, nil
		default:
			return nil, d.fail("expected ',' or '}' in an object")
		}
	}
}

func (d *decoder) array(depth int) (*jsonValue, error) {
	if depth > maxDepth {
		return nil, d.fail("nesting too deep")
	}
	d.pos++ // '['
	v := &jsonValue{kind: jsonArray}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return v, nil
	}
	for {
		d.skipSpace()
		d.stack = append(d.stack, pathSeg{index: len(v.items)})
		item, err := d.value(depth)
		d.stack = d.stack[:len(d.stack)-1]
		if err != nil {
			return nil, err
		}
		v.items = append(v.items, item)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.fail("unexpected end of input in an array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return v, nil
		default:
			return nil, d.fail("expected ',' or ']' in an array")
		}
	}
}

// number checks the RFC 8259 number grammar and keeps the literal text.
func (d *decoder) number() (*jsonValue, error) {
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case d.pos < len(d.data) && d.data[d.pos] >= '1' && d.data[d.pos] <= '9':
		d.digits()
	default:
		return nil, d.fail("invalid number")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if d.digits() == 0 {
			return nil, d.fail("invalid number")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if d.digits() == 0 {
			return nil, d.fail("invalid number")
		}
	}
	return &jsonValue{kind: jsonNumber, s: string(d.data[start:d.pos])}, nil
}

func (d *decoder) digits() int {
	n := 0
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
		n++
	}
	return n
}

// str decodes a string starting at the opening quote.
func (d *decoder) str() (string, error) {
	d.pos++ // '"'
	start := d.pos
	// Fast path: no escapes.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := d.data[start:d.pos]
			d.pos++
			return string(s), nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		d.pos++
	}
	buf := append([]byte(nil), d.data[start:d.pos]...)
	for {
		if d.pos >= len(d.data) {
			return "", d.fail("unterminated string")
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(buf), nil
		case c < 0x20:
			return "", d.fail("control character in a string")
		case c == '\\':
			r, err := d.escape()
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", d.fail("invalid utf-8 in a string")
			}
			buf = append(buf, d.data[d.pos:d.pos+size]...)
			d.pos += size
		}
	}
}

// escape decodes one backslash escape, joining a surrogate pair and refusing
// a lone surrogate: the result must be representable as UTF-8.
func (d *decoder) escape() (rune, error) {
	if d.pos+1 >= len(d.data) {
		return 0, d.fail("unterminated escape")
	}
	c := d.data[d.pos+1]
	d.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, err := d.hex4()
		if err != nil {
			return 0, err
		}
		if !utf16.IsSurrogate(r) {
			return r, nil
		}
		if r >= 0xDC00 || d.pos+1 >= len(d.data) || d.data[d.pos] != '\\' || d.data[d.pos+1] != 'u' {
			return 0, d.fail("lone surrogate escape")
		}
		d.pos += 2
		r2, err := d.hex4()
		if err != nil {
			return 0, err
		}
		joined := utf16.DecodeRune(r, r2)
		if joined == utf8.RuneError {
			return 0, d.fail("lone surrogate escape")
		}
		return joined, nil
	default:
		d.pos -= 2
		return 0, d.fail("invalid escape")
	}
}

func (d *decoder) hex4() (rune, error) {
	if len(d.data)-d.pos < 4 {
		return 0, d.fail("short unicode escape")
	}
	n, err := strconv.ParseUint(string(d.data[d.pos:d.pos+4]), 16, 32)
	if err != nil {
		return 0, d.fail("invalid unicode escape")
	}
	d.pos += 4
	return rune(n), nil
}
