package template_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/template"
)

// testFields are the declared field keys most lint tests run against.
var testFields = []string{"api_key", "api_secret", "passphrase", "key_name", "private_key"}

// rulesOf returns the rules of findings, in order.
func rulesOf(fs []template.Finding) []string {
	var r []string
	for _, f := range fs {
		r = append(r, f.Rule)
	}
	return r
}

// lintValue lints one template value in the given placement.
func lintValue(query bool, fields []string, value string) (*template.Set, []template.Finding) {
	t := template.Templates{Header: map[string]string{"X-Test": value}}
	if query {
		t = template.Templates{Query: map[string]string{"test": value}}
	}
	return template.Compile(fields, t)
}

// grammarCases are template values and the rules their lint reports, in
// order; nil means the value compiles. Every case runs in both placements.
var grammarCases = []struct {
	name  string
	value string
	rules []string
	msg   string // a substring of the first finding's message
}{
	// What a value may reference.
	{"field key", "Bearer {{api_key}}", nil, ""},
	{"spaces around expression", "{{ api_key }}", nil, ""},
	{"spaces around arguments", "{{ hmac_sha256( api_secret , request.body ) }}", nil, ""},
	{"every request token", "{{request.method}} {{request.url}} {{request.pathAndQuery}} {{request.body}} {{request.timestamp}}", nil, ""},
	{"every helper", "{{timestamp()}}{{base64(api_key)}}{{hmac_sha256(api_secret, 'm')}}{{hmac_sha256_b64(api_secret, 'm')}}{{cdp_jwt(key_name, private_key)}}", nil, ""},
	{"timestamp with spaces", "{{ timestamp( ) }}", nil, ""},
	{"request.timestamp as an argument", "{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}", nil, ""},
	{"hmac_sha256_b64 with six arguments", "{{hmac_sha256_b64(api_secret, 'a', 'b', 'c', 'd', 'e')}}", nil, ""},
	{"quoted literal placed directly", "{{'Bearer '}}{{api_key}}", nil, ""},
	{"empty literal", "{{''}}", nil, ""},
	{"empty value", "", nil, ""},
	{"lone braces are text", "{a} {b}c} {", nil, ""},
	{"lone brace before a placeholder", "x{ {{api_key}}", nil, ""},
	{"quote in static text", "it's {{api_key}}", nil, ""},
	{"literal holding commas and parentheses", "{{hmac_sha256(api_secret, 'a,b(c)')}}", nil, ""},
	{"literal holding }} and {{", "{{hmac_sha256(api_secret, '}}{{')}}{{'}}'}}{{'{{'}}", nil, ""},
	{"escaped quote and backslash", `{{'it\'s a \\'}}`, nil, ""},
	{"non-ASCII inside a helper argument", "{{base64('é')}}", nil, ""},
	{"exactly 300 characters", strings.Repeat("a", 289) + "{{api_key}}", nil, ""},

	// Braces.
	{"unclosed placeholder", "{{", []string{template.RuleUnclosed}, "never closed"},
	{"unclosed after a name", "Bearer {{api_key", []string{template.RuleUnclosed}, ""},
	{"closed with one brace", "{{api_key}", []string{template.RuleUnclosed}, ""},
	{"unclosed call", "{{base64(api_key", []string{template.RuleUnclosed}, ""},
	{"stray close", "}}", []string{template.RuleStrayClose}, "stray }}"},
	{"stray close before a placeholder", "a}}b{{api_key}}", []string{template.RuleStrayClose}, ""},
	{"empty placeholder", "{{}}", []string{template.RuleEmptyPlaceholder}, "empty placeholder"},
	{"blank placeholder", "{{   }}", []string{template.RuleEmptyPlaceholder}, ""},
	{"triple open brace", "{{{api_key}}}", []string{template.RuleSyntax}, ""},
	{"placeholder inside a placeholder", "{{ {{api_key}} }}", []string{template.RuleSyntax, template.RuleStrayClose}, ""},

	// Whitespace and characters.
	{"tab before expression", "{{\tapi_key}}", []string{template.RuleWhitespace}, "tab"},
	{"tab between arguments", "{{hmac_sha256(api_secret,\trequest.body)}}", []string{template.RuleWhitespace}, ""},
	{"newline inside placeholder", "{{api_key\n}}", []string{template.RuleWhitespace}, "line feed"},
	{"carriage return inside placeholder", "{{\rapi_key}}", []string{template.RuleWhitespace}, ""},
	{"no-break space inside placeholder", "{{base64(\u00a0'x')}}", []string{template.RuleWhitespace}, ""},
	{"newline in static text", "Bearer {{api_key}}\n", []string{template.RuleNonPrintable}, "line feed"},
	{"CRLF header injection in static text", "x\r\nX-Evil: 1", []string{template.RuleNonPrintable, template.RuleNonPrintable}, ""},
	{"tab in static text", "Bearer\t{{api_key}}", []string{template.RuleNonPrintable}, ""},
	{"NUL in static text", "a\x00b", []string{template.RuleNonPrintable}, "NUL"},
	{"non-ASCII static text", "é{{api_key}}", []string{template.RuleNonPrintable}, "U+00E9"},
	{"non-ASCII literal placed directly", "{{'é'}}", []string{template.RuleNonPrintable}, "placed directly"},
	{"tab inside a literal argument", "{{base64('a\tb')}}", []string{template.RuleNonPrintable}, ""},
	{"bidi override inside a literal argument", "{{base64('a\u202eb')}}", []string{template.RuleNonPrintable}, "U+202E"},
	{"not UTF-8", "a\xffb", []string{template.RuleNonPrintable}, "UTF-8"},
	{"301 characters", strings.Repeat("a", 301), []string{template.RuleTooLong}, "301"},
	{"301 characters with a placeholder", strings.Repeat("a", 290) + "{{api_key}}", []string{template.RuleTooLong}, ""},
	{"300 UTF-16 units of astral characters", "{{base64('" + strings.Repeat("😀", 143) + "')}}", nil, ""},
	{"302 UTF-16 units in 158 code points", "{{base64('" + strings.Repeat("😀", 144) + "')}}", []string{template.RuleTooLong}, "302 characters"},

	// Literals.
	{"unterminated literal", "{{'abc}}", []string{template.RuleUnterminatedLiteral}, ""},
	{"unterminated literal argument", "{{base64('abc)}}", []string{template.RuleUnterminatedLiteral}, ""},
	{"escaped closing quote leaves literal open", `{{'abc\'}}`, []string{template.RuleUnterminatedLiteral}, ""},
	{"stray quote after a name", "{{api_key'}}", []string{template.RuleSyntax}, "quote"},
	{"quoted close braces", "{{'api_key}}'}}", nil, ""},
	{"two adjacent literals", "{{'a''b'}}", []string{template.RuleSyntax}, ""},
	{"backslash n", `{{base64('a\nb')}}`, []string{template.RuleBadEscape}, "only escapes"},
	{"backslash x", `{{'\x41'}}`, []string{template.RuleBadEscape}, ""},
	{"backslash u", `{{'\u0041'}}`, []string{template.RuleBadEscape}, ""},
	{"two bad escapes", `{{'\t\r'}}`, []string{template.RuleBadEscape, template.RuleBadEscape}, ""},
	{"double-quoted literal", `{{"api_key"}}`, []string{template.RuleSyntax}, ""},

	// Syntax.
	{"two names", "{{api_key api_secret}}", []string{template.RuleSyntax}, ""},
	{"missing comma", "{{hmac_sha256(api_secret request.body)}}", []string{template.RuleSyntax}, ""},
	{"double comma", "{{hmac_sha256(api_secret,,request.body)}}", []string{template.RuleSyntax}, "expected an argument"},
	{"trailing comma", "{{hmac_sha256(api_secret,)}}", []string{template.RuleSyntax}, ""},
	{"leading comma", "{{hmac_sha256(,api_secret)}}", []string{template.RuleSyntax}, ""},
	{"space before parenthesis", "{{base64 ('x')}}", []string{template.RuleSyntax}, "space between"},
	{"call missing close parenthesis", "{{base64(api_key}}", []string{template.RuleSyntax}, ""},
	{"linted on past an error at }}", "{{base64(api_key }}{{nope}}", []string{template.RuleSyntax, template.RuleUnknownIdentifier}, ""},
	{"linted on past an argument cut at }}", "{{base64(}}{{nope}}", []string{template.RuleSyntax, template.RuleUnknownIdentifier}, ""},
	{"sigil", "{{$api_key}}", []string{template.RuleSyntax}, ""},
	{"pipe", "{{api_key | base64}}", []string{template.RuleSyntax}, ""},
	{"concatenation", "{{api_key + api_secret}}", []string{template.RuleSyntax}, ""},

	// Names.
	{"transposed field key", "{{hmac_sha256(api_secrt, request.body)}}", []string{template.RuleUnknownIdentifier},
		"unknown identifier api_secrt: did you mean api_secret?"},
	{"environment variable", "{{env.HOME}}", []string{template.RuleUnknownIdentifier}, "env.HOME"},
	{"request headers", "{{request.headers}}", []string{template.RuleUnknownIdentifier}, "request.headers"},
	{"request namespace alone", "{{request}}", []string{template.RuleUnknownIdentifier}, ""},
	{"request token wrong case", "{{request.Method}}", []string{template.RuleUnknownIdentifier}, "did you mean request.method?"},
	{"request timestamp misspelt", "{{request.timestmap}}", []string{template.RuleUnknownIdentifier}, "did you mean request.timestamp?"},
	{"field key wrong case", "{{API_KEY}}", []string{template.RuleUnknownIdentifier}, ""},
	{"helper name without call", "{{timestamp}}", []string{template.RuleUnknownIdentifier}, "call it as timestamp()"},
	{"number", "{{1}}", []string{template.RuleUnknownIdentifier}, ""},
	{"unknown identifier in an argument", "{{base64(apikey)}}", []string{template.RuleUnknownIdentifier}, "did you mean api_key?"},

	// Helpers.
	{"unknown helper sha1", "{{sha1(x)}}", []string{template.RuleUnknownHelper, template.RuleUnknownIdentifier}, "unknown helper sha1"},
	{"unknown helper hmac_sha512", "{{hmac_sha512(api_secret, 'm')}}", []string{template.RuleUnknownHelper}, "unknown helper hmac_sha512"},
	{"unknown helper md5", "{{md5(api_key)}}", []string{template.RuleUnknownHelper}, ""},
	{"unknown helper env", "{{env('HOME')}}", []string{template.RuleUnknownHelper}, ""},
	{"helper wrong case", "{{Base64('x')}}", []string{template.RuleUnknownHelper}, "did you mean base64?"},
	{"helper two edits off", "{{bse64x('x')}}", []string{template.RuleUnknownHelper}, "did you mean base64?"},
	{"cdp_jwt with a literal first", "{{cdp_jwt('k', private_key)}}", []string{template.RuleCDPJWTArgument}, "argument 1 of cdp_jwt is a quoted literal"},
	{"cdp_jwt with a request token second", "{{cdp_jwt(key_name, request.body)}}", []string{template.RuleCDPJWTArgument}, "argument 2 of cdp_jwt is a request token"},
	{"request token called", "{{request.body()}}", []string{template.RuleUnknownHelper}, ""},
	{"timestamp with an argument", "{{timestamp(api_key)}}", []string{template.RuleArity}, "timestamp takes 0 arguments, not 1"},
	{"base64 with none", "{{base64()}}", []string{template.RuleArity}, "base64 takes exactly 1 argument, not 0"},
	{"base64 with two", "{{base64(api_key, api_secret)}}", []string{template.RuleArity}, ""},
	{"hmac_sha256 with one", "{{hmac_sha256(api_secret)}}", []string{template.RuleArity}, "exactly 2"},
	{"hmac_sha256 with three", "{{hmac_sha256(api_secret, 'a', 'b')}}", []string{template.RuleArity}, ""},
	{"hmac_sha256_b64 with one", "{{hmac_sha256_b64(api_secret)}}", []string{template.RuleArity}, "2 to 6"},
	{"hmac_sha256_b64 with seven", "{{hmac_sha256_b64(api_secret, 'a', 'b', 'c', 'd', 'e', 'f')}}", []string{template.RuleArity}, ""},
	{"cdp_jwt with one", "{{cdp_jwt(key_name)}}", []string{template.RuleArity}, ""},
	{"cdp_jwt with three", "{{cdp_jwt(key_name, private_key, api_key)}}", []string{template.RuleArity}, ""},
	{"cdp_jwt with a literal", "{{cdp_jwt('k', private_key)}}", []string{template.RuleCDPJWTArgument}, "quoted literal"},
	{"cdp_jwt with a literal key", "{{cdp_jwt(key_name, 'x')}}", []string{template.RuleCDPJWTArgument}, ""},
	{"cdp_jwt with a request token", "{{cdp_jwt(request.url, private_key)}}", []string{template.RuleCDPJWTArgument}, "request token"},
	{"cdp_jwt with request.timestamp", "{{cdp_jwt(key_name, request.timestamp)}}", []string{template.RuleCDPJWTArgument}, ""},
	{"cdp_jwt with two literals", "{{cdp_jwt('a', 'b')}}", []string{template.RuleCDPJWTArgument, template.RuleCDPJWTArgument}, ""},

	// Nesting.
	{"nested call", "{{base64(hmac_sha256(api_secret, request.body))}}", []string{template.RuleNestedCall}, "nested call hmac_sha256"},
	{"nested timestamp", "{{hmac_sha256(api_secret, timestamp())}}", []string{template.RuleNestedCall}, ""},
	{"nested unknown helper", "{{base64(sha1(api_key))}}", []string{template.RuleNestedCall}, ""},
	{"doubly nested", "{{base64(base64(base64(api_key)))}}", []string{template.RuleNestedCall, template.RuleNestedCall}, ""},
	{"nested inside cdp_jwt", "{{cdp_jwt(key_name, base64(private_key))}}", []string{template.RuleNestedCall}, ""},

	// Every finding, not the first.
	{"several findings", "{{api_secrt}} {{sha1(api_key)}} }} {{base64()}}",
		[]string{template.RuleUnknownIdentifier, template.RuleUnknownHelper, template.RuleStrayClose, template.RuleArity}, ""},
	{"findings in position order", "{{hmac_sha256(a, b, c)}}",
		[]string{template.RuleArity, template.RuleUnknownIdentifier, template.RuleUnknownIdentifier, template.RuleUnknownIdentifier}, ""},
}

