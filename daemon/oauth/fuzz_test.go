package oauth_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/oauth"
)

// FuzzParseCallback: whatever a redirect's query holds, ParseCallback
// either refuses it or returns one printable, bounded code and state that
// the query holds exactly once; an error answer never carries provider
// text.
func FuzzParseCallback(f *testing.F) {
	for _, s := range []string{
		"code=abc&state=s1", "state=s1&code=a%2Fb&iss=https%3A%2F%2Fidp.example",
		"code=abc&state=s1&code=def", "error=access_denied&state=s1",
		"error=access_denied&error_description=no&error_uri=https%3A%2F%2Fx&state=s1",
		"error=%3Cscript%3E&state=s1", "code=abc;state=s1", "code=%zz&state=s1", "",
		"code=a%00b&state=s", "code=caf%C3%A9&state=s", "code=" + strings.Repeat("a", 2049) + "&state=s",
		"code=abc&state=AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"error=access_denied&code=x&state=s", "code=abc&state=s1&scope=read+write&session_state=x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		code, state, err := oauth.ParseCallback(raw)
		var ae *oauth.AuthorizeError
		switch {
		case errors.As(err, &ae):
			if code != "" || state == "" {
				t.Fatalf("an error answer returned code %q state %q", code, state)
			}
			if strings.Contains(ae.Error(), "description") {
				t.Fatalf("AuthorizeError %q is not a fixed sentence", ae.Error())
			}
			return
		case err != nil:
			if !errors.Is(err, oauth.ErrCallback) || code != "" || state != "" {
				t.Fatalf("refusal = %q, %q, %v", code, state, err)
			}
			return
		}
		q, perr := url.ParseQuery(raw)
		if perr != nil || len(q["code"]) != 1 || len(q["state"]) != 1 || q.Get("code") != code || q.Get("state") != state {
			t.Fatalf("ParseCallback(%q) = %q, %q; the query does not hold them once", raw, code, state)
		}
		for _, s := range []string{code, state} {
			for i := 0; i < len(s); i++ {
				if s[i] < 0x20 || s[i] > 0x7e {
					t.Fatalf("ParseCallback(%q) returned an unprintable byte", raw)
				}
			}
		}
		if len(code) > 2048 || len(state) > 256 || len(raw) > 8<<10 {
			t.Fatalf("ParseCallback(%q) passed an oversized answer", raw)
		}
	})
}

// FuzzParseTokenResponse: a token answer either is refused or yields a
// bearer token a header can carry, a printable refresh token and a sane
// lifetime.
func FuzzParseTokenResponse(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"r","scope":"x y"}`,
		`{"access_token":"gho_abc","token_type":"bearer","scope":"repo,gist"}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":"3600"}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":-1}`,
		`{"access_token":"a\r\nX: y","token_type":"Bearer"}`,
		`{"error":"invalid_grant","error_description":"no"}`,
		`{"access_token":"a","token_type":"Bearer"}{}`, `[]`, `null`, ``,
		`{"access_token":"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln","token_type":"Bearer","id_token":"x"}`,
		`{"access_token":"a==","token_type":"BEARER","expires_in":1e3}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		tok, err := oauth.ParseTokenResponse(body, []string{"x"}, now)
		if err != nil {
			return
		}
		if tok.AccessToken == "" || strings.ContainsAny(tok.AccessToken, " \t\r\n\x00") || tok.TokenType != "Bearer" {
			t.Fatalf("accepted access token %q type %q", tok.AccessToken, tok.TokenType)
		}
		for i := 0; i < len(tok.RefreshToken); i++ {
			if c := tok.RefreshToken[i]; c < 0x20 || c > 0x7e {
				t.Fatalf("accepted an unprintable refresh token")
			}
		}
		if tok.ExpiresIn < 0 {
			t.Fatalf("negative lifetime %v", tok.ExpiresIn)
		}
		for _, w := range tok.Wider {
			if w == "x" {
				t.Fatal("a requested scope is reported as wider")
			}
		}
	})
}

// FuzzParseCallbackFields: the web route (POST /v1/oauth/callback) hands
// its body's code, state and error to ParseCallback as one encoded
// query, so both surfaces admit the same answers. Whatever the fields
// hold, the parse refuses them or returns exactly the code and state
// given (an error answer: only the state), never a value of another
// field.
func FuzzParseCallbackFields(f *testing.F) {
	for _, s := range [][3]string{
		{"abc", "s1", ""}, {"", "s1", "access_denied"}, {"a&state=evil", "s1", ""},
		{"abc", "s1&code=x", ""}, {"a\x00b", "s", ""}, {"abc", "", ""}, {"", "", ""},
		{"caf\u00e9", "s", ""}, {strings.Repeat("a", 2049), "s", ""}, {"abc", "s", "<script>"},
		{"c", "AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", ""},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, code, state, providerError string) {
		q := url.Values{"state": {state}}
		if providerError != "" {
			q.Set("error", providerError)
		} else {
			q.Set("code", code)
		}
		gotCode, gotState, err := oauth.ParseCallback(q.Encode())
		var ae *oauth.AuthorizeError
		switch {
		case errors.As(err, &ae):
			if providerError == "" || gotCode != "" || gotState != state {
				t.Fatalf("error answer from (%q, %q, %q) = %q, %q", code, state, providerError, gotCode, gotState)
			}
		case err != nil:
			if gotCode != "" || gotState != "" {
				t.Fatalf("a refusal returned %q, %q", gotCode, gotState)
			}
		default:
			if providerError != "" || gotCode != code || gotState != state {
				t.Fatalf("(%q, %q, %q) parsed as %q, %q", code, state, providerError, gotCode, gotState)
			}
		}
	})
}

// FuzzDeadToken: a refused revocation reads as "already revoked" only for
// a 400 whose JSON carries the method's documented sign (Twitch's message
// "Invalid token", RFC 6750's invalid_token), never for GitHub's grant
// deletion or a provider without revocation, and never by accident of a
// substring.
func FuzzDeadToken(f *testing.F) {
	for _, s := range []struct {
		m      int
		status int
		body   string
	}{
		{1, 400, `{"status":400,"message":"Invalid token"}`},
		{1, 404, `{"status":404,"message":"client does not exist"}`},
		{0, 400, `{"error":"invalid_token","error_description":"Token expired or revoked"}`},
		{0, 400, `{"error":"invalid_request"}`},
		{2, 422, `{"message":"Validation Failed"}`},
		{1, 400, `{"message":"Invalid token, and more"}`},
		{0, 400, `invalid_token`},
		{1, 400, `{"message":["Invalid token"]}`},
	} {
		f.Add(s.m, s.status, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, m, status int, body []byte) {
		method := oauth.RevokeMethod(m & 3)
		if !oauth.DeadToken(method, status, body) {
			return
		}
		var v struct {
			Error   any `json:"error"`
			Message any `json:"message"`
		}
		if status != 400 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("dead for status %d body %q", status, body)
		}
		msg, _ := v.Message.(string)
		code, _ := v.Error.(string)
		switch method {
		case oauth.RevokeTokenClientID:
			if !strings.EqualFold(msg, "invalid token") {
				t.Fatalf("Twitch dead without its message: %q", body)
			}
		case oauth.RevokeRFC7009:
			if code != "invalid_token" {
				t.Fatalf("RFC 7009 dead without invalid_token: %q", body)
			}
		default:
			t.Fatalf("method %d read a dead token: %q", method, body)
		}
	})
}
