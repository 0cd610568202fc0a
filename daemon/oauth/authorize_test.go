package oauth_test

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/oauth"
	"github.com/snug/snugd/daemon/requirement"
)

func TestVerifierAndChallenge(t *testing.T) {
	seen := map[string]bool{}
	for range 64 {
		v := oauth.NewVerifier()
		if len(v) < 43 || len(v) > 128 || strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~") != "" {
			t.Fatalf("NewVerifier() = %q, want 43–128 unreserved characters", v)
		}
		if seen[v] {
			t.Fatal("NewVerifier repeated a verifier")
		}
		seen[v] = true
	}
	// RFC 7636 Appendix B.
	if got, want := oauth.Challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"; got != want {
		t.Fatalf("Challenge(RFC 7636 B) = %q, want %q", got, want)
	}
}

func validRequest() oauth.AuthorizeRequest {
	return oauth.AuthorizeRequest{
		Endpoint: "https://accounts.example/authorize", ClientID: "client-1",
		RedirectURI: "http://127.0.0.1:4747/oauth/callback", Scopes: []string{"read", "write"},
		State: "flow.mac", Verifier: oauth.NewVerifier(),
	}
}

// conformance: P3-C13-17, P3-C12.12-28
func TestAuthorizeURL(t *testing.T) {
	r := validRequest()
	r.Endpoint = "https://accounts.example/authorize?tenant=common"
	r.Params = map[string]string{"access_type": "offline", "prompt": "consent"}
	got, err := oauth.AuthorizeURL(r)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(got)
	q := u.Query()
	want := map[string]string{
		"response_type": "code", "client_id": "client-1", "redirect_uri": r.RedirectURI,
		"scope": "read write", "state": "flow.mac", "code_challenge": oauth.Challenge(r.Verifier),
		"code_challenge_method": "S256", "tenant": "common", "access_type": "offline", "prompt": "consent",
	}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("AuthorizeURL %s = %q, want %q", k, q.Get(k), v)
		}
	}
	if len(q) != len(want) || u.Host != "accounts.example" || u.Path != "/authorize" {
		t.Errorf("AuthorizeURL = %s, want exactly %v on the endpoint", got, want)
	}
}