// TestGrammar lints adversarial and ordinary values in both placements. A
// value with a finding yields no Set; a Set holds only resolved operands
// and pinned helpers at their arity, so the renderer has nothing it could
// fall back on.
// conformance: P3-C12.8-02, P3-C12.8-03, P3-C12.8-04, P3-C12.8-05, P3-C12.8-11, P3-C12.8-13, P3-C12.8-14, P3-C12.8.1-04, P3-C12.9-02
func TestGrammar(t *testing.T) {
	for _, tc := range grammarCases {
		for _, query := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/query=%v", tc.name, query), func(t *testing.T) {
				set, fs := lintValue(query, testFields, tc.value)
				if got := rulesOf(fs); !slices.Equal(got, tc.rules) {
					t.Fatalf("Compile(%q) rules = %q, want %q\nfindings: %v", tc.value, got, tc.rules, fs)
				}
				if len(tc.rules) == 0 {
					if set == nil {
						t.Fatalf("Compile(%q) set = nil without findings", tc.value)
					}
					if err := template.WellFormed(set); err != nil {
						t.Fatalf("Compile(%q) set is not well formed: %v", tc.value, err)
					}
					return
				}
				if set != nil {
					t.Errorf("Compile(%q) returned a set with findings", tc.value)
				}
				if !strings.Contains(fs[0].Message, tc.msg) {
					t.Errorf("Compile(%q) message = %q, want it to contain %q", tc.value, fs[0].Message, tc.msg)
				}
				wantPath := "request.headerTemplate.X-Test"
				if query {
					wantPath = "request.queryTemplate.test"
				}
				for _, f := range fs {
					if f.Path != wantPath && f.Rule != template.RuleTooManyEntries {
						t.Errorf("Compile(%q) path = %q, want %q", tc.value, f.Path, wantPath)
					}
					if !strings.HasPrefix(f.Rule, "template.") || !slices.Contains(template.Rules(), f.Rule) {
						t.Errorf("Compile(%q) rule %q is not a documented rule", tc.value, f.Rule)
					}
				}
				if lint := template.Lint(testFields, template.Templates{Header: map[string]string{"X-Test": tc.value}}); !query && !slices.Equal(rulesOf(lint), tc.rules) {
					t.Errorf("Lint(%q) = %v, want the rules of Compile %q", tc.value, rulesOf(lint), tc.rules)
				}
			})
		}
	}
}

