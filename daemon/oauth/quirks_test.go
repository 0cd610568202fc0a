package oauth_test

// Provider quirks met against the test OP (oauthtest), which reproduces
// each as the provider documents it. Every provider endpoint is its real
// URL: the client's transport dials the OP for every host, and trusts the
// OP's certificate for the provider's hosts.

import (
	"crypto/tls"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/oauth"
	"github.com/snug/snugd/daemon/oauth/oauthtest"
	"github.com/snug/snugd/daemon/registry"
)

// providerOP starts the test OP for a provider's hosts and returns a
// client whose every connection goes to it.
func providerOP(t *testing.T, hosts ...string) (*oauthtest.Server, *oauth.Client, *http.Client) {
	t.Helper()
	op := oauthtest.New(t, hosts...)
	hc := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: op.Dial, TLSClientConfig: &tls.Config{RootCAs: op.Roots()}}}
	t.Cleanup(hc.CloseIdleConnections)
	return op, &oauth.Client{HTTP: hc}, hc
}

// signIn runs an authorization-code sign-in at authorize through the OP's
// login form and exchanges the code at ep.
func signIn(t *testing.T, op *oauthtest.Server, c *oauth.Client, ep oauth.Endpoint, r oauth.AuthorizeRequest) oauth.Token {
	t.Helper()
	u, err := oauth.AuthorizeURL(r)
	if err != nil {
		t.Fatalf("AuthorizeURL = %v", err)
	}
	cb := op.SignIn(t.Context(), t, u)
	code, _, err := oauth.ParseCallback(cb.RawQuery)
	if err != nil {
		t.Fatalf("ParseCallback(%s) = %v", cb.RawQuery, err)
	}
	tok, err := c.Exchange(t.Context(), ep, oauth.ExchangeParams{Code: code, RedirectURI: r.RedirectURI, Verifier: r.Verifier, Scopes: r.Scopes})
	if err != nil {
		t.Fatalf("Exchange = %v", err)
	}
	return tok
}

