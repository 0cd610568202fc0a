package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// RevokeMethod is how a provider withdraws a grant.
type RevokeMethod int

const (
	// RevokeRFC7009 POSTs each token, with token_type_hint, to RevokeURL
	// with the client's authentication (RFC 7009 §2.1): the zero value.
	RevokeRFC7009 RevokeMethod = iota
	// RevokeTokenClientID POSTs only the form fields token and client_id,
	// the two Twitch's revocation documents: no secret, no hint, no
	// Authorization header. Twitch revokes access tokens, so the refresh
	// token is not sent. Checked 2026-12-01:
	// https://dev.twitch.tv/docs/authentication/revoke-tokens/
	RevokeTokenClientID
	// RevokeGitHubGrant DELETEs the user's grant of the OAuth app — every
	// token it issued to the app for that user — at RevokeURL with its
	// GrantURLPlaceholder filled by the client ID, Basic client ID and
	// secret, and the access token in a JSON body: 204 when it is gone.
	// Checked 2026-12-01:
	// https://docs.github.com/en/rest/apps/oauth-applications#delete-an-app-authorization
	RevokeGitHubGrant
	// RevokeUnsupported: the provider offers no revocation a client can
	// call. Nothing is sent; access remains until the user removes it at
	// the provider (ManageAccessURL, when known).
	RevokeUnsupported
	// RevokeBearer POSTs to RevokeURL with no body, the access token as
	// its bearer credential: Dropbox's /2/auth/token/revoke, which
	// disables that token, its refresh token and every access token of
	// that refresh token. An expired access token cannot revoke, so on a
	// 401 RevokeGrant refreshes once and revokes with the new token; a
	// refresh the provider refuses as invalid_grant means nothing remains.
	// Checked 2026-12-01:
	// https://dropbox.github.io/dropbox-sdk-java/api-docs/v8.0.1/com/dropbox/core/v2/auth/DbxUserAuthRequests.html
	RevokeBearer
)

// GrantURLPlaceholder is the seat of a RevokeGitHubGrant URL that the
// client ID fills, path-escaped. It equals registry.GrantURLPlaceholder; a
// test keeps the two equal, since this leaf does not import the registry.
const GrantURLPlaceholder = "{client_id}"

// RevokeOutcome is what a revocation did at the provider.
type RevokeOutcome int

const (
	// Revoked: the provider confirmed the revocation.
	Revoked RevokeOutcome = iota
	// AlreadyRevoked: the provider answered that the token was no longer
	// valid (Twitch's 400 "Invalid token", RFC 6750's invalid_token):
	// nothing remained to withdraw, which counts as revoked.
	AlreadyRevoked
	// AccessRemains: nothing was sent — the provider offers no revocation
	// snugd can call, or snugd holds no token to revoke. Whatever grant
	// the user gave stays at the provider until they remove it there.
	AccessRemains
	// RevokeFailed: the provider refused or could not be reached; access
	// may remain at the provider.
	RevokeFailed
)

func (o RevokeOutcome) String() string {
	switch o {
	case Revoked:
		return "revoked"
	case AlreadyRevoked:
		return "already-revoked"
	case AccessRemains:
		return "access-remains"
	}
	return "failed"
}

// Revocation is the outcome of RevokeGrant.
type Revocation struct {
	Outcome RevokeOutcome
	// ManageAccessURL is Endpoint.ManageAccessURL, set beside
	// AccessRemains and RevokeFailed: where the user removes access.
	ManageAccessURL string
	// Errors are the failed calls, one per token, in order; the caller
	// logs them (they print no secret) and never shows their Body
	// unscrubbed.
	Errors []*Error
}

// Message is a fixed sentence for the outcome, safe to show as it is:
// what a revoke tells the user about the provider's side, after snugd's
// own copy is wiped. It names the manage-access page when there is one
// and never a token or a provider's words.
func (r Revocation) Message() string {
	where := "remove snugd's access in the provider's account settings"
	if r.ManageAccessURL != "" {
		where = "remove snugd's access at " + r.ManageAccessURL
	}
	switch r.Outcome {
	case Revoked:
		return "the provider confirmed the revocation"
	case AlreadyRevoked:
		return "the provider no longer honoured the token: nothing remained to revoke"
	case AccessRemains:
		return "this provider offers no revocation snugd can call, so the access you granted remains there: " + where
	}
	return "the provider did not confirm the revocation, so access may remain there: " + where
}

