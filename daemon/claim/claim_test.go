package claim

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

var ceiling = []string{"bridge.simplefin.org"}

const accessPath = "/simplefin"

func b64(s string) string    { return base64.StdEncoding.EncodeToString([]byte(s)) }
func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestDecodeTokenLenient: every spelling a clipboard produces decodes to
// the same claim URL.
func TestDecodeTokenLenient(t *testing.T) {
	const claimURL = "https://bridge.simplefin.org/simplefin/claim/demo"
	// This claim URL's base64 has both '+'-free and '-'-free spellings;
	// one whose bytes force the 62nd and 63rd characters tests the
	// alphabets.
	const odd = "https://bridge.simplefin.org/simplefin/claim/a~~~~~~~"
	for _, tc := range []struct{ name, in, want string }{
		{"standard padded", b64(claimURL), claimURL},
		{"the bridge's demo token", "aHR0cHM6Ly9icmlkZ2Uuc2ltcGxlZmluLm9yZy9zaW1wbGVmaW4vY2xhaW0vZGVtbw==", claimURL},
		{"unpadded", strings.TrimRight(b64(claimURL), "="), claimURL},
		{"url-safe", b64url(odd), odd},
		{"url-safe padded", base64.URLEncoding.EncodeToString([]byte(odd)), odd},
		{"standard with + and /", b64(odd), odd},
		{"surrounding whitespace", " \t\r\n" + b64(claimURL) + "\r\n ", claimURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeToken(tc.in)
			if err != nil || got != tc.want {
				t.Errorf("DecodeToken(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
	if !strings.ContainsAny(b64(odd), "+/") || !strings.ContainsAny(b64url(odd), "-_") {
		t.Fatalf("the alphabet fixture does not exercise both alphabets: %s %s", b64(odd), b64url(odd))
	}
}

// TestDecodeTokenRefuses: anything that is not one base64 run of a URL.
func TestDecodeTokenRefuses(t *testing.T) {
	const claimURL = "https://bridge.simplefin.org/simplefin/claim/a~~~~~~~"
	std, safe := b64(claimURL), b64url(claimURL)
	mixed := strings.Replace(safe, "-", "+", 1)
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"only whitespace", " \n "},
		{"inner whitespace", std[:8] + " " + std[8:]},
		{"inner newline", std[:8] + "\n" + std[8:]},
		{"mixed alphabets", mixed},
		{"three pads", strings.TrimRight(std, "=") + "==="},
		{"inner pad", std[:8] + "=" + std[8:]},
		{"not base64", "not a token!"},
		{"the URL itself", claimURL},
		{"too long", strings.Repeat("QUFB", MaxTokenBytes)},
		{"decodes to binary", b64("https://bridge.simplefin.org/\x00")},
		{"decodes to a space", b64("https://bridge.simplefin.org/simplefin/claim/a b")},
		{"decodes to CRLF", b64("https://bridge.simplefin.org/simplefin/claim/a\r\nX: y")},
		{"decodes to UTF-8", b64("https://bridge.simplefin.org/simplefin/claim/é")},
		{"length 1 mod 4", "QUFBQ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeToken(tc.in)
			if r, _ := ReasonOf(err); r != ReasonTokenShape {
				t.Errorf("DecodeToken(%q) = %q, %v; want %s", tc.in, got, err, ReasonTokenShape)
			}
		})
	}
}

// TestCheckClaimURL: the claim URL's strict checks.
// conformance: P3-C12.12-19
func TestCheckClaimURL(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Reason // "" for accepted
		sent     string // the URL to POST, when accepted
	}{
		{"the bridge's shape", "https://bridge.simplefin.org/simplefin/claim/demo", "", "https://bridge.simplefin.org/simplefin/claim/demo"},
		{"default port spelled", "https://bridge.simplefin.org:443/simplefin/claim/demo", "", "https://bridge.simplefin.org/simplefin/claim/demo"},
		{"uppercase host", "https://BRIDGE.simplefin.org/simplefin/claim/X-1_2.3~", "", "https://bridge.simplefin.org/simplefin/claim/X-1_2.3~"},
		{"uppercase scheme", "HTTPS://bridge.simplefin.org/simplefin/claim/demo", "", "https://bridge.simplefin.org/simplefin/claim/demo"},

		{"http", "http://bridge.simplefin.org/simplefin/claim/demo", ReasonClaimScheme, ""},
		{"no scheme", "//bridge.simplefin.org/simplefin/claim/demo", ReasonClaimScheme, ""},
		{"ftp", "ftp://bridge.simplefin.org/simplefin/claim/demo", ReasonClaimScheme, ""},
		{"userinfo", "https://user:pass@bridge.simplefin.org/simplefin/claim/demo", ReasonClaimUserinfo, ""},
		{"user only", "https://user@bridge.simplefin.org/simplefin/claim/demo", ReasonClaimUserinfo, ""},
		{"empty userinfo", "https://@bridge.simplefin.org/simplefin/claim/demo", ReasonClaimUserinfo, ""},
		{"userinfo naming the host", "https://bridge.simplefin.org@evil.example/simplefin/claim/demo", ReasonClaimUserinfo, ""},
		{"another host", "https://evil.example/simplefin/claim/demo", ReasonClaimHost, ""},
		{"suffix of the host", "https://bridge.simplefin.org.evil.example/simplefin/claim/demo", ReasonClaimHost, ""},
		{"subdomain", "https://x.bridge.simplefin.org/simplefin/claim/demo", ReasonClaimHost, ""},
		{"trailing dot", "https://bridge.simplefin.org./simplefin/claim/demo", ReasonClaimHost, ""},
		{"IP literal", "https://198.51.100.7/simplefin/claim/demo", ReasonClaimHost, ""},
		{"loopback", "https://127.0.0.1/simplefin/claim/demo", ReasonClaimHost, ""},
		{"metadata", "https://169.254.169.254/simplefin/claim/demo", ReasonClaimHost, ""},
		{"another port", "https://bridge.simplefin.org:8443/simplefin/claim/demo", ReasonClaimHost, ""},
		{"empty host", "https:///simplefin/claim/demo", ReasonClaimHost, ""},
		{"opaque", "https:bridge.simplefin.org/simplefin/claim/demo", ReasonClaimHost, ""},
		{"backslash", `https://bridge.simplefin.org\@evil.example/simplefin/claim/demo`, ReasonTokenShape, ""},
		{"query", "https://bridge.simplefin.org/simplefin/claim/demo?x=1", ReasonClaimPath, ""},
		{"empty query", "https://bridge.simplefin.org/simplefin/claim/demo?", ReasonClaimPath, ""},
		{"fragment", "https://bridge.simplefin.org/simplefin/claim/demo#x", ReasonClaimPath, ""},
		{"empty fragment", "https://bridge.simplefin.org/simplefin/claim/demo#", ReasonClaimPath, ""},
		{"escaped path", "https://bridge.simplefin.org/simplefin/claim/de%6Do", ReasonClaimPath, ""},
		{"escaped slash", "https://bridge.simplefin.org/simplefin/claim/a%2Fb", ReasonClaimPath, ""},
		{"dot segment", "https://bridge.simplefin.org/simplefin/claim/..", ReasonClaimPath, ""},
		{"traversal", "https://bridge.simplefin.org/simplefin/claim/../accounts", ReasonClaimPath, ""},
		{"other path", "https://bridge.simplefin.org/simplefin/accounts", ReasonClaimPath, ""},
		{"no id", "https://bridge.simplefin.org/simplefin/claim/", ReasonClaimPath, ""},
		{"deeper", "https://bridge.simplefin.org/simplefin/claim/a/b", ReasonClaimPath, ""},
		{"other prefix", "https://bridge.simplefin.org/other/claim/demo", ReasonClaimPath, ""},
		{"no path", "https://bridge.simplefin.org", ReasonClaimPath, ""},
		{"not a URL", "https://[::1", ReasonTokenShape, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := CheckClaimURL(tc.in, ceiling, accessPath)
			if tc.want == "" {
				if err != nil || u.String() != tc.sent {
					t.Errorf("CheckClaimURL(%q) = %v, %v; want %s", tc.in, u, err, tc.sent)
				}
				return
			}
			if r, _ := ReasonOf(err); r != tc.want {
				t.Errorf("CheckClaimURL(%q) = %v, %v; want %s", tc.in, u, err, tc.want)
			}
			// The same through the whole paste path.
			if _, err := ParseSetupToken(b64(tc.in), ceiling, accessPath); err == nil {
				t.Errorf("ParseSetupToken(b64(%q)) accepted it", tc.in)
			}
		})
	}
	if _, err := CheckClaimURL("https://bridge.simplefin.org/simplefin/claim/demo", ceiling, ""); err == nil {
		t.Error("an empty pinned access path accepted a claim URL; want fail closed")
	}
	if _, err := CheckClaimURL("https://bridge.simplefin.org/simplefin/claim/demo", nil, accessPath); err == nil {
		t.Error("an empty ceiling accepted a claim URL")
	}
}