func TestAuthorizeURLRefusals(t *testing.T) {
	cases := []struct {
		name   string
		change func(*oauth.AuthorizeRequest)
		want   error
	}{
		{"loopback-without-pkce", func(r *oauth.AuthorizeRequest) { r.Verifier = "" }, oauth.ErrLoopbackWithoutPKCE},
		{"ipv6-loopback-without-pkce", func(r *oauth.AuthorizeRequest) {
			r.Verifier, r.RedirectURI = "", "http://[::1]:4747/oauth/callback"
		}, oauth.ErrLoopbackWithoutPKCE},
		{"localhost-redirect", func(r *oauth.AuthorizeRequest) { r.RedirectURI = "http://localhost:4747/oauth/callback" }, oauth.ErrRedirectURI},
		{"http-non-loopback", func(r *oauth.AuthorizeRequest) { r.RedirectURI = "http://host.example/oauth/callback" }, oauth.ErrRedirectURI},
		{"other-path", func(r *oauth.AuthorizeRequest) { r.RedirectURI = "http://127.0.0.1:4747/other" }, oauth.ErrRedirectURI},
		{"no-port", func(r *oauth.AuthorizeRequest) { r.RedirectURI = "http://127.0.0.1/oauth/callback" }, oauth.ErrRedirectURI},
		{"redirect-query", func(r *oauth.AuthorizeRequest) { r.RedirectURI = "https://host.example/oauth/callback?x=1" }, oauth.ErrRedirectURI},
		{"http-endpoint", func(r *oauth.AuthorizeRequest) { r.Endpoint = "http://accounts.example/authorize" }, oauth.ErrEndpoint},
		{"userinfo-endpoint", func(r *oauth.AuthorizeRequest) { r.Endpoint = "https://u:p@accounts.example/authorize" }, oauth.ErrEndpoint},
		{"fragment-endpoint", func(r *oauth.AuthorizeRequest) { r.Endpoint = "https://accounts.example/authorize#x" }, oauth.ErrEndpoint},
		{"reserved-param", func(r *oauth.AuthorizeRequest) { r.Params = map[string]string{"redirect_uri": "https://evil.example/"} }, oauth.ErrReservedParam},
		{"reserved-param-case", func(r *oauth.AuthorizeRequest) { r.Params = map[string]string{"Code_Challenge_Method": "plain"} }, oauth.ErrReservedParam},
		{"reserved-in-endpoint", func(r *oauth.AuthorizeRequest) { r.Endpoint = "https://accounts.example/authorize?state=fixed" }, oauth.ErrReservedParam},
		{"param-shadows-endpoint", func(r *oauth.AuthorizeRequest) {
			r.Endpoint, r.Params = "https://accounts.example/authorize?tenant=a", map[string]string{"tenant": "b"}
		}, oauth.ErrReservedParam},
		{"https-redirect-uppercase-host", func(r *oauth.AuthorizeRequest) { r.RedirectURI = "https://Host.example/oauth/callback" }, oauth.ErrRedirectURI},
		{"https-redirect-port-0", func(r *oauth.AuthorizeRequest) { r.RedirectURI = "https://host.example:0/oauth/callback" }, oauth.ErrRedirectURI},
		{"empty-client", func(r *oauth.AuthorizeRequest) { r.ClientID = "" }, oauth.ErrClientID},
		{"empty-state", func(r *oauth.AuthorizeRequest) { r.State = "" }, oauth.ErrBadState},
		{"scope-separator", func(r *oauth.AuthorizeRequest) { r.ScopeSeparator = ";" }, oauth.ErrScopeSeparator},
		{"scope-holds-separator", func(r *oauth.AuthorizeRequest) {
			r.ScopeSeparator, r.Scopes = ",", []string{"read,write"}
		}, oauth.ErrScopeSeparator},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := validRequest()
			tc.change(&r)
			if _, err := oauth.AuthorizeURL(r); !errors.Is(err, tc.want) {
				t.Fatalf("AuthorizeURL = %v, want %v", err, tc.want)
			}
		})
	}
	// RFC 7636 §4.1: a verifier is 43 to 128 characters, both ends
	// included; one character short or long is refused.
	for _, tc := range []struct {
		n    int
		isOK bool
	}{{42, false}, {43, true}, {128, true}, {129, false}} {
		r := validRequest()
		r.Verifier = strings.Repeat("a", tc.n)
		if _, err := oauth.AuthorizeURL(r); (err == nil) != tc.isOK {
			t.Errorf("AuthorizeURL(%d-character verifier) = %v, want accepted %t", tc.n, err, tc.isOK)
		}
	}
	for _, v := range []string{strings.Repeat("a", 42) + "+", "=" + strings.Repeat("a", 42), strings.Repeat("é", 22)} {
		r := validRequest()
		r.Verifier = v
		if _, err := oauth.AuthorizeURL(r); err == nil {
			t.Errorf("AuthorizeURL(verifier %q) = nil error, want a refusal: not unreserved characters", v)
		}
	}
	// The web surface may go without PKCE (pkce: false on a confidential
	// client); only the loopback posture needs it.
	r := validRequest()
	r.RedirectURI, r.Verifier = "https://host.example/oauth/callback", ""
	got, err := oauth.AuthorizeURL(r)
	if err != nil || strings.Contains(got, "code_challenge") {
		t.Fatalf("AuthorizeURL(web, no PKCE) = %q, %v; want no challenge", got, err)
	}
}

// TestReservedParamsMatchRequirement keeps this leaf's reserved list equal
// to the requirement parser's: every reserved name is refused
// here too.
func TestReservedParamsMatchRequirement(t *testing.T) {
	for _, name := range requirement.ReservedAuthorizeParams() {
		r := validRequest()
		r.Params = map[string]string{name: "x"}
		if _, err := oauth.AuthorizeURL(r); !errors.Is(err, oauth.ErrReservedParam) {
			t.Errorf("AuthorizeURL with authorizeParams %q = %v, want ErrReservedParam", name, err)
		}
	}
}

// TestAuthorizeURLWithoutScopes: no scopes, no scope parameter.
func TestAuthorizeURLWithoutScopes(t *testing.T) {
	r := validRequest()
	r.Scopes = nil
	got, err := oauth.AuthorizeURL(r)
	if err != nil || strings.Contains(got, "scope=") {
		t.Fatalf("AuthorizeURL(no scopes) = %q, %v; want no scope parameter", got, err)
	}
}