func loopback(t *testing.T) string {
	t.Helper()
	u, err := oauth.DesktopRedirectURI(4747)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestTwitchRevocation: Twitch's revocation gets exactly client_id and
// token, no secret, no hint, no Authorization header; the token is dead
// afterwards, and revoking it again (Twitch's 400 "Invalid token") counts
// as already revoked, not as a failure. The RFC 7009 shape snugd sent
// before, with the secret and the hint, is what the provider does not
// document, and the strict fake refuses it.
func TestTwitchRevocation(t *testing.T) {
	op, c, _ := providerOP(t, "id.twitch.tv", "api.twitch.tv")
	ep := oauth.Endpoint{
		TokenURL: "https://id.twitch.tv/oauth2/token", RevokeURL: "https://id.twitch.tv/oauth2/revoke",
		ClientID: oauthtest.ServiceID, ClientSecret: oauthtest.ServiceKey, AuthStyle: oauth.AuthPost,
		RevokeMethod: oauth.RevokeTokenClientID,
	}
	tok, err := c.ClientCredentials(t.Context(), ep, nil)
	if err != nil {
		t.Fatalf("ClientCredentials = %v", err)
	}

	old := ep
	old.RevokeMethod = oauth.RevokeRFC7009
	if got := c.RevokeGrant(t.Context(), old, tok.AccessToken, ""); got.Outcome != oauth.RevokeFailed || len(got.Errors) != 1 {
		t.Fatalf("RFC 7009 shape at Twitch = %+v, want RevokeFailed: Twitch documents only client_id and token", got)
	}
	if !op.Live(tok.AccessToken) {
		t.Fatal("a refused revocation dropped the token")
	}

	got := c.RevokeGrant(t.Context(), ep, tok.AccessToken, "refresh-is-not-sent")
	if got.Outcome != oauth.Revoked || got.Errors != nil {
		t.Fatalf("RevokeGrant = %+v, want Revoked", got)
	}
	reqs := op.RevokeRequests()
	last := reqs[len(reqs)-1]
	if !slices.Equal(last.Fields, []string{"client_id", "token"}) || last.Authorization != "none" || last.Method != http.MethodPost {
		t.Fatalf("revocation request = %+v, want POST with only client_id and token and no Authorization", last)
	}
	if len(reqs) != 2 {
		t.Fatalf("%d revocation requests, want 2: the refresh token is not sent to Twitch", len(reqs))
	}
	if op.Live(tok.AccessToken) {
		t.Fatal("the revoked token is still live")
	}

	again := c.RevokeGrant(t.Context(), ep, tok.AccessToken, "")
	if again.Outcome != oauth.AlreadyRevoked || again.Errors != nil {
		t.Fatalf("revoking a dead token = %+v, want AlreadyRevoked", again)
	}
	if !strings.Contains(again.Message(), "nothing remained") {
		t.Errorf("Message() = %q", again.Message())
	}

	unknown := ep
	unknown.ClientID = "no-such-client"
	if got := c.RevokeGrant(t.Context(), unknown, tok.AccessToken, ""); got.Outcome != oauth.RevokeFailed || got.Errors[0].Status != http.StatusNotFound {
		t.Fatalf("an unknown client = %+v, want RevokeFailed with Twitch's 404", got)
	}
}

// githubSignIn signs in to the GitHub-shaped OAuth app.
func githubSignIn(t *testing.T, op *oauthtest.Server, c *oauth.Client) (oauth.Endpoint, oauth.Token) {
	t.Helper()
	ep := oauth.Endpoint{
		TokenURL: "https://github.com/login/oauth/access_token", RevokeURL: "https://api.github.com/applications/{client_id}/grant",
		ClientID: oauthtest.GitHubClient, ClientSecret: oauthtest.GitHubSecret, AuthStyle: oauth.AuthPost,
		RevokeMethod: oauth.RevokeGitHubGrant, ManageAccessURL: "https://github.com/settings/applications",
	}
	tok := signIn(t, op, c, ep, oauth.AuthorizeRequest{
		Endpoint: "https://github.com/login/oauth/authorize", ClientID: ep.ClientID, RedirectURI: loopback(t),
		Scopes: []string{"read:user"}, State: "flow.mac", Verifier: oauth.NewVerifier(),
	})
	return ep, tok
}

// TestGitHubGrantDeletion: revoking a GitHub row deletes the OAuth app's
// grant — DELETE /applications/{client_id}/grant with Basic client
// credentials and the access token in JSON — and every token of the app
// for the user is dead afterwards, the refresh token included.
func TestGitHubGrantDeletion(t *testing.T) {
	op, c, _ := providerOP(t, "github.com", "api.github.com")
	ep, tok := githubSignIn(t, op, c)
	if tok.RefreshToken == "" || !op.Live(tok.AccessToken) || !op.Live(tok.RefreshToken) {
		t.Fatalf("sign-in: refresh %t, live %t/%t", tok.RefreshToken != "", op.Live(tok.AccessToken), op.Live(tok.RefreshToken))
	}

	wrong := ep
	wrong.ClientSecret = "not-the-secret"
	refused := c.RevokeGrant(t.Context(), wrong, tok.AccessToken, tok.RefreshToken)
	if got := refused; got.Outcome != oauth.RevokeFailed ||
		got.ManageAccessURL != ep.ManageAccessURL || !strings.Contains(got.Message(), ep.ManageAccessURL) {
		t.Fatalf("wrong app credentials = %+v, want RevokeFailed naming the manage-access page", got)
	}
	// The refusal's secrets hold the Basic credentials as sent (the ID and
	// secret as they are, not form-encoded): an answer echoing the
	// Authorization header is scrubbed of them.
	raw := base64.StdEncoding.EncodeToString([]byte(wrong.ClientID + ":" + wrong.ClientSecret))
	if len(refused.Errors) != 1 || !slices.Contains(refused.Errors[0].Secrets, raw) || !slices.Contains(refused.Errors[0].Secrets, tok.AccessToken) {
		t.Fatalf("the refusal's secrets miss the Basic credentials or the token: %d errors", len(refused.Errors))
	}
	public := ep
	public.ClientSecret = ""
	before := len(op.RevokeRequests())
	if got := c.RevokeGrant(t.Context(), public, tok.AccessToken, ""); got.Outcome != oauth.RevokeFailed || len(op.RevokeRequests()) != before {
		t.Fatalf("grant deletion without the secret = %+v, sent %d; want RevokeFailed and nothing sent", got, len(op.RevokeRequests())-before)
	}

	got := c.RevokeGrant(t.Context(), ep, tok.AccessToken, tok.RefreshToken)
	if got.Outcome != oauth.Revoked || got.Errors != nil {
		t.Fatalf("RevokeGrant = %+v, want Revoked", got)
	}
	reqs := op.RevokeRequests()
	last := reqs[len(reqs)-1]
	if last.Method != http.MethodDelete || last.Path != "/applications/"+oauthtest.GitHubClient+"/grant" || last.Host != "api.github.com" ||
		!slices.Equal(last.Fields, []string{"access_token"}) || last.Authorization != "basic" {
		t.Fatalf("grant deletion = %+v", last)
	}
	if op.Live(tok.AccessToken) || op.Live(tok.RefreshToken) {
		t.Fatal("a token survived the grant deletion")
	}
	_, err := c.Refresh(t.Context(), ep, tok.RefreshToken, nil)
	var oe *oauth.Error
	if !errors.As(err, &oe) || oe.Class != oauth.Expired {
		t.Fatalf("Refresh after the grant deletion = %v, want Expired", err)
	}
	// GitHub documents 204 and 422 only: a second deletion is refused, and
	// snugd does not read that as "already revoked".
	if again := c.RevokeGrant(t.Context(), ep, tok.AccessToken, ""); again.Outcome != oauth.RevokeFailed || again.Errors[0].Status != http.StatusUnprocessableEntity {
		t.Fatalf("second deletion = %+v, want RevokeFailed with 422", again)
	}
}

// TestGitHubTokenAnswerNeedsAccept: GitHub answers its token endpoint
// form-encoded unless asked for JSON; snugd asks, so the exchange parses.
// The raw POST shows the fake reproduces the quirk.
func TestGitHubTokenAnswerNeedsAccept(t *testing.T) {
	op, c, hc := providerOP(t, "github.com", "api.github.com")
	_, tok := githubSignIn(t, op, c) // Exchange parsed a JSON answer
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken},
		"client_id": {oauthtest.GitHubClient}, "client_secret": {oauthtest.GitHubSecret}}
	resp, err := hc.PostForm("https://github.com/login/oauth/access_token", form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if v, err := url.ParseQuery(string(body)); err != nil || v.Get("access_token") == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		t.Fatalf("a POST without Accept got %q (%s), want GitHub's form-encoded answer", body, resp.Header.Get("Content-Type"))
	}
}

