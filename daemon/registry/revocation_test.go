package registry

import (
	"testing"

	"github.com/snug/snugd/daemon/requirement"
)

// TestLoadProtocolSeatsBroken: each OAuth protocol rule refuses its
// broken registry, and nothing else breaks with it.
func TestLoadProtocolSeatsBroken(t *testing.T) {
	checkBroken(t, []brokenCase{
		{dir: "revocation-missing", rule: RuleRevocationMissing},
		{dir: "revocation-kind", rule: RuleRevocationKind},
		{dir: "revocation-method", rule: RuleRevocationMethod},
		{dir: "revocation-endpoint-missing", rule: RuleRevocationEndpoint},
		{dir: "revocation-endpoint-extra", rule: RuleRevocationEndpoint},
		{dir: "revocation-url-host", rule: RuleRevocationURL},
		{dir: "revocation-url-placeholder", rule: RuleRevocationURL},
		{dir: "revocation-url-other-method", rule: RuleRevocationURL},
		{dir: "revocation-manage-http", rule: RuleRevocationManage},
		{dir: "revocation-key-unknown", rule: RuleKeyUnknown},
		{dir: "token-auth-value", rule: RuleTokenAuth},
		{dir: "token-auth-kind", rule: RuleTokenAuth},
		{dir: "scope-separator-value", rule: RuleScopeSeparator},
		{dir: "scope-separator-kind", rule: RuleScopeSeparator},
	})
}

// TestLoadProtocolSeats: a good entry's seats come back as written, in
// Lookup and in OAuthProtocol.
func TestLoadProtocolSeats(t *testing.T) {
	g := testRegistry(t, "testdata/good-protocol")
	e, _ := g.Lookup("acme")
	want := Revocation{Method: RevokeGitHubGrant, URL: "https://api.acme.example/applications/{client_id}/grant", ManageAccessURL: "https://auth.acme.example/settings/apps"}
	if e.Revocation == nil || *e.Revocation != want || e.TokenAuth != TokenAuthPost || e.ScopeSeparator != "," {
		t.Errorf("Lookup(acme) revocation %+v, tokenAuth %q, separator %q; want %+v, post, comma", e.Revocation, e.TokenAuth, e.ScopeSeparator, want)
	}
	e.Revocation.Method = RevokeNone // a copy: the registry keeps its own
	if again, _ := g.Lookup("acme"); again.Revocation.Method != RevokeGitHubGrant {
		t.Errorf("changing a Lookup copy changed the registry: %+v", again.Revocation)
	}
}

// oauthRow is an OAuth row of the given kind and endpoints.
func oauthRow(t *testing.T, kind, authorize, token string) *requirement.Requirement {
	t.Helper()
	d := doc{
		"slot": "row", "provider": doc{"name": "Some Provider"}, "kind": kind,
		"fields":           []any{doc{"key": "client_id", "label": "Client ID", "type": "text"}},
		"endpoints":        doc{"token": token},
		"declaredApiHosts": []any{"api.other.example"},
	}
	if authorize != "" {
		d["endpoints"].(doc)["authorize"] = authorize
	}
	return parse(t, d)
}

// TestOAuthProtocolBindsToEndpoints: the protocol seats answer only for a
// row whose authorize and token URLs byte-match an OAuth option's pin;
// anything else gets ok false and the caller's RFC defaults.
func TestOAuthProtocolBindsToEndpoints(t *testing.T) {
	g := shipped(t)
	cases := []struct {
		name             string
		kind             string
		authorize, token string
		ok               bool
		want             OAuthProtocol
	}{
		{"github", "oauth2_auth_code", "https://github.com/login/oauth/authorize", "https://github.com/login/oauth/access_token", true,
			OAuthProtocol{TokenAuth: TokenAuthPost, ScopeSeparator: " ", Revocation: Revocation{Method: RevokeGitHubGrant,
				URL: "https://api.github.com/applications/{client_id}/grant", ManageAccessURL: "https://github.com/settings/applications"}}},
		{"twitch client credentials", "oauth2_client_creds", "", "https://id.twitch.tv/oauth2/token", true,
			OAuthProtocol{TokenAuth: TokenAuthPost, ScopeSeparator: " ", Revocation: Revocation{Method: RevokeTokenClientID}}},
		{"spotify", "oauth2_auth_code", "https://accounts.spotify.com/authorize", "https://accounts.spotify.com/api/token", true,
			OAuthProtocol{TokenAuth: TokenAuthBasic, ScopeSeparator: " ", Revocation: Revocation{Method: RevokeNone}}},
		{"strava commas", "oauth2_auth_code", "https://www.strava.com/oauth/authorize", "https://www.strava.com/oauth/token", true,
			OAuthProtocol{TokenAuth: TokenAuthPost, ScopeSeparator: ",", Revocation: Revocation{Method: RevokeNone}}},
		{"dropbox bearer", "oauth2_auth_code", "https://www.dropbox.com/oauth2/authorize", "https://api.dropboxapi.com/oauth2/token", true,
			OAuthProtocol{TokenAuth: TokenAuthBasic, ScopeSeparator: " ", Revocation: Revocation{Method: RevokeBearer}}},
		{"pinned token, own authorize", "oauth2_auth_code", "https://evil.example/authorize", "https://github.com/login/oauth/access_token", false, OAuthProtocol{}},
		{"pinned authorize, own token", "oauth2_auth_code", "https://github.com/login/oauth/authorize", "https://evil.example/token", false, OAuthProtocol{}},
		{"trailing slash", "oauth2_auth_code", "https://github.com/login/oauth/authorize", "https://github.com/login/oauth/access_token/", false, OAuthProtocol{}},
		{"client credentials at an auth-code pin", "oauth2_client_creds", "", "https://github.com/login/oauth/access_token", false, OAuthProtocol{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := g.OAuthProtocol(oauthRow(t, tc.kind, tc.authorize, tc.token))
			if ok != tc.ok || got != tc.want {
				t.Errorf("OAuthProtocol() = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if _, ok := g.OAuthProtocol(nil); ok {
		t.Error("OAuthProtocol(nil) = ok")
	}
}

// TestShippedRevocationTruth: every shipped sign-in entry says how its
// grant is withdrawn, and an entry that can post a revocation pins the
// endpoint on one of its own hosts.
func TestShippedRevocationTruth(t *testing.T) {
	g := shipped(t)
	oauth := 0
	for _, e := range g.Entries() {
		for _, o := range e.Options {
			if !o.Kind.IsOAuth() {
				continue
			}
			oauth++
			if e.Revocation == nil {
				t.Errorf("entry %s: an OAuth option without a revocation seat", e.ID)
				continue
			}
			switch e.Revocation.Method {
			case RevokeRFC7009, RevokeTokenClientID, RevokeBearer:
				if o.Endpoints.Revoke == "" {
					t.Errorf("entry %s: method %s without endpoints.revoke", e.ID, e.Revocation.Method)
				}
			case RevokeGitHubGrant, RevokeNone:
				if o.Endpoints.Revoke != "" {
					t.Errorf("entry %s: method %s beside endpoints.revoke %s", e.ID, e.Revocation.Method, o.Endpoints.Revoke)
				}
			}
		}
	}
	if oauth < 19 {
		t.Errorf("%d shipped OAuth options, want at least 19 (three before issue 29, sixteen from it)", oauth)
	}
}
