package claim

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParseSetupToken: whatever is pasted, the result is either a fixed
// refusal or a claim URL that passes every check on its own: https, no
// userinfo, a ceiling host, the claim shape, printable and short; and the
// URL handed back re-checks to itself.
// conformance: P3-C12.12-19, P3-C12.12-23
func FuzzParseSetupToken(f *testing.F) {
	for _, s := range []string{
		"aHR0cHM6Ly9icmlkZ2Uuc2ltcGxlZmluLm9yZy9zaW1wbGVmaW4vY2xhaW0vZGVtbw==",
		b64("https://bridge.simplefin.org/simplefin/claim/demo"),
		b64url("https://bridge.simplefin.org/simplefin/claim/a~~~~~~~"),
		b64("https://evil.example/simplefin/claim/demo"),
		b64("https://bridge.simplefin.org@evil.example/simplefin/claim/demo"),
		b64("https://bridge.simplefin.org/simplefin/claim/../accounts"),
		b64("https://bridge.simplefin.org:443/simplefin/claim/x"),
		" \n" + b64("https://bridge.simplefin.org/simplefin/claim/demo") + "\n",
		"", "====", "not base64",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, paste string) {
		u, err := ParseSetupToken(paste, ceiling, accessPath)
		if err != nil {
			if u != nil {
				t.Fatal("a refusal returned a URL")
			}
			assertFixed(t, err)
			return
		}
		s := u.String()
		if u.Scheme != "https" || u.User != nil || u.Host != "bridge.simplefin.org" || u.RawQuery != "" || u.Fragment != "" ||
			!strings.HasPrefix(u.Path, accessPath+"/claim/") || !printableURL(s) {
			t.Fatalf("ParseSetupToken(%q) = %q: a URL that fails the checks", paste, s)
		}
		again, err := CheckClaimURL(s, ceiling, accessPath)
		if err != nil || again.String() != s {
			t.Fatalf("the claim URL %q does not re-check to itself: %v, %v", s, again, err)
		}
		if p, err := url.Parse(s); err != nil || p.Host != u.Host {
			t.Fatalf("the claim URL %q re-parses to another host", s)
		}
	})
}

// FuzzParseAccessURL: whatever the bridge answers, the result is either a
// fixed refusal that never quotes the answer, or an Access on a ceiling
// host whose credentials are printable and colon-free in the user name,
// taken from a body that is exactly one https URL with the pinned path.
// conformance: P3-C12.12-20, P3-C12.12-21, P3-C12.12-23
func FuzzParseAccessURL(f *testing.F) {
	for _, s := range []string{
		"https://user123:s3cret@bridge.simplefin.org/simplefin",
		"https://user123:s3cret@bridge.simplefin.org/simplefin\r\n",
		"https://user123:s3cret@evil.example/simplefin",
		"https://user123:s3cret@bridge.simplefin.org/simplefin/x",
		"http://user123:s3cret@bridge.simplefin.org/simplefin",
		"https://bridge.simplefin.org/simplefin",
		"https://u%3Ax:p@bridge.simplefin.org/simplefin",
		"https://user:pass@bridge.simplefin.org/simplefin https://x",
		"", "<html></html>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, err := ParseAccessURL(body, ceiling, accessPath)
		if err != nil {
			assertFixed(t, err)
			if a != (Access{}) {
				t.Fatal("a refusal returned credentials")
			}
			return
		}
		if a.Host != "bridge.simplefin.org" || a.username == "" || a.password == "" || strings.Contains(a.username, ":") ||
			!printable(a.username) || !printable(a.password) {
			t.Fatalf("ParseAccessURL(%q) = an Access that fails the checks", body)
		}
		if !printableURL(string(body)) || !strings.HasPrefix(string(body), "https://") && !strings.HasPrefix(strings.ToLower(string(body)), "https://") {
			t.Fatalf("ParseAccessURL(%q) accepted a body that is not one https URL", body)
		}
		u, err := url.Parse(string(body))
		if err != nil || u.Path != accessPath {
			t.Fatalf("ParseAccessURL(%q) accepted another path", body)
		}
	})
}

// FuzzCheckInfo: the /info check never panics and accepts only a JSON
// object.
func FuzzCheckInfo(f *testing.F) {
	for _, s := range []string{`{"versions":["1.0"]}`, `{"versions":[]}`, `[]`, `null`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if err := CheckInfo(body); err == nil && (len(body) == 0 || body[0] != '{') {
			t.Fatalf("CheckInfo(%q) accepted a non-object", body)
		}
	})
}
