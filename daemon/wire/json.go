package wire

import (
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/internal/strictjson"
)

// The frame parsers read JSON with daemon/internal/strictjson, snugd's one
// strict reader, under the lenient text policy: a frame is checked as
// valid UTF-8 once before it is scanned, and a lone surrogate escape reads
// as U+FFFD, as a browser's fetch turns it. One pass validates the whole
// frame and returns its top-level members with their raw values; the frame
// parsers decode only the values they know.

// errSyntax is returned for any text that is not valid JSON.
var errSyntax = errors.New("invalid JSON")

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// reader is the frames' strict JSON reader.
var reader = strictjson.Reader{MaxDepth: maxDepth}

// A member is one key of a JSON object and the raw text of its value.
type member struct {
	key []byte // decoded
	val []byte // raw JSON, starting at its first byte
}

// Kinds of JSON value, named by their first byte.
const (
	kindObject = byte(strictjson.Object)
	kindArray  = byte(strictjson.Array)
	kindString = byte(strictjson.String)
	kindNumber = byte(strictjson.Number)
	kindTrue   = byte(strictjson.True)
	kindFalse  = byte(strictjson.False)
	kindNull   = byte(strictjson.Null)
)

func (m member) kind() byte { return kindOf(m.val) }

func kindOf(v []byte) byte { return byte(strictjson.KindOf(v)) }

// scanObject validates raw as one JSON object surrounded by optional
// whitespace and appends its members, in document order, to out. Keys are
// decoded; duplicates are kept. raw must be valid UTF-8 (checked by the
// caller, once per frame).
func scanObject(raw []byte, out []member) ([]member, error) {
	err := reader.ScanObject(raw, func(key, val []byte) {
		out = append(out, member{key: key, val: val})
	})
	if err != nil {
		return out, errSyntax
	}
	return out, nil
}

// members re-scans a value that scanObject already validated.
func members(val []byte, out []member) []member {
	out, _ = scanObject(val, out)
	return out
}

// stringValue decodes a raw JSON string value.
func stringValue(v []byte) string { return strictjson.Unquote(v) }

// rawStringIs reports whether the raw JSON string v decodes to want,
// without allocating when v holds no escape.
func rawStringIs(v []byte, want string) bool { return strictjson.StringIs(v, want) }

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

// chars counts the characters of s as JSON Schema's maxLength counts
// them: Unicode code points.
func chars(s string) int { return utf8.RuneCountInString(s) }
