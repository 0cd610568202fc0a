package wire

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// TestScanObjectMatchesEncodingJSON: the scanner accepts exactly the
// objects encoding/json accepts, and decodes keys and strings as it does.
func TestScanObjectMatchesEncodingJSON(t *testing.T) {
	for _, s := range scannerSeeds() {
		checkScanner(t, []byte(s))
	}
}

func scannerSeeds() []string {
	return []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":-0.5e+10,"b":[true,false,null,{"c":"d"}],"e":""}`,
		`{"\u0075rl":"x","k\"ey":"\ud83d\ude00","lone":"\ud800","low":"\udc00x","pair-bad":"\ud800\u0041"}`,
		`{"a":"\b\f\n\r\t\/\\"}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1e}`, `{"a":+1}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}", `{"a" 1}`, `{"a":1,}`, `{,}`, `{"a":[1,]}`, `{"a":[,1]}`,
		`{"a":tru}`, `{"a":nul}`, `{"a":1}}`, `{"a":1} x`, `[]`, `1`, `"s"`, ``, `{`, `{"a":`, `{"a":"`,
		`{"a":{"b":{"c":{}}}}`, `{"a":[[[[[]]]]]}`, "{\"é\":\"ü\"}", "\t\r\n{\"a\":1}\n",
	}
}

func checkScanner(t *testing.T, raw []byte) {
	t.Helper()
	if !utf8.Valid(raw) {
		return
	}
	ms, err := scanObject(raw, nil)
	var want map[string]any
	stdErr := json.Unmarshal(raw, &want)
	if stdErr == nil && want == nil {
		// encoding/json reads a top-level null into a map as a nil map;
		// it is not an object.
		stdErr = errors.New("not an object")
	}
	if (err == nil) != (stdErr == nil) {
		t.Fatalf("scanObject(%q) = %v, encoding/json = %v", raw, err, stdErr)
	}
	if err != nil {
		return
	}
	got := map[string]any{}
	for _, m := range ms {
		var v any
		if err := json.Unmarshal(m.val, &v); err != nil {
			t.Fatalf("scanObject(%q): member %q value %q is not JSON: %v", raw, m.key, m.val, err)
		}
		got[string(m.key)] = v
		if m.kind() == kindString {
			var s string
			json.Unmarshal(m.val, &s)
			if dec := stringValue(m.val); dec != s {
				t.Fatalf("stringValue(%q) = %q, encoding/json = %q", m.val, dec, s)
			}
			if !rawStringIs(m.val, s) {
				t.Fatalf("rawStringIs(%q, %q) = false", m.val, s)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("scanObject(%q) keys %v, encoding/json keys %v", raw, got, want)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Fatalf("scanObject(%q) lacks key %q", raw, k)
		}
	}
}

func TestScanObjectDepth(t *testing.T) {
	deep := make([]byte, 0, 2*maxDepth+20)
	deep = append(deep, `{"a":`...)
	for range maxDepth {
		deep = append(deep, '[')
	}
	for range maxDepth {
		deep = append(deep, ']')
	}
	deep = append(deep, '}')
	if _, err := scanObject(deep, nil); err == nil {
		t.Error("scanObject(nesting over maxDepth) = nil, want an error")
	}
}