// TestTransposedFieldKey is the example: one transposed character
// would sign the eight-byte text "api_secrt" instead of the credential. The
// lint rejects it, and there is no Set to render.
// conformance: P3-C12.8-04
func TestTransposedFieldKey(t *testing.T) {
	set, fs := template.Compile([]string{"api_secret"}, template.Templates{
		Header: map[string]string{"X-Sign": "{{hmac_sha256(api_secrt, request.body)}}"},
	})
	if set != nil {
		t.Fatal("Compile returned a Set for an undeclared field key")
	}
	want := template.Finding{
		Path:    "request.headerTemplate.X-Sign",
		Rule:    "template.unknown-identifier",
		Message: "unknown identifier api_secrt: did you mean api_secret? (at position 15)",
	}
	if len(fs) != 1 || fs[0] != want {
		t.Fatalf("Compile = %v, want [%v]", fs, want)
	}
}

// TestDidYouMean checks that every unknown identifier names the nearest
// declared key or request token.
// conformance: P3-C12.8-04
func TestDidYouMean(t *testing.T) {
	cases := []struct {
		fields []string
		ident  string
		want   string
	}{
		{[]string{"api_secret"}, "api_secrt", "api_secret"},
		{[]string{"api_secret"}, "api_sercet", "api_secret"},
		{[]string{"api_secret"}, "apisecret", "api_secret"},
		{[]string{"api_key", "api_secret"}, "api_kye", "api_key"},
		{[]string{"api_key", "app_key"}, "apq_key", "api_key"},
		{[]string{"token"}, "request.bdoy", "request.body"},
		{[]string{"token"}, "request.url_", "request.url"},
		{[]string{"token"}, "requets.method", "request.method"},
		{[]string{"token"}, "tokn", "token"},
		{nil, "x", "request.url"},
	}
	for _, tc := range cases {
		t.Run(tc.ident, func(t *testing.T) {
			_, fs := template.Compile(tc.fields, template.Templates{Query: map[string]string{"q": "{{" + tc.ident + "}}"}})
			want := fmt.Sprintf("unknown identifier %s: did you mean %s?", tc.ident, tc.want)
			if len(fs) != 1 || !strings.Contains(fs[0].Message, want) {
				t.Fatalf("Compile(%q) = %v, want a finding containing %q", tc.ident, fs, want)
			}
		})
	}
}