func TestRedirectURIs(t *testing.T) {
	for _, tc := range []struct {
		port int
		isOK bool
	}{{1, true}, {65535, true}, {65536, false}, {-1, false}} {
		if _, err := oauth.DesktopRedirectURI(tc.port); (err == nil) != tc.isOK {
			t.Errorf("DesktopRedirectURI(%d) = %v, want accepted %t", tc.port, err, tc.isOK)
		}
	}
	for _, tc := range []struct {
		origin string
		isOK   bool
	}{{"https://app.example:1", true}, {"https://app.example:65535", true}, {"https://app.example:65536", false}} {
		if _, err := oauth.WebRedirectURI(tc.origin); (err == nil) != tc.isOK {
			t.Errorf("WebRedirectURI(%q) = %v, want accepted %t", tc.origin, err, tc.isOK)
		}
	}
	if got, err := oauth.DesktopRedirectURI(4747); err != nil || got != "http://127.0.0.1:4747/oauth/callback" {
		t.Fatalf("DesktopRedirectURI(4747) = %q, %v", got, err)
	}
	if _, err := oauth.DesktopRedirectURI(0); err == nil {
		t.Fatal("DesktopRedirectURI(0) = nil error")
	}
	if got, err := oauth.WebRedirectURI("https://app.example:8443"); err != nil || got != "https://app.example:8443/oauth/callback" {
		t.Fatalf("WebRedirectURI = %q, %v", got, err)
	}
	for _, o := range []string{"http://app.example", "https://app.example/", "https://u@app.example", "https://App.example", "https://app.example:0", "https://app.example:08443", "https://app.example?"} {
		if _, err := oauth.WebRedirectURI(o); err == nil {
			t.Errorf("WebRedirectURI(%q) = nil error", o)
		}
	}
	if !oauth.IsLoopbackRedirect("http://127.0.0.1:1/oauth/callback") || oauth.IsLoopbackRedirect("https://app.example/oauth/callback") {
		t.Fatal("IsLoopbackRedirect misclassifies")
	}
}

func testKey() []byte { return []byte(strings.Repeat("k", oauth.StateKeySize)) }