// TestClaimBounds: each length bound admits its limit and refuses one
// byte more, and the printable range's ends are URL bytes.
func TestClaimBounds(t *testing.T) {
	const base = "https://bridge.simplefin.org/simplefin/claim/"
	tok := b64(base + "demo")
	for _, tc := range []struct {
		name string
		in   string
		isOK bool
	}{
		{"paste of MaxTokenBytes", tok + strings.Repeat(" ", MaxTokenBytes-len(tok)), true},
		{"paste one byte longer", tok + strings.Repeat(" ", MaxTokenBytes-len(tok)+1), false},
		{"URL of MaxURLBytes", b64(base + strings.Repeat("a", MaxURLBytes-len(base))), true},
		{"URL one byte longer", b64(base + strings.Repeat("a", MaxURLBytes-len(base)+1)), false},
		{"URL holding '!' and '~'", b64(base + "!~"), true},
	} {
		if _, err := DecodeToken(tc.in); (err == nil) != tc.isOK {
			t.Errorf("DecodeToken(%s) = %v, want accepted %t", tc.name, err, tc.isOK)
		}
	}
	for _, tc := range []struct {
		id   string
		isOK bool
	}{{strings.Repeat("a", maxIDBytes), true}, {strings.Repeat("a", maxIDBytes+1), false}} {
		if _, err := CheckClaimURL(base+tc.id, ceiling, accessPath); (err == nil) != tc.isOK {
			t.Errorf("CheckClaimURL(id of %d bytes) = %v, want accepted %t", len(tc.id), err, tc.isOK)
		}
	}
}