// googleEndpoint is Google's token side for the native client.
func googleEndpoint() oauth.Endpoint {
	return oauth.Endpoint{
		TokenURL: "https://oauth2.googleapis.com/token", RevokeURL: "https://oauth2.googleapis.com/revoke",
		ClientID: oauthtest.NativeClient, ManageAccessURL: "https://myaccount.google.com/connections",
	}
}

// TestGoogleOfflineAccess: Google issues a refresh token only when the
// authorization request says access_type=offline, the entry's
// authorizeParams; and revoking a token Google already dropped (its 400
// invalid_token) counts as already revoked.
func TestGoogleOfflineAccess(t *testing.T) {
	op, c, _ := providerOP(t, "accounts.google.com", "oauth2.googleapis.com", "www.googleapis.com")
	ep := googleEndpoint()
	req := func(params map[string]string) oauth.AuthorizeRequest {
		return oauth.AuthorizeRequest{
			Endpoint: "https://accounts.google.com/o/oauth2/v2/auth", ClientID: ep.ClientID, RedirectURI: loopback(t),
			Scopes: []string{"profile"}, State: "flow.mac", Verifier: oauth.NewVerifier(), Params: params,
		}
	}
	if tok := signIn(t, op, c, ep, req(nil)); tok.RefreshToken != "" {
		t.Fatal("Google issued a refresh token without access_type=offline")
	}
	tok := signIn(t, op, c, ep, req(map[string]string{"access_type": "offline"}))
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token with access_type=offline")
	}
	if got := c.RevokeGrant(t.Context(), ep, tok.AccessToken, tok.RefreshToken); got.Outcome != oauth.Revoked {
		t.Fatalf("RevokeGrant = %+v, want Revoked", got)
	}
	again := c.RevokeGrant(t.Context(), ep, tok.AccessToken, tok.RefreshToken)
	if again.Outcome != oauth.AlreadyRevoked || again.Errors != nil {
		t.Fatalf("revoking dead tokens = %+v, want AlreadyRevoked", again)
	}
}