func TestFlow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	if _, err := oauth.NewFlow(oauth.FlowParams{AppID: "a", Slot: "s", Surface: oauth.SurfaceDesktop, Port: 4747}, now); !errors.Is(err, oauth.ErrLoopbackWithoutPKCE) {
		t.Fatalf("NewFlow(desktop, pkce false) = %v, want ErrLoopbackWithoutPKCE", err)
	}
	f, err := oauth.NewFlow(oauth.FlowParams{AppID: "a", Slot: "s", HostID: "h", Surface: oauth.SurfaceWeb, Origin: "https://app.example", PKCE: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !f.ExpiresAt.Equal(now.Add(10*time.Minute)) || f.RedirectURI != "https://app.example/oauth/callback" || f.Verifier == "" {
		t.Fatalf("NewFlow = %+v, want ten minutes, the origin's callback and a verifier", f)
	}
	if strings.Contains(f.String(), f.Verifier) || strings.Contains(fmtV(f), f.Verifier) {
		t.Fatal("a flow's String names its verifier")
	}
	// conformance: P3-C13-03 — the slot rides in the sealed payload.
	b, _ := f.MarshalBinary()
	var g oauth.Flow
	if err := g.UnmarshalBinary(b); err != nil || g != f {
		t.Fatalf("round trip = %+v, %v; want %+v", g, err, f)
	}
	if !strings.Contains(string(b), `"slot":"s"`) {
		t.Fatalf("sealed flow %s does not carry the slot", b)
	}
	for _, bad := range []string{`{}`, `{"v":2,"id":"x","surface":"web"}`, `{"v":1,"id":"x","surface":"tv"}`, string(b[:len(b)-1]) + `,"extra":1}`, string(b) + `{}`} {
		if err := g.UnmarshalBinary([]byte(bad)); err == nil {
			t.Errorf("UnmarshalBinary(%s) = nil error", bad)
		}
	}
}

// TestStateBindsTheFlow: a state made for one flow does not verify another
// flow that differs in any bound seat, one key serves every app
// (auth:_state_hmac is app-agnostic), and another key refuses.
//
// conformance: P3-C13-04, P3-C13-18, P3-C13-19
func TestStateBindsTheFlow(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key := testKey()
	f, _ := oauth.NewFlow(oauth.FlowParams{AppID: "a", Slot: "s", HostID: "h", Surface: oauth.SurfaceWeb, Origin: "https://app.example", PKCE: true}, now)
	state, err := oauth.State(key, f)
	if err != nil {
		t.Fatal(err)
	}
	at := oauth.Callback{Surface: oauth.SurfaceWeb, HostID: "h", Origin: "https://app.example"}
	if err := oauth.Verify(key, f, state, at, now); err != nil {
		t.Fatalf("Verify(genuine) = %v", err)
	}
	if id, err := oauth.FlowIDFromState(state); err != nil || id != f.ID {
		t.Fatalf("FlowIDFromState = %q, %v; want %q", id, err, f.ID)
	}
	other := func(change func(*oauth.Flow)) oauth.Flow { g := f; change(&g); return g }
	for name, g := range map[string]oauth.Flow{
		"app":     other(func(g *oauth.Flow) { g.AppID = "b" }),
		"slot":    other(func(g *oauth.Flow) { g.Slot = "t" }),
		"host":    other(func(g *oauth.Flow) { g.HostID = "i" }),
		"origin":  other(func(g *oauth.Flow) { g.Origin = "https://evil.example" }),
		"expiry":  other(func(g *oauth.Flow) { g.ExpiresAt = g.ExpiresAt.Add(time.Hour) }),
		"surface": other(func(g *oauth.Flow) { g.Surface = oauth.SurfaceDesktop }),
	} {
		if err := oauth.Verify(key, g, state, at, now); !errors.Is(err, oauth.ErrBadState) {
			t.Errorf("Verify(state of a flow with another %s) = %v, want ErrBadState", name, err)
		}
	}
	// A second app's flow under the same key verifies with its own state.
	g, _ := oauth.NewFlow(oauth.FlowParams{AppID: "b", Slot: "s", Surface: oauth.SurfaceDesktop, Port: 4747, PKCE: true}, now)
	gs, _ := oauth.State(key, g)
	if err := oauth.Verify(key, g, gs, oauth.Callback{Surface: oauth.SurfaceDesktop}, now); err != nil {
		t.Fatalf("Verify(second app, same key) = %v", err)
	}
	// Another flow's ID (the same length) in front of this flow's MAC: the
	// ID must be this flow's, not merely shaped like it.
	_, mac, _ := strings.Cut(state, ".")
	if err := oauth.Verify(key, f, g.ID+"."+mac, at, now); !errors.Is(err, oauth.ErrBadState) {
		t.Fatalf("Verify(another flow's ID with this flow's MAC) = %v, want ErrBadState", err)
	}
	otherKey := []byte(strings.Repeat("j", oauth.StateKeySize))
	if err := oauth.Verify(otherKey, f, state, at, now); !errors.Is(err, oauth.ErrBadState) {
		t.Fatalf("Verify under another key = %v, want ErrBadState", err)
	}
	if _, err := oauth.State(key[:31], f); !errors.Is(err, oauth.ErrStateKey) {
		t.Fatalf("State(31-byte key) = %v, want ErrStateKey", err)
	}
	// Expiry is exclusive at ten minutes; use beats expiry.
	if err := oauth.Verify(key, f, state, at, f.ExpiresAt.Add(-time.Second)); err != nil {
		t.Fatalf("Verify one second before expiry = %v", err)
	}
	wantErr(t, "Verify at expiry", oauth.Verify(key, f, state, at, f.ExpiresAt), oauth.ErrFlowExpired)
	f.Used = true
	wantErr(t, "Verify of a used flow", oauth.Verify(key, f, state, at, now), oauth.ErrFlowUsed)
	for _, s := range []string{"", ".", "x", f.ID, f.ID + "." + strings.Repeat("A", 44), "!" + state[1:]} {
		if _, err := oauth.FlowIDFromState(s); !errors.Is(err, oauth.ErrBadState) {
			t.Errorf("FlowIDFromState(%q) = %v, want ErrBadState", s, err)
		}
	}
}

func TestParseCallback(t *testing.T) {
	ok := []struct{ q, code, state string }{
		{"code=abc&state=s1", "abc", "s1"},
		{"state=s1&code=a%2Fb&iss=https%3A%2F%2Fidp.example", "a/b", "s1"},
		{"code=abc&state=s1&scope=read+write", "abc", "s1"},
		// The bounds themselves, and the ends of the printable range.
		{"code=" + strings.Repeat("a", 2048) + "&state=" + strings.Repeat("s", 256), strings.Repeat("a", 2048), strings.Repeat("s", 256)},
		{"code=a+b~&state=~+", "a b~", "~ "},
		{"code=abc&state=s1&x=" + strings.Repeat("x", 8192-len("code=abc&state=s1&x=")), "abc", "s1"},
	}
	for _, tc := range ok {
		code, state, err := oauth.ParseCallback(tc.q)
		if err != nil || code != tc.code || state != tc.state {
			t.Errorf("ParseCallback(%q) = %q, %q, %v; want %q, %q", tc.q, code, state, err, tc.code, tc.state)
		}
	}
	bad := []string{
		"", "code=abc", "state=s1", "code=abc&state=s1&code=def", "code=abc&state=s1&state=s2",
		"code=abc&state=s1&iss=a&iss=b", "code=&state=s1", "code=abc&state=", "code=a%0Ab&state=s1",
		"code=abc&state=s%00", "code=abc;state=s1", "code=%zz&state=s1",
		"code=" + strings.Repeat("a", 2049) + "&state=s1", "code=abc&state=" + strings.Repeat("s", 257),
		"code=abc&state=s1&x=" + strings.Repeat("x", 9000),
		"error=access_denied&code=abc&state=s1", "code=caf%C3%A9&state=s1",
	}
	for _, q := range bad {
		if _, _, err := oauth.ParseCallback(q); !errors.Is(err, oauth.ErrCallback) {
			t.Errorf("ParseCallback(%.60q) = %v, want ErrCallback", q, err)
		}
	}
	_, state, err := oauth.ParseCallback("error=access_denied&error_description=User+said+no+%3Cscript%3E&state=s1")
	var ae *oauth.AuthorizeError
	if !errors.As(err, &ae) || ae.Code != "access_denied" || state != "s1" || strings.Contains(err.Error(), "script") {
		t.Fatalf("ParseCallback(access_denied) = state %q, %v; want an access_denied AuthorizeError with the state", state, err)
	}
	_, _, err = oauth.ParseCallback("error=%3Cb%3Eevil%3C%2Fb%3E&state=s1")
	if !errors.As(err, &ae) || ae.Code != "unknown" || strings.Contains(err.Error(), "evil") {
		t.Fatalf("ParseCallback(unknown error) = %v, want code unknown and no provider text", err)
	}
}

func TestParseTokenResponse(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tok, err := oauth.ParseTokenResponse([]byte(`{"access_token":"gho_abc","token_type":"bearer","scope":"repo,gist","expires_in":"3600","id_token":"x"}`), []string{"repo"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if tok.TokenType != "Bearer" || tok.ExpiresIn != time.Hour || !tok.Expiry().Equal(now.Add(time.Hour)) ||
		!slices.Equal(tok.Scopes, []string{"repo", "gist"}) || !slices.Equal(tok.Wider, []string{"gist"}) {
		t.Fatalf("ParseTokenResponse = %+v", tok)
	}
	// Twitch's array form.
	tok, err = oauth.ParseTokenResponse([]byte(`{"access_token":"a","token_type":"bearer","scope":["chat:read","user:read:email"],"refresh_token":""}`), []string{"chat:read"}, now)
	if err != nil || !slices.Equal(tok.Scopes, []string{"chat:read", "user:read:email"}) || !slices.Equal(tok.Wider, []string{"user:read:email"}) || tok.RefreshToken != "" {
		t.Fatalf("ParseTokenResponse(scope array) = %+v, %v", tok, err)
	}
	// No scope in the answer: granted = requested (RFC 6749 §5.1).
	tok, _ = oauth.ParseTokenResponse([]byte(`{"access_token":"a","token_type":"Bearer"}`), []string{"r"}, now)
	if !slices.Equal(tok.Scopes, []string{"r"}) || tok.Wider != nil || !tok.Expiry().IsZero() {
		t.Fatalf("ParseTokenResponse(no scope, no expiry) = %+v", tok)
	}
	// expires_in at both ends of its range: 0 and 2^31-1 seconds.
	for _, e := range []string{"0", "2147483647"} {
		if _, err := oauth.ParseTokenResponse([]byte(`{"access_token":"a","token_type":"Bearer","expires_in":`+e+`}`), nil, now); err != nil {
			t.Errorf("ParseTokenResponse(expires_in %s) = %v", e, err)
		}
	}
	for _, b := range []string{
		`{"access_token":"a","token_type":"Bearer","expires_in":2147483648}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":-1}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":1.5}`,
		`{"access_token":"a","token_type":"Bearer","expires_in":"soon"}`,
		`{"access_token":"a b","token_type":"Bearer"}`,
		`{"access_token":"a","token_type":"Bearer","refresh_token":"r\n"}`,
		`{"access_token":"a","token_type":"DPoP"}`,
		`{"access_token":1,"token_type":"Bearer"}`,
		`{"error":"invalid_grant"}`,
		`[]`, ``, `{"access_token":"a","token_type":"Bearer"} {}`,
		`{"access_token":"a","token_type":"Bearer","scope":[1]}`,
		`{"access_token":"a","token_type":"Bearer","scope":{}}`,
	} {
		if _, err := oauth.ParseTokenResponse([]byte(b), nil, now); err == nil {
			t.Errorf("ParseTokenResponse(%s) = nil error", b)
		}
	}
}

func fmtV(f oauth.Flow) string { return f.String() }