// TestParseAccessURL: the access URL gets the same four checks, the pinned
// path exactly, and nothing may follow it.
// conformance: P3-C12.12-20, P3-C12.12-21
func TestParseAccessURL(t *testing.T) {
	const good = "https://user123:s3cret@bridge.simplefin.org/simplefin"
	a, err := ParseAccessURL([]byte(good), ceiling, accessPath)
	if err != nil || a.Host != "bridge.simplefin.org" || a.Credentials() != "user123:s3cret" {
		t.Fatalf("ParseAccessURL(good) = %v, %v", a, err)
	}
	a, err = ParseAccessURL([]byte("https://u%40x:p%2Fq@BRIDGE.simplefin.org:443/simplefin"), ceiling, accessPath)
	if err != nil || a.Credentials() != "u@x:p/q" {
		t.Fatalf("ParseAccessURL(escaped userinfo) = %v, %v", a, err)
	}
	for _, tc := range []struct {
		name, in string
		want     Reason
	}{
		{"empty", "", ReasonAccessShape},
		{"trailing LF", good + "\n", ReasonAccessShape},
		{"trailing CRLF", good + "\r\n", ReasonAccessShape},
		{"inner CRLF", "https://user123:s3cret@bridge.simplefin.org/simple\r\nfin", ReasonAccessShape},
		{"trailing bytes", good + " https://evil.example/", ReasonAccessShape},
		{"two URLs", good + good, ReasonAccessPath},
		{"leading space", " " + good, ReasonAccessShape},
		{"NUL", good + "\x00", ReasonAccessShape},
		{"UTF-8", "https://user:pässword@bridge.simplefin.org/simplefin", ReasonAccessShape},
		{"query", good + "?x=1", ReasonAccessShape},
		{"fragment", good + "#x", ReasonAccessShape},
		{"too long", "https://user:" + strings.Repeat("p", MaxURLBytes) + "@bridge.simplefin.org/simplefin", ReasonAccessShape},
		{"HTML", "<html>oops</html>", ReasonAccessShape},
		{"http", "http://user123:s3cret@bridge.simplefin.org/simplefin", ReasonAccessScheme},
		{"no userinfo", "https://bridge.simplefin.org/simplefin", ReasonAccessUserinfo},
		{"no password", "https://user123@bridge.simplefin.org/simplefin", ReasonAccessUserinfo},
		{"empty password", "https://user123:@bridge.simplefin.org/simplefin", ReasonAccessUserinfo},
		{"empty user", "https://:s3cret@bridge.simplefin.org/simplefin", ReasonAccessUserinfo},
		{"colon in user", "https://us%3Aer:s3cret@bridge.simplefin.org/simplefin", ReasonAccessUserinfo},
		{"control in password", "https://user:s%0D%0Aet@bridge.simplefin.org/simplefin", ReasonAccessUserinfo},
		{"another host", "https://user123:s3cret@evil.example/simplefin", ReasonAccessHost},
		{"suffix host", "https://user123:s3cret@bridge.simplefin.org.evil.example/simplefin", ReasonAccessHost},
		{"private literal", "https://user123:s3cret@10.0.0.1/simplefin", ReasonAccessHost},
		{"another port", "https://user123:s3cret@bridge.simplefin.org:8443/simplefin", ReasonAccessHost},
		{"another path", "https://user123:s3cret@bridge.simplefin.org/simplefin/x", ReasonAccessPath},
		{"trailing slash", "https://user123:s3cret@bridge.simplefin.org/simplefin/", ReasonAccessPath},
		{"no path", "https://user123:s3cret@bridge.simplefin.org", ReasonAccessPath},
		{"escaped path", "https://user123:s3cret@bridge.simplefin.org/simple%66in", ReasonAccessPath},
		{"case of path", "https://user123:s3cret@bridge.simplefin.org/SimpleFIN", ReasonAccessPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ParseAccessURL([]byte(tc.in), ceiling, accessPath)
			if r, _ := ReasonOf(err); r != tc.want {
				t.Errorf("ParseAccessURL(%q) = %v, %v; want %s", tc.in, a, err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the refusal quotes the credential: %v", err)
			}
		})
	}
}