// TestHelperEnum shows that the enum has exactly the five pinned members,
// matched exactly.
// conformance: P3-C12.8-05
func TestHelperEnum(t *testing.T) {
	members := map[string]string{
		"timestamp":       "{{timestamp()}}",
		"base64":          "{{base64(api_key)}}",
		"hmac_sha256":     "{{hmac_sha256(api_secret, request.body)}}",
		"hmac_sha256_b64": "{{hmac_sha256_b64(api_secret, request.body)}}",
		"cdp_jwt":         "{{cdp_jwt(key_name, private_key)}}",
	}
	for name, v := range members {
		if _, fs := lintValue(false, testFields, v); fs != nil {
			t.Errorf("Compile(%q) = %v, want the helper %s accepted", v, fs, name)
		}
	}
	for _, name := range []string{"sha1", "sha256", "md5", "hmac_sha1", "hmac_sha512", "hmac_sha256_hex", "hex",
		"base64url", "base64_decode", "urlencode", "jwt", "es256_jwt", "now", "env", "concat", "lower", "TIMESTAMP", "Base64", "cdp_JWT", "eval"} {
		v := "{{" + name + "(api_key)}}"
		_, fs := lintValue(false, testFields, v)
		if len(fs) == 0 || fs[0].Rule != template.RuleUnknownHelper {
			t.Errorf("Compile(%q) = %v, want %s", v, fs, template.RuleUnknownHelper)
		}
	}
}