// RevokeGrant withdraws a connection's grant at the provider as
// ep.RevokeMethod says, and reports the outcome. RFC 7009 revokes the
// refresh token first (the server then drops the access tokens it issued,
// §2.1), then the access token; empty tokens are skipped. A token the
// provider says is already invalid counts as revoked. It never blocks the
// caller's wipe: whatever it returns, the local copy is wiped anyway. It
// is safe for concurrent use.
func (c *Client) RevokeGrant(ctx context.Context, ep Endpoint, accessToken, refreshToken string) Revocation {
	var calls []revokeCall
	switch ep.RevokeMethod {
	case RevokeRFC7009:
		if ep.RevokeURL != "" {
			calls = rfc7009Calls(ep, accessToken, refreshToken)
		}
	case RevokeTokenClientID:
		if ep.RevokeURL != "" && accessToken != "" {
			calls = []revokeCall{{request{op: "revoke access token", method: http.MethodPost, endpoint: ep.RevokeURL,
				form: url.Values{"token": {accessToken}}, auth: authClientIDOnly}, accessToken}}
		}
	case RevokeGitHubGrant:
		if ep.RevokeURL != "" && accessToken != "" {
			calls = []revokeCall{githubGrantCall(ep, accessToken)}
		}
	case RevokeBearer:
		if ep.RevokeURL != "" && (accessToken != "" || refreshToken != "") {
			return c.revokeBearer(ctx, ep, accessToken, refreshToken)
		}
	}
	if len(calls) == 0 {
		return Revocation{Outcome: AccessRemains, ManageAccessURL: ep.ManageAccessURL}
	}
	var out Revocation
	revoked := false
	for _, rc := range calls {
		_, err := c.send(ctx, rc.r, ep, []string{rc.token})
		switch {
		case err == nil:
			revoked = true
		case !deadToken(ep.RevokeMethod, err.Status, err.body):
			out.Errors = append(out.Errors, err)
		}
	}
	switch {
	case len(out.Errors) > 0:
		out.Outcome, out.ManageAccessURL = RevokeFailed, ep.ManageAccessURL
	case revoked:
		out.Outcome = Revoked
	default:
		out.Outcome = AlreadyRevoked
	}
	return out
}

// Revoke is RevokeGrant's failures: nil when the provider confirmed,
// found nothing left to revoke, or nothing was sent.
func (c *Client) Revoke(ctx context.Context, ep Endpoint, accessToken, refreshToken string) []*Error {
	return c.RevokeGrant(ctx, ep, accessToken, refreshToken).Errors
}

// revokeBearer is RevokeBearer: revoke with the access token; when the
// provider refuses it (401) or there is none, refresh once and revoke
// with the new one. A refresh refused as invalid_grant, or a refused
// access token with no refresh token beside it, leaves nothing to revoke.
func (c *Client) revokeBearer(ctx context.Context, ep Endpoint, accessToken, refreshToken string) Revocation {
	failed := func(errs ...*Error) Revocation {
		return Revocation{Outcome: RevokeFailed, ManageAccessURL: ep.ManageAccessURL, Errors: errs}
	}
	var errs []*Error
	if accessToken != "" {
		_, err := c.send(ctx, bearerCall(ep, accessToken), ep, []string{accessToken})
		switch {
		case err == nil:
			return Revocation{Outcome: Revoked}
		case err.Status != http.StatusUnauthorized:
			return failed(err)
		case refreshToken == "":
			return Revocation{Outcome: AlreadyRevoked}
		}
		errs = append(errs, err)
	}
	tok, rerr := c.Refresh(ctx, ep, refreshToken, nil)
	var re *Error
	switch {
	case errors.As(rerr, &re) && re.Class == Expired:
		return Revocation{Outcome: AlreadyRevoked}
	case rerr != nil:
		if re == nil {
			re = &Error{Op: "refresh", Class: Failed, reason: "the refresh before the revocation failed"}
		}
		return failed(append(errs, re)...)
	}
	if _, err := c.send(ctx, bearerCall(ep, tok.AccessToken), ep, []string{tok.AccessToken, refreshToken}); err != nil {
		return failed(append(errs, err)...)
	}
	return Revocation{Outcome: Revoked}
}