// TestStravaCommaScopes: Strava wants its scopes joined by commas, the
// entry's scopeSeparator; a space-joined list is refused there.
func TestStravaCommaScopes(t *testing.T) {
	op, c, hc := providerOP(t, "www.strava.com")
	redirect, _ := oauth.WebRedirectURI(oauthtest.WebOrigin)
	ep := oauth.Endpoint{TokenURL: "https://www.strava.com/oauth/token", ClientID: oauthtest.WebClient, ClientSecret: oauthtest.WebSecret}
	r := oauth.AuthorizeRequest{
		Endpoint: "https://www.strava.com/oauth/authorize", ClientID: ep.ClientID, RedirectURI: redirect,
		Scopes: []string{"profile", "email"}, State: "flow.mac", ScopeSeparator: ",",
	}
	u, err := oauth.AuthorizeURL(r)
	if err != nil || !strings.Contains(u, "scope=profile%2Cemail") {
		t.Fatalf("AuthorizeURL = %s, %v; want scope=profile,email", u, err)
	}
	if tok := signIn(t, op, c, ep, r); tok.AccessToken == "" {
		t.Fatal("no access token")
	}
	r.ScopeSeparator = ""
	spaced, _ := oauth.AuthorizeURL(r)
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Get(spaced)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("space-joined scopes at Strava = %d, want 400", resp.StatusCode)
	}
}