// TestNestedCallNeverEvaluated shows that a nested call yields no Set, so
// nothing can render it: the engine's clock and randomness are never read,
// and the nil Set refuses to render.
// conformance: P3-C12.8-14, P3-C12.8-15
func TestNestedCallNeverEvaluated(t *testing.T) {
	for _, v := range []string{
		"{{base64(hmac_sha256(api_secret, request.body))}}",
		"{{hmac_sha256_b64(api_secret, timestamp())}}",
		"{{base64(cdp_jwt(key_name, private_key))}}",
	} {
		set, fs := lintValue(false, testFields, v)
		if set != nil || !slices.Contains(rulesOf(fs), template.RuleNestedCall) {
			t.Fatalf("Compile(%q) = %v, %v; want no set and %s", v, set, fs, template.RuleNestedCall)
		}
		env, calls := countingEnv()
		out, err := set.Render(map[string]string{"api_secret": "c2VjcmV0", "key_name": "k", "private_key": "p"},
			template.Request{Method: "GET", URL: "https://h/"}, env)
		if err == nil || len(out.Headers) != 0 || *calls != 0 {
			t.Fatalf("Render of the rejected %q = %v, %v after %d clock/rand reads; want an error and no reads", v, out, err, *calls)
		}
	}
}

// TestEnvelope covers the schema bounds the lint carries: entry counts,
// name charsets, reserved headers and reserved field keys.
// conformance: P3-C12.9-01
func TestEnvelope(t *testing.T) {
	entries := func(n int, prefix string) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("%s%d", prefix, i)] = "{{api_key}}"
		}
		return m
	}
	type want struct{ path, rule string }
	cases := []struct {
		name   string
		fields []string
		t      template.Templates
		want   []want
	}{
		{"8 headers", testFields, template.Templates{Header: entries(8, "X-")}, nil},
		{"9 headers", testFields, template.Templates{Header: entries(9, "X-")},
			[]want{{"request.headerTemplate", template.RuleTooManyEntries}}},
		{"8 query parameters", testFields, template.Templates{Query: entries(8, "q")}, nil},
		{"9 query parameters", testFields, template.Templates{Query: entries(9, "q")},
			[]want{{"request.queryTemplate", template.RuleTooManyEntries}}},
		{"header name with underscore", testFields, template.Templates{Header: map[string]string{"X_Key": "v"}},
			[]want{{"request.headerTemplate.X_Key", template.RuleHeaderName}}},
		{"header name with brackets", testFields, template.Templates{Header: map[string]string{"X[]": "v"}},
			[]want{{"request.headerTemplate.X[]", template.RuleHeaderName}}},
		{"empty header name", testFields, template.Templates{Header: map[string]string{"": "v"}},
			[]want{{"request.headerTemplate.", template.RuleHeaderName}}},
		{"64-character header name", testFields, template.Templates{Header: map[string]string{strings.Repeat("X", 64): "v"}}, nil},
		{"65-character header name", testFields, template.Templates{Header: map[string]string{strings.Repeat("X", 65): "v"}},
			[]want{{"request.headerTemplate." + strings.Repeat("X", 65), template.RuleHeaderName}}},
		{"header name with colon", testFields, template.Templates{Header: map[string]string{"X:Y": "v"}},
			[]want{{"request.headerTemplate.X:Y", template.RuleHeaderName}}},
		{"header name with CRLF", testFields, template.Templates{Header: map[string]string{"X\r\nY": "v"}},
			[]want{{"request.headerTemplate.X\r\nY", template.RuleHeaderName}}},
		{"non-ASCII header name", testFields, template.Templates{Header: map[string]string{"Ẋ": "v"}},
			[]want{{"request.headerTemplate.Ẋ", template.RuleHeaderName}}},
		{"query names of real providers", testFields, template.Templates{Query: map[string]string{
			"appid": "v", "x_cg_demo_api_key": "v", "ids[]": "v", "a.b": "v", "A-Z_09": "v", "filter[key]": "v"}}, nil},
		{"empty query name", testFields, template.Templates{Query: map[string]string{"": "v"}},
			[]want{{"request.queryTemplate.", template.RuleQueryName}}},
		{"65-character query name", testFields, template.Templates{Query: map[string]string{strings.Repeat("q", 65): "v"}},
			[]want{{"request.queryTemplate." + strings.Repeat("q", 65), template.RuleQueryName}}},
		{"Host", testFields, template.Templates{Header: map[string]string{"Host": "v"}},
			[]want{{"request.headerTemplate.Host", template.RuleReservedHeader}}},
		{"host", testFields, template.Templates{Header: map[string]string{"host": "v"}},
			[]want{{"request.headerTemplate.host", template.RuleReservedHeader}}},
		{"Content-Length", testFields, template.Templates{Header: map[string]string{"Content-Length": "0"}},
			[]want{{"request.headerTemplate.Content-Length", template.RuleReservedHeader}}},
		{"TRANSFER-ENCODING", testFields, template.Templates{Header: map[string]string{"TRANSFER-ENCODING": "chunked"}},
			[]want{{"request.headerTemplate.TRANSFER-ENCODING", template.RuleReservedHeader}}},
		{"hop-by-hop headers", testFields, template.Templates{Header: map[string]string{
			"Connection": "v", "TE": "v", "Trailer": "v", "Upgrade": "v", "Keep-Alive": "v", "Proxy-Authorization": "v"}},
			[]want{
				{"request.headerTemplate.Connection", template.RuleReservedHeader},
				{"request.headerTemplate.Keep-Alive", template.RuleReservedHeader},
				{"request.headerTemplate.Proxy-Authorization", template.RuleReservedHeader},
				{"request.headerTemplate.TE", template.RuleReservedHeader},
				{"request.headerTemplate.Trailer", template.RuleReservedHeader},
				{"request.headerTemplate.Upgrade", template.RuleReservedHeader},
			}},
		{"host is a fine query name", testFields, template.Templates{Query: map[string]string{"host": "v"}}, nil},
		{"header names differing in case", testFields, template.Templates{Header: map[string]string{"X-Key": "{{api_key}}", "x-key": "{{api_key}}"}},
			[]want{{"request.headerTemplate.x-key", template.RuleDuplicateHeader}}},
		{"query names differing in case", testFields, template.Templates{Query: map[string]string{"key": "a", "KEY": "b"}}, nil},
		{"field keys spelling helpers or request", []string{"timestamp", "base64", "hmac_sha256", "hmac_sha256_b64", "cdp_jwt", "request", "request.url", "api_key"},
			template.Templates{Header: map[string]string{"X": "{{api_key}}"}},
			[]want{
				{"fields", template.RuleReservedFieldKey}, {"fields", template.RuleReservedFieldKey}, {"fields", template.RuleReservedFieldKey},
				{"fields", template.RuleReservedFieldKey}, {"fields", template.RuleReservedFieldKey}, {"fields", template.RuleReservedFieldKey},
				{"fields", template.RuleReservedFieldKey},
			}},
		{"a reserved field key is not resolvable", []string{"timestamp"},
			template.Templates{Query: map[string]string{"t": "{{timestamp}}"}},
			[]want{{"fields", template.RuleReservedFieldKey}, {"request.queryTemplate.t", template.RuleUnknownIdentifier}}},
	}
	// Neither charset admits a character that smuggles URL structure
	// or template metacharacters.
	for _, c := range []string{"&", "=", "?", "#", "/", "%", "{", "}", " ", "+", ";", ":", ",", "'", "\\", "\t", "\n", "\x00"} {
		hn, qn := "X"+c+"Y", "x"+c+"y"
		cases = append(cases,
			struct {
				name   string
				fields []string
				t      template.Templates
				want   []want
			}{"header name with " + c, testFields, template.Templates{Header: map[string]string{hn: "v"}},
				[]want{{"request.headerTemplate." + hn, template.RuleHeaderName}}},
			struct {
				name   string
				fields []string
				t      template.Templates
				want   []want
			}{"query name with " + c, testFields, template.Templates{Query: map[string]string{qn: "v"}},
				[]want{{"request.queryTemplate." + qn, template.RuleQueryName}}},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, fs := template.Compile(tc.fields, tc.t)
			var got []want
			for _, f := range fs {
				got = append(got, want{f.Path, f.Rule})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Compile(%v) = %v, want %v", tc.t, fs, tc.want)
			}
			if (set == nil) != (len(tc.want) > 0) {
				t.Fatalf("Compile(%v) set = %v with %d findings", tc.t, set, len(fs))
			}
		})
	}
}

