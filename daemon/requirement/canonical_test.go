package requirement

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestCanonical: recursive key sort by bytes, no whitespace, arrays in
// order, minimal string escapes, one spelling per number.
//
// conformance: P3-C12.3-22, P3-C12.3-23
func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{` { "b" : { "d" : [ 3 , 1 , 2 ] , "c" : null } , "a" : true } `, `{"a":true,"b":{"c":null,"d":[3,1,2]}}`},
		{`[{"z":1,"y":[{"x":0,"w":0}]}]`, `[{"y":[{"w":0,"x":0}],"z":1}]`},
		{`["b","a"]`, `["b","a"]`},
		{`{}`, `{}`},
		{`[]`, `[]`},
		{`"<>&\u2028"`, "\"<>&\u2028\""},
		{`"\u00e9\/\"\\"`, `"é/\"\\"`},
		{`"\u0001\u001f\b\f\n\r\t"`, `"\u0001\u001f\b\f\n\r\t"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`{"a":1,"B":2,"é":3,"\ue000":4,"\uffff":5,"😀":6}`, "{\"B\":2,\"a\":1,\"é\":3,\"\ue000\":4,\"\uffff\":5,\"😀\":6}"},
		{`false`, `false`},
	}
	for _, tc := range tests {
		got, err := Canonical([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%s) = %s, %v, want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestCanonicalNumbers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"0.0", "0"}, {"-0e5", "0"}, {"0e-999", "0"},
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10e-1", "1"}, {"0.1e1", "1"}, {"1E+0", "1"},
		{"100", "100"}, {"1e2", "100"}, {"-1.25E+2", "-125"},
		{"0.5", "0.5"}, {"5e-1", "0.5"}, {"0.000001", "0.000001"}, {"1e-7", "1e-7"}, {"1.5e-7", "1.5e-7"},
		{"1e20", "100000000000000000000"}, {"1e21", "1e+21"}, {"123e20", "1.23e+22"},
		{"12345678901234567890", "12345678901234567890"}, {"1234567890123456789012", "1.234567890123456789012e+21"},
		{"3.14159265358979323846264338327950288", "3.14159265358979323846264338327950288"},
		{"1e999999999", "1e+999999999"}, {"-2.50e-999999999", "-2.5e-999999999"}, {"0.1e999999999", "1e+999999998"},
	}
	for _, tc := range tests {
		got, err := Canonical([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%s) = %s, %v, want %s", tc.in, got, err, tc.want)
		}
		again, err := Canonical([]byte(got))
		if err != nil || again != got {
			t.Errorf("Canonical(%s) = %s, %v, not idempotent", got, again, err)
		}
	}
	for _, in := range []string{"1e1000000000", "1e-1000000000", "10e999999999", "0.01e-999999998", "1e9999999999999999999"} {
		if got, err := Canonical([]byte(in)); err == nil {
			t.Errorf("Canonical(%s) = %s, want an error", in, got)
		}
	}
}

func TestCanonicalRefuses(t *testing.T) {
	for _, in := range []string{
		``, `{`, `{"a":1,"a":2}`, `[{"a":{"b":1,"b":1}}]`, `{"a":1}x`, `"\ud800"`, "\"\xff\"", `01`, `[1,]`, `nul`,
		strings.Repeat("[", 129) + strings.Repeat("]", 129),
	} {
		got, err := Canonical([]byte(in))
		if err == nil {
			t.Errorf("Canonical(%q) = %s, want an error", in, got)
			continue
		}
		if len(in) > 3 && strings.Contains(err.Error(), in) {
			t.Errorf("Canonical(%q) error %q repeats the input", in, err)
		}
	}
	if _, err := Canonical([]byte(strings.Repeat("[", 128) + strings.Repeat("]", 128))); err != nil {
		t.Errorf("Canonical(128 levels) = %v, want it accepted", err)
	}
}

// TestRequirementCanonical: key order and whitespace do not change the
// canonical form; array order and content do; the canonical form is a
// string compared with ==.
//
// conformance: P3-C12.3-22, P3-C12.3-23, P3-C12.3-24
func TestRequirementCanonical(t *testing.T) {
	raw := readTestdata(t, "coinbase-exchange.json")
	r := mustParse(t, raw, Options{})
	c := r.Canonical()

	golden := strings.TrimSpace(string(readTestdata(t, "coinbase-exchange.canonical.json")))
	if c != golden {
		t.Errorf("Canonical(coinbase) = %s\nwant the checked-in golden form %s", c, golden)
	}
	if direct, err := Canonical(raw); err != nil || direct != c {
		t.Errorf("Canonical(raw) = %s, %v, want %s (nothing to normalize)", direct, err, c)
	}

	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(m, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	if got := mustParse(t, indented, Options{}).Canonical(); got != c {
		t.Errorf("Canonical(reindented, re-sorted) = %s, want %s", got, c)
	}

	scopes := checkAccepted(t, oauthDoc, func(doc) {}, Options{}).Canonical()
	swapped := checkAccepted(t, oauthDoc, set("scopes", []any{"playlist-read-private", "user-read-private"}), Options{}).Canonical()
	if scopes == swapped {
		t.Errorf("reordered scopes give the same canonical form %s", scopes)
	}
	steps := checkAccepted(t, baseDoc, set("registration.instructions", []any{"Open API keys and create a key.", "Sign in to OpenWeather."}), Options{}).Canonical()
	if steps == checkAccepted(t, baseDoc, func(doc) {}, Options{}).Canonical() {
		t.Errorf("reordered instructions give the same canonical form")
	}
	fields := checkAccepted(t, baseDoc, all(withFields([]any{fieldDoc(1), fieldDoc(2)}), del("request")), Options{}).Canonical()
	if fields == checkAccepted(t, baseDoc, all(withFields([]any{fieldDoc(2), fieldDoc(1)}), del("request")), Options{}).Canonical() {
		t.Errorf("reordered fields give the same canonical form")
	}
}

// TestRequirementCanonicalNormalizes: the canonical form holds normalized
// hosts and the explicit pkce default, and round-trips.
//
// conformance: P3-C12.5-29
func TestRequirementCanonicalNormalizes(t *testing.T) {
	r := checkAccepted(t, oauthDoc, all(del("pkce"), set("declaredApiHosts", []any{"API.Bücher.de"})), Options{})
	c := r.Canonical()
	for _, want := range []string{`"declaredApiHosts":["api.xn--bcher-kva.de"]`, `"pkce":true`} {
		if !strings.Contains(c, want) {
			t.Errorf("Canonical = %s, want it to contain %s", c, want)
		}
	}
	checkRoundTrip(t, []byte(c), Options{})
}

// checkRoundTrip asserts the round-trip property on an accepted document:
// Parse(Canonical(r)) equals r and has the same canonical form.
func checkRoundTrip(t testing.TB, raw []byte, opts Options) {
	t.Helper()
	r, vs := Parse(raw, opts)
	if vs != nil {
		t.Fatalf("Parse(%s) violations:\n%s", raw, violationList(vs))
	}
	c := r.Canonical()
	r2, vs := Parse([]byte(c), opts)
	if vs != nil {
		t.Fatalf("Parse(Canonical) violations:\n%s\ncanonical: %s", violationList(vs), c)
	}
	if c2 := r2.Canonical(); c2 != c {
		t.Fatalf("Canonical not stable:\n%s\n%s", c, c2)
	}
	if !reflect.DeepEqual(r, r2) {
		t.Fatalf("Parse(Canonical(r)) = %#v, want %#v", r2, r)
	}
	if direct, err := Canonical([]byte(c)); err != nil || direct != c {
		t.Fatalf("Canonical(r.Canonical()) = %s, %v, want it unchanged", direct, err)
	}
}

func TestRequirementCanonicalRoundTrip(t *testing.T) {
	for name, d := range map[string]func() doc{
		"api key": baseDoc, "oauth": oauthDoc, "lan": lanDoc, "none": noneDoc, "linked": linkedDoc, "registry": registryDoc,
	} {
		t.Run(name, func(t *testing.T) {
			checkRoundTrip(t, encode(t, d()), Options{AllowUserLayer: true})
		})
	}
	t.Run("coinbase", func(t *testing.T) {
		checkRoundTrip(t, readTestdata(t, "coinbase-exchange.json"), Options{})
	})
}

// Canonical returns the canonical form (writeCanonical) of any
// JSON document, the oracle the tests hold Requirement.Canonical to. The
// document must be strict JSON: valid UTF-8, no duplicate object keys, no
// lone surrogate escapes, at most 128 levels deep. Errors name a byte
// offset or a path, never the document's text.
func Canonical(raw []byte) (string, error) {
	v, dups, err := decodeJSON(raw)
	if err != nil {
		return "", err
	}
	if len(dups) > 0 {
		return "", errors.New("duplicate key at " + dups[0].path)
	}
	var b strings.Builder
	if err := writeCanonical(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}