// TestRevocationTellsTheTruth: a provider without a revocation snugd can
// call gets nothing sent and an answer that access remains, naming where
// to remove it when the entry knows; an unreachable endpoint is a failure
// naming the same page; no outcome's message names a token.
func TestRevocationTellsTheTruth(t *testing.T) {
	rec := &recorder{}
	c := &oauth.Client{HTTP: &http.Client{Transport: rec}}
	manage := "https://www.example.com/settings/apps"
	for _, ep := range []oauth.Endpoint{
		{TokenURL: "https://auth.example.com/token", ClientID: "id", RevokeMethod: oauth.RevokeUnsupported, ManageAccessURL: manage},
		{TokenURL: "https://auth.example.com/token", ClientID: "id", RevokeMethod: oauth.RevokeUnsupported, RevokeURL: "https://auth.example.com/revoke", ManageAccessURL: manage},
		{TokenURL: "https://auth.example.com/token", ClientID: "id", ManageAccessURL: manage}, // RFC 7009 without an endpoint
	} {
		got := c.RevokeGrant(t.Context(), ep, "access-value", "refresh-value")
		if got.Outcome != oauth.AccessRemains || got.ManageAccessURL != manage || !strings.Contains(got.Message(), manage) || !strings.Contains(got.Message(), "remains") {
			t.Errorf("RevokeGrant(%v) = %+v %q, want AccessRemains naming %s", ep, got, got.Message(), manage)
		}
	}
	if got := c.RevokeGrant(t.Context(), oauth.Endpoint{ClientID: "id", RevokeURL: "https://auth.example.com/revoke"}, "", ""); got.Outcome != oauth.AccessRemains {
		t.Errorf("no token held = %+v, want AccessRemains", got)
	}
	if len(rec.reqs) != 0 {
		t.Fatalf("%d requests sent, want none", len(rec.reqs))
	}
	if m := (oauth.Revocation{Outcome: oauth.AccessRemains}).Message(); !strings.Contains(m, "account settings") {
		t.Errorf("Message() without a page = %q", m)
	}

	ep := oauth.Endpoint{ClientID: "id", RevokeURL: "https://auth.example.com/revoke", ManageAccessURL: manage}
	got := c.RevokeGrant(t.Context(), ep, "access-value", "refresh-value")
	if got.Outcome != oauth.RevokeFailed || len(got.Errors) != 2 || got.Errors[0].Class != oauth.Transient || !strings.Contains(got.Message(), manage) {
		t.Fatalf("unreachable endpoint = %+v, want RevokeFailed with two Transient errors naming the page", got)
	}
	for _, o := range []oauth.RevokeOutcome{oauth.Revoked, oauth.AlreadyRevoked, oauth.AccessRemains, oauth.RevokeFailed} {
		m := oauth.Revocation{Outcome: o, ManageAccessURL: manage}.Message()
		if strings.Contains(m, "access-value") || strings.Contains(m, "refresh-value") || m == "" {
			t.Errorf("Message(%v) = %q", o, m)
		}
	}
}

// TestRegistryNamesParse: every registry revocation method and tokenAuth
// maps onto this package's, and the grant placeholder is the registry's.
func TestRegistryNamesParse(t *testing.T) {
	want := map[registry.RevocationMethod]oauth.RevokeMethod{
		registry.RevokeRFC7009: oauth.RevokeRFC7009, registry.RevokeTokenClientID: oauth.RevokeTokenClientID,
		registry.RevokeGitHubGrant: oauth.RevokeGitHubGrant, registry.RevokeNone: oauth.RevokeUnsupported,
		registry.RevokeBearer: oauth.RevokeBearer,
	}
	for name, m := range want {
		if got, ok := oauth.ParseRevokeMethod(string(name)); !ok || got != m {
			t.Errorf("ParseRevokeMethod(%q) = %v, %v; want %v", name, got, ok, m)
		}
	}
	if _, ok := oauth.ParseRevokeMethod("RFC7009"); ok {
		t.Error("ParseRevokeMethod is not exact")
	}
	for name, s := range map[registry.TokenAuth]oauth.AuthStyle{registry.TokenAuthBasic: oauth.AuthBasic, registry.TokenAuthPost: oauth.AuthPost} {
		if got, ok := oauth.ParseAuthStyle(string(name)); !ok || got != s {
			t.Errorf("ParseAuthStyle(%q) = %v, %v", name, got, ok)
		}
	}
	if _, ok := oauth.ParseAuthStyle("private_key_jwt"); ok {
		t.Error("ParseAuthStyle accepted an unknown style")
	}
	if oauth.GrantURLPlaceholder != registry.GrantURLPlaceholder {
		t.Errorf("GrantURLPlaceholder = %q, registry's %q", oauth.GrantURLPlaceholder, registry.GrantURLPlaceholder)
	}
}