// TestEveryFinding shows that Compile reports every finding of every seat,
// in a fixed order, and never only the first.
// conformance: P3-C12.8-02, P3-C12.9-02
func TestEveryFinding(t *testing.T) {
	tpl := template.Templates{
		Header: map[string]string{
			"Host":   "{{api_key}}",
			"X-A":    "{{api_secrt}}",
			"X-B":    "{{sha1(x)}} }}",
			"X_Bad":  "ok",
			"X-Nest": "{{base64(base64(api_key))}}",
		},
		Query: map[string]string{
			"a": "{{request.headers}}",
			"b": "{{cdp_jwt('k', request.url)}}",
			"c": "{{env.HOME}}",
		},
	}
	want := []template.Finding{
		{Path: "fields", Rule: template.RuleReservedFieldKey},
		{Path: "request.headerTemplate.Host", Rule: template.RuleReservedHeader},
		{Path: "request.headerTemplate.X-A", Rule: template.RuleUnknownIdentifier},
		{Path: "request.headerTemplate.X-B", Rule: template.RuleUnknownHelper},
		{Path: "request.headerTemplate.X-B", Rule: template.RuleUnknownIdentifier},
		{Path: "request.headerTemplate.X-B", Rule: template.RuleStrayClose},
		{Path: "request.headerTemplate.X-Nest", Rule: template.RuleNestedCall},
		{Path: "request.headerTemplate.X_Bad", Rule: template.RuleHeaderName},
		{Path: "request.queryTemplate.a", Rule: template.RuleUnknownIdentifier},
		{Path: "request.queryTemplate.b", Rule: template.RuleCDPJWTArgument},
		{Path: "request.queryTemplate.b", Rule: template.RuleCDPJWTArgument},
		{Path: "request.queryTemplate.c", Rule: template.RuleUnknownIdentifier},
	}
	for range 3 { // map order must not show
		set, fs := template.Compile([]string{"api_key", "api_secret", "request"}, tpl)
		if set != nil {
			t.Fatal("Compile returned a Set with findings")
		}
		if len(fs) != len(want) {
			t.Fatalf("Compile = %d findings %v, want %d", len(fs), fs, len(want))
		}
		for i := range want {
			if fs[i].Path != want[i].Path || fs[i].Rule != want[i].Rule || fs[i].Message == "" {
				t.Errorf("finding %d = %v, want %s %s", i, fs[i], want[i].Path, want[i].Rule)
			}
		}
	}
}

