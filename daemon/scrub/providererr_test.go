package scrub

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// conformance: P3-X14.3-01, P3-X14.3-02, P3-X14.3-04, P3-X14.3-05, P3-X14.3-06
func TestProviderErrorText(t *testing.T) {
	const secret = "cs_live_0123456789"
	form := []string{secret, "refresh-token-value"} // the OAuth flow's candidates: its submitted form
	escaped := ""
	for _, c := range secret {
		escaped += `\u00` + strings.ToLower(strings.TrimLeft(url.PathEscape(string(c)), "%"))
		if len(url.PathEscape(string(c))) == 1 {
			escaped = escaped[:len(escaped)-len(`\u00`)-1] + `\u00` + hex2(c)
		}
	}
	cases := []struct {
		name, body string
		cands      []string
		want       string
	}{
		{"error.message", `{"error":{"message":"Invalid key","type":"auth"}}`, nil, "Invalid key"},
		{"oauth error_description echoing client_secret", `{"error":"invalid_client","error_description":"client_secret ` + secret + ` is wrong"}`, form, "client_secret [scrubbed] is wrong"},
		{"errors[0].message", `{"errors":[{"message":"Bad credentials"}]}`, nil, "Bad credentials"},
		{"problem details", `{"type":"about:blank","title":"Forbidden","detail":"Token expired"}`, nil, "Token expired"},
		{"bare error string", `{"error":"invalid_grant"}`, nil, "invalid_grant"},
		{"unrecognized envelope", `{"foo":{"bar":"baz"}}`, nil, ""},
		{"array", `[1,2,3]`, nil, ""},
		{"broken json", `{"message":`, nil, ""},
		{"plain text", "Rate limit exceeded\r\n  try later", nil, "Rate limit exceeded try later"},
		{"html", "<html><head><title>502 Bad Gateway</title></head><body><h1>502</h1></body></html>", nil, "502 Bad Gateway"},
		{"html starting with its title", "<title>Bad Gateway</title><h1>nginx</h1>", nil, "Bad Gateway"},
		{"errors empty", `{"errors":[],"msg":"try again"}`, nil, "try again"},
		{"html starting with a comment", "<!-- edge 7 --><p>Service down</p>", nil, "Service down"},
		{"html empty comment", "<p>a</p><!----><p>b</p>", nil, "a b"},
		{"html text after a comment", "<div>a<!-- x -->b</div>", nil, "ab"},
		{"html stray '>'", "<p>1 > 0</p> ok", nil, "1 0 ok"},
		{"html starting with a script", "<script>boot()</script><p>ok</p>", nil, "ok"},
		{"html closing tag with attributes", "<script>s</script><p>a</p><script>t</script x>b", nil, "a b"},
		{"stray '>' in a field", `{"message":"1 > 0 <b>y</b>"}`, nil, "1 0 y"},
		{"html without title", "<div><script>alert(1)</script><b>Service</b> unavailable<!-- " + secret + " --></div>", form, "Service unavailable"},
		{"markup in a field", `{"message":"<b>denied</b> for <i>you</i>"}`, nil, "denied for you"},
		{"escaped secret re-scrubbed", `{"message":"key ` + escaped + ` rejected"}`, form, "key [scrubbed] rejected"},
		{"entity-encoded secret re-scrubbed", "<p>key " + entities(secret) + "</p>", form, "key [scrubbed]"},
		{"percent-encoded secret", "bad key " + url.QueryEscape("a/b+c") + " given", []string{"a/b+c"}, "bad key [scrubbed] given"},
		{"scrub first: markup inside a secret", "<p>key sk<b>live123</b></p>", []string{"sk<b>live123</b>"}, "key [scrubbed]"},
		{"a split secret is the documented limit", `{"message":"` + secret[:8] + `","detail":"` + secret[8:] + `"}`, form, secret[:8]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ProviderErrorText(tc.body, tc.cands, nil)
			if got != tc.want {
				t.Errorf("ProviderErrorText(%q) = %q, want %q", tc.body, got, tc.want)
			}
		})
	}
	long := "<html><body>" + strings.Repeat("<p>something went wrong "+secret+"</p>", 400) + "</body></html>"
	got := ProviderErrorText(long, form, nil)
	if n := utf8.RuneCountInString(got); n > MaxProviderErrorChars || n == 0 || strings.ContainsAny(got, "<>") || strings.Contains(got, secret) {
		t.Errorf("10 KB page → %q (%d chars)", got, n)
	}
}

func hex2(c rune) string {
	const h = "0123456789abcdef"
	return string([]byte{h[c>>4], h[c&0xf]})
}

func entities(s string) string {
	var b strings.Builder
	for _, c := range s {
		b.WriteString("&#" + itoa(int(c)) + ";")
	}
	return b.String()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for n > 0 {
		d = append([]byte{byte('0' + n%10)}, d...)
		n /= 10
	}
	return string(d)
}

// FuzzProviderErrorText: whatever the body, the extract is at most 160
// characters of one line without angle brackets, and never contains a
// candidate value.
func FuzzProviderErrorText(f *testing.F) {
	for _, s := range []string{`{"error":{"message":"bad sk_1234567890"}}`, "<html><title>x</title></html>", "plain sk_1234567890", `{"message":"\u0073k_1234567890"}`} {
		f.Add(s)
	}
	const secret = "sk_1234567890"
	f.Fuzz(func(t *testing.T, body string) {
		got := ProviderErrorText(body, []string{secret}, nil)
		if utf8.RuneCountInString(got) > MaxProviderErrorChars || strings.ContainsAny(got, "<>\r\n") || strings.Contains(got, secret) || !utf8.ValidString(got) {
			t.Fatalf("ProviderErrorText(%q) = %q", body, got)
		}
	})
}

// TestClip: a text of exactly n runes is kept; a longer one keeps n-1
// runes and the ellipsis.
func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{{"abcd", 4, "abcd"}, {"abcdef", 4, "abc…"}, {"ééééé", 4, "ééé…"}, {"", 4, ""}} {
		if got := Clip(tc.s, tc.n); got != tc.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// TestProviderErrorManyElements: a page of nothing but script and style
// elements, with and without a '>' after the last closing tag, loses all
// of them and keeps the text between them.
func TestProviderErrorManyElements(t *testing.T) {
	page := "<html>" + strings.Repeat("<script>x</script><STYLE>y</style>", 20000) + "<p>down for maintenance</p>"
	if got := ProviderErrorText(page, nil, nil); got != "down for maintenance" {
		t.Errorf("ProviderErrorText(%d-byte page) = %q, want %q", len(page), got, "down for maintenance")
	}
	if got := dropElements("a<script>1</script b<script 2</script c", "script"); got != "a  b  c" {
		t.Errorf("dropElements(no '>') = %q, want %q", got, "a  b  c")
	}
}

// BenchmarkProviderErrorHostilePage: a 1 MiB error page of 60,000 empty
// script elements. Removing them one by one from the whole remaining page
// made this quadratic.
func BenchmarkProviderErrorHostilePage(b *testing.B) {
	page := "<html>" + strings.Repeat("<script></script>", (1<<20)/17)
	cands := []string{"sk_live_0123456789"}
	for b.Loop() {
		ProviderErrorText(page, cands, nil)
	}
}