// TestDropboxBearerRevocation: Dropbox revokes with the access token as
// bearer and no body, which disables the refresh token too; a short-lived
// access token that has expired cannot revoke, so snugd refreshes once
// and revokes with the new one; and once the grant is gone, a second
// revocation reads as already revoked, not as a failure.
func TestDropboxBearerRevocation(t *testing.T) {
	op, c, _ := providerOP(t, "www.dropbox.com", "api.dropboxapi.com", "content.dropboxapi.com")
	ep := oauth.Endpoint{
		TokenURL: "https://api.dropboxapi.com/oauth2/token", RevokeURL: "https://api.dropboxapi.com/2/auth/token/revoke",
		ClientID: oauthtest.NativeClient, RevokeMethod: oauth.RevokeBearer,
	}
	dropboxSignIn := func(params map[string]string) oauth.Token {
		return signIn(t, op, c, ep, oauth.AuthorizeRequest{
			Endpoint: "https://www.dropbox.com/oauth2/authorize", ClientID: ep.ClientID, RedirectURI: loopback(t),
			Scopes: []string{"profile"}, State: "flow.mac", Verifier: oauth.NewVerifier(), Params: params,
		})
	}
	if tok := dropboxSignIn(nil); tok.RefreshToken != "" {
		t.Fatal("Dropbox issued a refresh token without token_access_type=offline")
	}
	offline := map[string]string{"token_access_type": "offline"}

	tok := dropboxSignIn(offline)
	if got := c.RevokeGrant(t.Context(), ep, tok.AccessToken, tok.RefreshToken); got.Outcome != oauth.Revoked || got.Errors != nil {
		t.Fatalf("RevokeGrant = %+v, want Revoked", got)
	}
	reqs := op.RevokeRequests()
	if last := reqs[len(reqs)-1]; last.Method != http.MethodPost || last.Authorization != "bearer" || len(last.Fields) != 0 {
		t.Fatalf("revocation = %+v, want a bodiless POST with the bearer", last)
	}
	if op.Live(tok.AccessToken) || op.Live(tok.RefreshToken) {
		t.Fatal("a token survived the revocation")
	}
	if again := c.RevokeGrant(t.Context(), ep, tok.AccessToken, tok.RefreshToken); again.Outcome != oauth.AlreadyRevoked || again.Errors != nil {
		t.Fatalf("revoking a revoked grant = %+v, want AlreadyRevoked", again)
	}

	tok = dropboxSignIn(offline)
	op.Expire(tok.AccessToken)
	before := op.Count("refresh_token")
	if got := c.RevokeGrant(t.Context(), ep, tok.AccessToken, tok.RefreshToken); got.Outcome != oauth.Revoked {
		t.Fatalf("RevokeGrant with an expired access token = %+v, want Revoked after a refresh", got)
	}
	if n := op.Count("refresh_token") - before; n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	if op.Live(tok.RefreshToken) {
		t.Fatal("the refresh token survived: the expired access token could not revoke it")
	}

	tok = dropboxSignIn(nil)
	op.Expire(tok.AccessToken)
	if got := c.RevokeGrant(t.Context(), ep, tok.AccessToken, ""); got.Outcome != oauth.AlreadyRevoked {
		t.Fatalf("an expired token without a refresh token = %+v, want AlreadyRevoked: nothing remains", got)
	}

	// A row holding only its refresh token (the access token was never
	// stored, or wiped) still revokes: refresh once, revoke with the new
	// access token. A row holding neither sends nothing.
	tok = dropboxSignIn(offline)
	before = op.Count("refresh_token")
	if got := c.RevokeGrant(t.Context(), ep, "", tok.RefreshToken); got.Outcome != oauth.Revoked || got.Errors != nil {
		t.Fatalf("RevokeGrant with only a refresh token = %+v, want Revoked", got)
	}
	if n := op.Count("refresh_token") - before; n != 1 || op.Live(tok.RefreshToken) {
		t.Fatalf("%d refreshes and the refresh token live %v; want 1 and dead", n, op.Live(tok.RefreshToken))
	}
	sent := len(op.RevokeRequests())
	if got := c.RevokeGrant(t.Context(), ep, "", ""); got.Outcome != oauth.AccessRemains || got.Errors != nil {
		t.Fatalf("RevokeGrant with no token = %+v, want AccessRemains", got)
	}
	if n := len(op.RevokeRequests()) - sent; n != 0 {
		t.Fatalf("RevokeGrant with no token sent %d revocations", n)
	}
}