// TestOneResolution shows that both placements are linted against the same
// resolution of the declared field keys: the same value gets the same
// verdict and the same messages in either placement, and a key referenced
// from both is one key of the Set.
// conformance: P3-C12.9-02, P3-C12.9-03
func TestOneResolution(t *testing.T) {
	for _, tc := range grammarCases {
		_, hf := lintValue(false, testFields, tc.value)
		_, qf := lintValue(true, testFields, tc.value)
		if len(hf) != len(qf) {
			t.Fatalf("%s: header findings %v, query findings %v", tc.name, hf, qf)
		}
		for i := range hf {
			if hf[i].Rule != qf[i].Rule || hf[i].Message != qf[i].Message {
				t.Errorf("%s: header finding %v, query finding %v", tc.name, hf[i], qf[i])
			}
		}
	}
	set, fs := template.Compile([]string{"api_key", "api_secret", "unused"}, template.Templates{
		Header: map[string]string{"X-Key": "{{api_key}}", "X-Sign": "{{hmac_sha256(api_secret, request.body)}}"},
		Query:  map[string]string{"key": "{{api_key}}", "sig": "{{hmac_sha256(api_secret, request.url)}}"},
	})
	if fs != nil {
		t.Fatalf("Compile = %v, want no findings", fs)
	}
	if got, want := set.Fields(), []string{"api_key", "api_secret"}; !slices.Equal(got, want) {
		t.Errorf("Fields() = %q, want %q", got, want)
	}
	if got, want := set.HeaderNames(), []string{"X-Key", "X-Sign"}; !slices.Equal(got, want) {
		t.Errorf("HeaderNames() = %q, want %q", got, want)
	}
	if got, want := set.QueryNames(), []string{"key", "sig"}; !slices.Equal(got, want) {
		t.Errorf("QueryNames() = %q, want %q", got, want)
	}
}