func bearerCall(ep Endpoint, accessToken string) request {
	return request{op: "revoke access token", method: http.MethodPost, endpoint: ep.RevokeURL, noBody: true,
		auth: authNone, header: map[string]string{"Authorization": "Bearer " + accessToken}}
}

// revokeCall is one revocation request and the token it submits.
type revokeCall struct {
	r     request
	token string
}

func rfc7009Calls(ep Endpoint, accessToken, refreshToken string) []revokeCall {
	var calls []revokeCall
	for _, t := range []struct{ op, hint, value string }{
		{"revoke refresh token", "refresh_token", refreshToken},
		{"revoke access token", "access_token", accessToken},
	} {
		if t.value == "" {
			continue
		}
		// RFC 7009 §2.2: 200 whether or not the token was valid; the body
		// is ignored.
		calls = append(calls, revokeCall{request{op: t.op, method: http.MethodPost, endpoint: ep.RevokeURL,
			form: url.Values{"token": {t.value}, "token_type_hint": {t.hint}}, auth: authEndpoint}, t.value})
	}
	return calls
}

func githubGrantCall(ep Endpoint, accessToken string) revokeCall {
	endpoint := ""
	if strings.Count(ep.RevokeURL, GrantURLPlaceholder) == 1 {
		endpoint = strings.Replace(ep.RevokeURL, GrantURLPlaceholder, url.PathEscape(ep.ClientID), 1)
	}
	body, _ := json.Marshal(map[string]string{"access_token": accessToken})
	return revokeCall{request{op: "delete grant", method: http.MethodDelete, endpoint: endpoint, json: body,
		auth: authBasicRaw, header: map[string]string{
			"Accept":               "application/vnd.github+json",
			"X-GitHub-Api-Version": "2022-11-28",
		}}, accessToken}
}

// deadToken reports whether a refused revocation says the token was
// already invalid, as the provider's method documents it:
//
//   - Twitch answers 400 {"status": 400, "message": "Invalid token"} when
//     the client ID is valid but the access token is not (checked
//     2026-12-01: https://dev.twitch.tv/docs/authentication/revoke-tokens/);
//   - an RFC 7009 server answers 200 for an invalid token (§2.2), but some
//     answer 400 with RFC 6750's invalid_token, as Google does for a token
//     it already dropped (checked 2026-12-01:
//     https://github.com/googleapis/google-auth-library-nodejs/issues/1175).
//
// GitHub documents 204 and 422 only, so a refused grant deletion is never
// read as dead.
func deadToken(m RevokeMethod, status int, body []byte) bool {
	if status != http.StatusBadRequest {
		return false
	}
	var v struct {
		Error   any `json:"error"`
		Message any `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return false
	}
	switch m {
	case RevokeTokenClientID:
		s, _ := v.Message.(string)
		return strings.EqualFold(s, "invalid token")
	case RevokeRFC7009:
		s, _ := v.Error.(string)
		return s == "invalid_token"
	}
	return false
}

// ParseRevokeMethod maps a registry revocation method (rfc7009,
// token-and-client-id, github-grant, bearer, none) onto a RevokeMethod; ok is
// false for anything else. The registry's names are data, so the leaf
// reads them here rather than importing the registry.
func ParseRevokeMethod(name string) (m RevokeMethod, ok bool) {
	switch name {
	case "rfc7009":
		return RevokeRFC7009, true
	case "token-and-client-id":
		return RevokeTokenClientID, true
	case "github-grant":
		return RevokeGitHubGrant, true
	case "none":
		return RevokeUnsupported, true
	case "bearer":
		return RevokeBearer, true
	}
	return RevokeRFC7009, false
}

// ParseAuthStyle maps a registry tokenAuth (client_secret_basic,
// client_secret_post) onto an AuthStyle; ok is false for anything else,
// and the style is then AuthBasic, RFC 6749's default.
func ParseAuthStyle(name string) (s AuthStyle, ok bool) {
	switch name {
	case "client_secret_basic":
		return AuthBasic, true
	case "client_secret_post":
		return AuthPost, true
	}
	return AuthBasic, false
}
