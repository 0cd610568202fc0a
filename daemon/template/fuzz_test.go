package template_test

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/template"
)

// FuzzCompile lints arbitrary template values in both placements.
// Properties: Compile never panics and is deterministic; it returns a Set
// exactly when it reports no finding, the Set is well formed (no
// unresolved operand, no call outside the enum or its arity), and every
// finding carries a
// documented rule and a path in the requirement; a compiled Set renders
// arbitrary field values without panicking, deterministically under a
// fixed clock and randomness; no render error holds a value; no rendered
// header value ever holds CR, LF, NUL or a byte outside printable ASCII.
func FuzzCompile(f *testing.F) {
	seed, _ := rfc8032Key(f)
	f.Add("Bearer {{api_key}}", "sk-test")
	f.Add("{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}", base64.StdEncoding.EncodeToString([]byte("secret")))
	f.Add("{{hmac_sha256(api_secrt, request.body)}}", "x")
	f.Add("{{base64(hmac_sha256(api_key, request.body))}}", "x")
	f.Add("{{base64('é')}}{{'}}'}}{ }", "x")
	f.Add("{{cdp_jwt(key_name, private_key)}}", base64.StdEncoding.EncodeToString(seed))
	f.Add("{{timestamp()}}-{{request.timestamp}}", "")
	f.Add("x\r\n{{api_key}}", "a\r\nb")
	f.Add(`{{'it\'s \\'}}`, "v")
	f.Add("{{api_key}}", "line\nbreak")
	rules := map[string]bool{}
	for _, r := range template.Rules() {
		rules[r] = true
	}
	fields := []string{"api_key", "api_secret", "key_name", "private_key"}
	f.Fuzz(func(t *testing.T, value, fieldValue string) {
		tpl := template.Templates{
			Header: map[string]string{"X-Fuzz": value, "Authorization": "Bearer {{api_key}}"},
			Query:  map[string]string{"q": value},
		}
		set, fs := template.Compile(fields, tpl)
		set2, fs2 := template.Compile(fields, tpl)
		if !reflect.DeepEqual(fs, fs2) || (set == nil) != (set2 == nil) {
			t.Fatalf("Compile(%q) is not deterministic: %v then %v", value, fs, fs2)
		}
		if (set == nil) == (len(fs) == 0) {
			t.Fatalf("Compile(%q) = set %v with %d findings", value, set != nil, len(fs))
		}
		for _, fd := range fs {
			if !rules[fd.Rule] || fd.Message == "" ||
				(fd.Path != "request.headerTemplate.X-Fuzz" && fd.Path != "request.queryTemplate.q") {
				t.Fatalf("Compile(%q) finding %+v: undocumented rule, empty message or stray path", value, fd)
			}
		}
		if set == nil {
			return
		}
		if err := template.WellFormed(set); err != nil {
			t.Fatalf("Compile(%q) set is not well formed: %v", value, err)
		}
		values := map[string]string{"api_key": fieldValue, "api_secret": fieldValue, "key_name": fieldValue, "private_key": fieldValue}
		env := func() template.Env {
			return template.Env{Now: fixedNow, Rand: bytes.NewReader(make([]byte, 64))}
		}
		req := template.Request{Method: "POST", URL: "https://h.test/p?x=1", PathAndQuery: "/p?x=1", Body: fieldValue}
		out, err := set.Render(values, req, env())
		out2, err2 := set.Render(values, req, env())
		if !reflect.DeepEqual(out, out2) || (err == nil) != (err2 == nil) {
			t.Fatalf("Render(%q) is not deterministic", value)
		}
		// Errors never hold a value: mark every value and look for the mark.
		marked := map[string]string{}
		for k, v := range values {
			marked[k] = "ZQ9" + v
		}
		if _, err := set.Render(marked, template.Request{Method: "GET", URL: "https://h.test/", Body: "ZQ9"}, env()); err != nil && strings.Contains(err.Error(), "ZQ9") {
			t.Fatalf("Render(%q) error %q holds a value", value, err)
		}
		if err != nil {
			return
		}
		for _, h := range out.Headers {
			for i := 0; i < len(h.Value); i++ {
				if c := h.Value[i]; c < 0x20 || c > 0x7e {
					t.Fatalf("Render(%q) header %s holds byte %#x", value, h.Name, c)
				}
			}
		}
		if _, err := template.PlaceQuery(req.URL, out.Query); err != nil {
			t.Fatalf("PlaceQuery after Render(%q) = %v", value, err)
		}
	})
}

// FuzzPlaceQuery places an arbitrary pair on an arbitrary URL. Properties:
// no panic; the URL's bytes before the fragment and the fragment itself are
// preserved; the result parses, and the placed pair decodes back to the
// name and value.
func FuzzPlaceQuery(f *testing.F) {
	f.Add("https://h/p", "appid", "k")
	f.Add("https://h/p?a=%7e&b=c+d#frag", "ids[]", "a b+c&d=e?f#g")
	f.Add("https://h/p?", "k", "é\r\n\x00")
	f.Add("https://h/p#x?y", "k", "")
	f.Fuzz(func(t *testing.T, rawURL, name, value string) {
		got, err := template.PlaceQuery(rawURL, []template.Pair{{Name: name, Value: value}})
		if err != nil {
			if msg := err.Error(); msg != "place query: the url does not parse" && msg != "place query: a parameter has an empty name" {
				t.Fatalf("PlaceQuery error %q is not one of its fixed texts", msg)
			}
			return
		}
		base, frag, _ := strings.Cut(rawURL, "#")
		if !strings.HasPrefix(got, base) {
			t.Fatalf("PlaceQuery(%q) = %q: the URL's bytes are not preserved", rawURL, got)
		}
		if strings.Contains(rawURL, "#") && !strings.HasSuffix(got, "#"+frag) {
			t.Fatalf("PlaceQuery(%q) = %q: the fragment is not preserved", rawURL, got)
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("url.Parse(PlaceQuery(%q)) = %v", rawURL, err)
		}
		placed := u.RawQuery[strings.LastIndexByte(u.RawQuery, '&')+1:]
		n, v, _ := strings.Cut(placed, "=")
		dn, err1 := url.PathUnescape(n)
		dv, err2 := url.PathUnescape(v)
		if err1 != nil || err2 != nil || dn != name || dv != value {
			t.Fatalf("PlaceQuery(%q, %q=%q) placed %q, which decodes to %q=%q", rawURL, name, value, placed, dn, dv)
		}
	})
}