// TestRulesDocumented keeps Rules and doc.go's list in step.
func TestRulesDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := regexp.MustCompile(`(?m)^//\t(template\.[a-z0-9-]+) `).FindAllSubmatch(doc, -1)
	var documented []string
	for _, m := range listed {
		documented = append(documented, string(m[1]))
	}
	if got := template.Rules(); !slices.Equal(got, documented) {
		t.Errorf("Rules() = %q, doc.go lists %q", got, documented)
	}
}

// TestBackslashAtTheEnd: a backslash that ends the value, inside a cut
// literal, is named as such, not as a backslash before some character.
func TestBackslashAtTheEnd(t *testing.T) {
	_, fs := lintValue(false, testFields, `{{'a\`)
	if got := rulesOf(fs); !slices.Equal(got, []string{template.RuleUnterminatedLiteral, template.RuleBadEscape}) || !strings.Contains(fs[1].Message, "backslash at the end of a literal") {
		t.Fatalf("Compile({{'a\\) = %v, want an unterminated literal and a backslash at the end", fs)
	}
	_, fs = lintValue(false, testFields, `{{'a\x'}}`)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "backslash before character 'x'") {
		t.Fatalf(`Compile({{'a\x'}}) = %v, want a backslash before 'x'`, fs)
	}
}

// TestTooLongStillLinted: a value over the length limit is still linted
// up to four times the limit, its whole-value finding first; past that it
// is not parsed at all.
func TestTooLongStillLinted(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{1200, []string{template.RuleTooLong, template.RuleStrayClose}},
		{1201, []string{template.RuleTooLong}},
	} {
		_, fs := lintValue(false, testFields, "}}"+strings.Repeat("a", tc.n-2))
		if got := rulesOf(fs); !slices.Equal(got, tc.want) {
			t.Errorf("Compile(%d-byte value) rules = %q, want %q", tc.n, got, tc.want)
		}
	}
}
