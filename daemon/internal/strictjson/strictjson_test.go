package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPolicies: the two text policies differ only in invalid UTF-8 and
// lone surrogate escapes; everything else is refused by both, with the
// offset of the fault.
func TestPolicies(t *testing.T) {
	strict := Reader{MaxDepth: 128, Strict: true}
	lenient := Reader{MaxDepth: 128}
	cases := []struct {
		name, doc     string
		strictErr     string // "" when accepted
		lenientAccept bool
	}{
		{"object", `{"a":[1,-0.5e+10,true,false,null,"x"]}`, "", true},
		{"lone high surrogate", `"\ud800"`, "invalid json at byte 7: lone surrogate escape", true},
		{"lone low surrogate", `"\udc00"`, "invalid json at byte 7: lone surrogate escape", true},
		{"high then not low", `"\ud800\u0041"`, "invalid json at byte 13: lone surrogate escape", true},
		{"pair", `"\ud83d\ude00"`, "", true},
		{"invalid utf-8", "\"a\xffb\"", "invalid json at byte 2: invalid utf-8 in a string", true},
		{"control", "\"a\tb\"", "invalid json at byte 2: control character in a string", false},
		{"bad escape", `"a\x"`, "invalid json at byte 2: invalid escape", false},
		{"short escape", `"\u12"`, "invalid json at byte 3: short unicode escape", false},
		{"trailing", `{} {}`, "invalid json at byte 3: data after the top-level value", false},
		{"leading zero", `01`, "invalid json at byte 1: data after the top-level value", false},
		{"bom", "\uFEFF{}", "invalid json at byte 0: unexpected character", false},
		{"too deep", strings.Repeat("[", 129) + strings.Repeat("]", 129), "invalid json at byte 128: nesting too deep", false},
		{"empty", ``, "invalid json at byte 0: unexpected end of input", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := strict.Decode([]byte(tc.doc))
			if got := errText(err); got != tc.strictErr {
				t.Errorf("strict Decode(%q) = %q, want %q", tc.doc, got, tc.strictErr)
			}
			var se *SyntaxError
			if err != nil && !errors.As(err, &se) {
				t.Errorf("strict Decode(%q) error %T, want *SyntaxError", tc.doc, err)
			}
			if _, err := lenient.Decode([]byte(tc.doc)); (err == nil) != tc.lenientAccept {
				t.Errorf("lenient Decode(%q) = %v, want accepted %v", tc.doc, err, tc.lenientAccept)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestDecodeText: strings decode as encoding/json decodes them (a lone
// surrogate as U+FFFD under the lenient policy), numbers keep their
// literal, members keep document order and duplicates.
func TestDecodeText(t *testing.T) {
	v, err := Reader{}.Decode([]byte(`{"b":"\u00e9\ud800\/","a":1.50,"b":null}`))
	if err != nil {
		t.Fatalf("Decode = %v", err)
	}
	if len(v.Members) != 3 || v.Members[0].Name != "b" || v.Members[1].Name != "a" || v.Members[2].Name != "b" {
		t.Fatalf("Decode members = %+v, want b, a, b", v.Members)
	}
	if got := v.Members[0].Value.Text; got != "é\uFFFD/" {
		t.Errorf("Decode text = %q, want %q", got, "é\uFFFD/")
	}
	if got := v.Members[1].Value.Text; got != "1.50" {
		t.Errorf("Decode number = %q, want 1.50", got)
	}
	if got := Unquote([]byte(`"\ud83d\ude00x"`)); got != "😀x" {
		t.Errorf("Unquote = %q", got)
	}
	if !StringIs([]byte(`"\u0075rl"`), "url") || StringIs([]byte(`1`), "1") {
		t.Error("StringIs disagrees with Unquote")
	}
}

// TestScanObject: the top-level members with raw values, nothing below
// decoded, and anything but one object refused.
func TestScanObject(t *testing.T) {
	var keys, vals []string
	err := Reader{}.ScanObject([]byte(` {"k\"":{"x":[1]},"n":-2} `), func(k, v []byte) {
		keys, vals = append(keys, string(k)), append(vals, string(v))
	})
	if err != nil || strings.Join(keys, ",") != `k",n` || strings.Join(vals, ",") != `{"x":[1]},-2` {
		t.Errorf("ScanObject = %q %q %v", keys, vals, err)
	}
	for _, doc := range []string{`[]`, `1`, ``, `{"a":1}x`, `{"a":}`} {
		if err := (Reader{}).ScanObject([]byte(doc), func(_, _ []byte) {}); err == nil {
			t.Errorf("ScanObject(%q) = nil, want an error", doc)
		}
	}
}

// FuzzDecode: the lenient reader accepts exactly what encoding/json
// accepts (for valid UTF-8 without a deep nest) and decodes strings as it
// does; the strict reader accepts a subset of that.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,{"b":"\ud800"}]}`, `"\ud83d\ude00"`, `-0.1e+2`, `{"a":1,"a":2}`, "[\"\xff\"]", `{"a":01}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		raw := []byte(doc)
		strict, serr := Reader{MaxDepth: 10000, Strict: true}.Decode(raw)
		lenient, lerr := Reader{MaxDepth: 10000}.Decode(raw)
		if serr == nil && lerr != nil {
			t.Fatalf("strict accepts %q, lenient refuses: %v", doc, lerr)
		}
		if serr == nil && !utf8.Valid(raw) {
			t.Fatalf("strict accepts invalid UTF-8 %q", doc)
		}
		if !utf8.Valid(raw) {
			return
		}
		if (lerr == nil) != json.Valid(raw) {
			t.Fatalf("lenient Decode(%q) = %v, json.Valid = %v", doc, lerr, json.Valid(raw))
		}
		if lerr == nil && lenient.Kind == String {
			var want string
			json.Unmarshal(raw, &want)
			if lenient.Text != want {
				t.Fatalf("lenient Decode(%q) = %q, encoding/json %q", doc, lenient.Text, want)
			}
			if serr == nil && strict.Text != want {
				t.Fatalf("strict Decode(%q) = %q, encoding/json %q", doc, strict.Text, want)
			}
		}
	})
}
