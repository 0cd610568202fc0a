package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// maxFileSize bounds one registry data file. The shipped files are a few
// kilobytes; the bound only keeps a broken file from costing much.
const maxFileSize = 64 << 10

// maxDepth bounds the nesting of a registry data file.
const maxDepth = 16

// checkStrict walks a data file's JSON once, before anything is decoded,
// and refuses what encoding/json would let through silently: a duplicate
// key (the last one would win), a null (which would read as absent, so a
// tri-state seat such as browserCallable could be coerced), nesting deeper
// than maxDepth, anything but one object at the top, and anything after it.
// It returns the first problem as a LoadError of RuleJSON.
func checkStrict(file string, data []byte) error {
	if len(data) > maxFileSize {
		return &LoadError{File: file, Path: "$", Rule: RuleJSON, Msg: "file is larger than " + strconv.Itoa(maxFileSize) + " bytes"}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return &LoadError{File: file, Path: "$", Rule: RuleJSON, Msg: "not JSON: " + err.Error()}
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &LoadError{File: file, Path: "$", Rule: RuleJSON, Msg: "the file must hold one JSON object"}
	}
	if err := walkObject(dec, "", 1); err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			le.File = file
			return le
		}
		return &LoadError{File: file, Path: "$", Rule: RuleJSON, Msg: "not JSON: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &LoadError{File: file, Path: "$", Rule: RuleJSON, Msg: "data after the top-level object"}
	}
	return nil
}

// walkObject reads the members of an object whose '{' was just read.
func walkObject(dec *json.Decoder, path string, depth int) error {
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string) // json.Decoder only yields strings as object keys
		p := joinPath(path, key)
		if seen[key] {
			return &LoadError{Path: p, Rule: RuleJSON, Msg: "key appears more than once in its object"}
		}
		seen[key] = true
		if err := walkValue(dec, p, depth); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

func walkValue(dec *json.Decoder, path string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case nil:
		return &LoadError{Path: path, Rule: RuleJSON, Msg: "null is not a value here: leave the key out to mean absent"}
	case json.Delim:
		if depth >= maxDepth {
			return &LoadError{Path: path, Rule: RuleJSON, Msg: "nested deeper than " + strconv.Itoa(maxDepth) + " levels"}
		}
		if t == '{' {
			return walkObject(dec, path, depth+1)
		}
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, indexPath(path, i), depth+1); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	return nil
}

// members decodes a JSON object into its members, keyed exactly as written.
// Unlike encoding/json's struct decoding, which matches keys without regard
// to case, a key must be one of keys byte for byte; any other key is
// refused. Run checkStrict on the file first: members does not look for
// duplicate keys or nulls itself.
func (l *loader) members(raw json.RawMessage, path string, keys []string) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		l.fail(path, RuleJSON, "must be a JSON object")
		return nil, false
	}
	ok := true
	for _, k := range sortedKeys(m) {
		if !slices.Contains(keys, k) {
			l.fail(joinPath(path, k), RuleKeyUnknown, "not a key of this object")
			ok = false
		}
	}
	return m, ok
}

// str decodes a string member; absent is "". want says whether it is
// required.
func (l *loader) str(m map[string]json.RawMessage, path, key string, want bool) string {
	raw, ok := m[key]
	if !ok {
		if want {
			l.fail(joinPath(path, key), RuleKeyMissing, "is required")
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		l.fail(joinPath(path, key), RuleJSON, "must be a string")
		return ""
	}
	if want && s == "" {
		l.fail(joinPath(path, key), RuleKeyMissing, "must not be empty")
	}
	return s
}

// strings decodes an array of strings; absent is nil.
func (l *loader) strings(m map[string]json.RawMessage, path, key string) []string {
	raw, ok := m[key]
	if !ok {
		return nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err != nil {
		l.fail(joinPath(path, key), RuleJSON, "must be an array of strings")
		return nil
	}
	return ss
}

// boolean decodes an optional boolean and keeps absent as nil, never false.
func (l *loader) boolean(m map[string]json.RawMessage, path, key string) *bool {
	raw, ok := m[key]
	if !ok {
		return nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		l.fail(joinPath(path, key), RuleJSON, "must be true or false")
		return nil
	}
	return &b
}

// array splits an array member into its raw items; absent is nil.
func (l *loader) array(m map[string]json.RawMessage, path, key string) []json.RawMessage {
	raw, ok := m[key]
	if !ok {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		l.fail(joinPath(path, key), RuleJSON, "must be an array")
		return nil
	}
	return items
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
