package requirement

import "github.com/snug/snugd/daemon/internal/strictjson"

// A requirement is read with daemon/internal/strictjson, snugd's one strict
// JSON reader, under its strict text policy: encoding/json keeps the last
// of two duplicate keys, turns invalid UTF-8 and lone surrogates into
// U+FFFD, and loses member order, and a requirement needs all three refused
// or kept. The reader's tree becomes the one the schema walk and the
// canonical encoder share.

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

// A duplicateKey is an object that names one member twice. path is the
// schema path of the second occurrence.
type duplicateKey struct {
	path string
}

// reader is the requirement's strict JSON reader: daemon/internal/strictjson
// under its strict text policy.
var reader = strictjson.Reader{MaxDepth: maxDepth, Strict: true}

// decodeJSON reads exactly one JSON value from data. It refuses what RFC
// 8259 refuses plus: invalid UTF-8, escapes that decode to a lone surrogate,
// a byte order mark and nesting deeper than maxDepth; errors are
// *strictjson.SyntaxError. Duplicate object keys do not stop the read:
// every one is reported, in document order, so a caller can name them all.
func decodeJSON(data []byte) (*jsonValue, []*duplicateKey, error) {
	root, err := reader.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	var b builder
	return b.tree(root), b.dups, nil
}

// builder turns a decoded tree into the package's document model, noting
// every duplicate key on the way.
type builder struct {
	dups []*duplicateKey
	// stack is the path to the value being built, rendered into a string
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

func (b *builder) path() string {
	p := ""
	for _, s := range b.stack {
		if s.index >= 0 {
			p = indexPath(p, s.index)
		} else {
			p = joinKey(p, s.name, s.pos)
		}
	}
	return p
}

func (b *builder) tree(v *strictjson.Value) *jsonValue {
	switch v.Kind {
	case strictjson.Null:
		return &jsonValue{kind: jsonNull}
	case strictjson.True, strictjson.False:
		return &jsonValue{kind: jsonBool, b: v.Kind == strictjson.True}
	case strictjson.Number:
		return &jsonValue{kind: jsonNumber, s: v.Text}
	case strictjson.String:
		return &jsonValue{kind: jsonString, s: v.Text}
	case strictjson.Array:
		out := &jsonValue{kind: jsonArray, items: make([]*jsonValue, len(v.Items))}
		for i, item := range v.Items {
			b.stack = append(b.stack, pathSeg{index: i})
			out.items[i] = b.tree(item)
			b.stack = b.stack[:len(b.stack)-1]
		}
		return out
	default:
		out := &jsonValue{kind: jsonObject, members: make([]jsonMember, len(v.Members))}
		var seen map[string]bool
		for i, m := range v.Members {
			if seen == nil {
				seen = make(map[string]bool, len(v.Members))
			}
			b.stack = append(b.stack, pathSeg{name: m.Name, pos: i, index: -1})
			if seen[m.Name] {
				b.dups = append(b.dups, &duplicateKey{path: b.path()})
			}
			seen[m.Name] = true
			out.members[i] = jsonMember{name: m.Name, value: b.tree(m.Value)}
			b.stack = b.stack[:len(b.stack)-1]
		}
		return out
	}
}