// TestAccessRedacted: an Access never prints its credentials.
func TestAccessRedacted(t *testing.T) {
	a, err := ParseAccessURL([]byte("https://user123:s3cret@bridge.simplefin.org/simplefin"), ceiling, accessPath)
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "access", a)
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), logs.String()} {
		if strings.Contains(s, "s3cret") || strings.Contains(s, "user123") {
			t.Errorf("Access prints its credentials: %s", s)
		}
	}
}

// TestCheckInfo: verify-before-claim accepts a bridge's /info only.
func TestCheckInfo(t *testing.T) {
	for _, ok := range []string{`{"versions":["1.0"]}`, `{"versions":["2.0","1.0"],"x":1}`, `{"versions":["1"]}`} {
		if err := CheckInfo([]byte(ok)); err != nil {
			t.Errorf("CheckInfo(%s) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{``, `null`, `[]`, `{}`, `{"versions":[]}`, `{"versions":["2.0"]}`, `{"versions":"1.0"}`, `{"versions":[1.0]}`, `<html>`, ` {"versions":["1.0"]}`, `{"versions":["10.0"]}`} {
		if r, _ := ReasonOf(CheckInfo([]byte(bad))); r != ReasonNotBridge {
			t.Errorf("CheckInfo(%q) reason = %q, want %s", bad, r, ReasonNotBridge)
		}
	}
}

// TestRefusalsFixed: the list is short, every sentence is a fixed,
// lowercase sentence without a final period, reasons are unique, and an
// error's text is its reason's sentence and nothing else.
// conformance: P3-C12.12-23
func TestRefusalsFixed(t *testing.T) {
	seen := map[Reason]bool{}
	for _, f := range Refusals() {
		if seen[f.Reason] {
			t.Errorf("reason %s listed twice", f.Reason)
		}
		seen[f.Reason] = true
		if f.Sentence == "" || strings.HasSuffix(f.Sentence, ".") || strings.ToLower(f.Sentence[:1]) != f.Sentence[:1] {
			t.Errorf("sentence of %s is not a lowercase sentence without a final period: %q", f.Reason, f.Sentence)
		}
		switch f.Fate {
		case TokenUnused, TokenMaybeUsed, TokenUsed:
		default:
			t.Errorf("reason %s has fate %q", f.Reason, f.Fate)
		}
		if got := Refuse(f.Reason).Error(); got != f.Sentence {
			t.Errorf("Refuse(%s).Error() = %q, want its sentence", f.Reason, got)
		}
	}
	if len(seen) > 20 {
		t.Errorf("%d refusals: the list is meant to be short", len(seen))
	}
}

// TestRefusalNeverQuotesPaste: whatever is pasted, the error text is one
// of the fixed sentences.
// conformance: P3-C12.12-23
func TestRefusalNeverQuotesPaste(t *testing.T) {
	const canary = "CANARY-7f3a"
	for _, paste := range []string{
		canary,
		b64("https://evil.example/" + canary),
		b64("http://bridge.simplefin.org/simplefin/claim/" + canary),
		b64("https://" + canary + ":x@bridge.simplefin.org/simplefin/claim/a"),
		b64("https://bridge.simplefin.org/simplefin/claim/" + canary + "?q"),
		b64("https://[" + canary),
		" " + canary + "\n",
	} {
		_, err := ParseSetupToken(paste, ceiling, accessPath)
		if err == nil {
			t.Fatalf("ParseSetupToken(%q) accepted it", paste)
		}
		assertFixed(t, err)
		if strings.Contains(err.Error(), canary) {
			t.Errorf("the refusal of %q quotes the paste: %v", paste, err)
		}
	}
}

func assertFixed(t *testing.T, err error) {
	t.Helper()
	for _, f := range Refusals() {
		if err.Error() == f.Sentence {
			return
		}
	}
	t.Errorf("error %q is not one of the fixed sentences", err)
}
