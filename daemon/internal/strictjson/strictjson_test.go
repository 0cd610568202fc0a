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
		{"low then low", `"\udc00\udc00"`, "invalid json at byte 7: lone surrogate escape", true},
		{"invalid utf-8", "\"a\xffb\"", "invalid json at byte 2: invalid utf-8 in a string", true},
		{"control", "\"a\tb\"", "invalid json at byte 2: control character in a string", false},
		{"control nul", "\"a\x00b\"", "invalid json at byte 2: control character in a string", false},
		{"control 0x1f", "\"a\x1fb\"", "invalid json at byte 2: control character in a string", false},
		{"space", "\"a b\"", "", true},
		{"non-ASCII 0x80", "\"a\x80b\"", "invalid json at byte 2: invalid utf-8 in a string", true},
		{"unterminated after escape", `"\u0041`, "invalid json at byte 7: unterminated string", false},
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

// agreeDocs are documents every Reader accepts; TestAgreesWithEncodingJSON
// cuts and damages them.
var agreeDocs = []string{
	`{"a":[1,-0.5e+10,true,false,null,"x\u00e9\n"],"b":{"c":[]},"d":{},"e":[{}]}`,
	`[1.5E-3,{"k":"v"},[[]],"\ud83d\ude00",0,-0,10e5,1E+2,3e-1]`,
	` { "sp" : [ 1 , 2 ] , "t" : "\"\\\/\b\f\n\r\t" } `,
	`"\ud800\udc00\udbff\udfff"`,
	`true`, `false`, `null`, `-12.34e+5`, `79`, `"é"`,
}

// lenientDocs are documents only the lenient reader accepts: lone
// surrogates, which it decodes to U+FFFD as encoding/json does.
var lenientDocs = []string{`"\udc00\udc00"`, `"\ud800\ud800"`, `"\ud800x\udc00"`, `["\udbff"]`}

// TestAgreesWithEncodingJSON: on every document above, every prefix of
// it, and every copy with one byte dropped, the lenient reader accepts
// exactly what encoding/json accepts; the strict reader and ScanObject
// never accept what the lenient one refuses; a refusal is a
// *SyntaxError, never a panic. A cut at the end of input is where a
// bounds check that is one off reads past the document.
func TestAgreesWithEncodingJSON(t *testing.T) {
	strict := Reader{MaxDepth: 128, Strict: true}
	lenient := Reader{MaxDepth: 128}
	check := func(doc string) {
		t.Helper()
		raw := []byte(doc)
		lv, lerr := lenient.Decode(raw)
		if want := json.Valid(raw); (lerr == nil) != want {
			t.Errorf("lenient Decode(%q) = %v, json.Valid = %v", doc, lerr, want)
		}
		_, serr := strict.Decode(raw)
		if serr == nil && lerr != nil {
			t.Errorf("strict Decode(%q) accepts what lenient refuses: %v", doc, lerr)
		}
		oerr := lenient.ScanObject(raw, func(_, _ []byte) {})
		if wantObj := lerr == nil && lv.Kind == Object; (oerr == nil) != wantObj {
			t.Errorf("ScanObject(%q) = %v, want accepted %t", doc, oerr, wantObj)
		}
		for _, err := range []error{lerr, serr, oerr} {
			var se *SyntaxError
			if err != nil && !errors.As(err, &se) {
				t.Errorf("Decode(%q) error %T, want *SyntaxError", doc, err)
			}
		}
		// A lenient caller has checked the document is UTF-8 already.
		if lerr == nil && lv.Kind == String && utf8.Valid(raw) {
			var want string
			if err := json.Unmarshal(raw, &want); err != nil || lv.Text != want {
				t.Errorf("lenient Decode(%q) = %q, encoding/json %q (%v)", doc, lv.Text, want, err)
			}
		}
	}
	for _, doc := range lenientDocs {
		check(doc)
	}
	for _, doc := range agreeDocs {
		if _, err := strict.Decode([]byte(doc)); err != nil {
			t.Fatalf("strict Decode(%q) = %v, want accepted", doc, err)
		}
		for i := 0; i <= len(doc); i++ {
			check(doc[:i])
		}
		for i := 0; i < len(doc); i++ {
			check(doc[:i] + doc[i+1:])
		}
	}
}

// TestDepthObjects: the nesting limit counts objects as it counts arrays,
// in a tree and in ScanObject alike.
func TestDepthObjects(t *testing.T) {
	r := Reader{MaxDepth: 3}
	ok, deep := `{"a":{"b":{}}}`, `{"a":{"b":{"c":{}}}}`
	if _, err := r.Decode([]byte(ok)); err != nil {
		t.Errorf("Decode(3 deep) = %v", err)
	}
	if err := r.ScanObject([]byte(ok), func(_, _ []byte) {}); err != nil {
		t.Errorf("ScanObject(3 deep) = %v", err)
	}
	want := "invalid json at byte 15: nesting too deep"
	if _, err := r.Decode([]byte(deep)); errText(err) != want {
		t.Errorf("Decode(4 deep) = %v, want %q", err, want)
	}
	if err := r.ScanObject([]byte(deep), func(_, _ []byte) {}); errText(err) != want {
		t.Errorf("ScanObject(4 deep) = %v, want %q", err, want)
	}
}

// TestKindAndStringIs: a number's kind by each leading byte, and StringIs
// on raw text with and without escapes.
func TestKindAndStringIs(t *testing.T) {
	for _, raw := range []string{"-1", "0", "5", "9"} {
		if got := KindOf([]byte(raw)); got != Number {
			t.Errorf("KindOf(%q) = %q, want Number", raw, got)
		}
	}
	for raw, want := range map[string]Kind{`"x"`: String, `{}`: Object, `[]`: Array, `true`: True, `null`: Null, ``: 0} {
		if got := KindOf([]byte(raw)); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", raw, got, want)
		}
	}
	if !StringIs([]byte(`"url"`), "url") || StringIs([]byte(`"url"`), "uri") || StringIs([]byte(`"\u0075ri"`), "url") {
		t.Error("StringIs disagrees with Unquote")
	}
}
