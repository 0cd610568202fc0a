package oauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults for Client's zero fields.
const (
	// DefaultMaxBody caps a token-endpoint answer while it is read. A
	// token answer is a few hundred bytes to a few KiB (a JWT access token
	// with an ID token beside it); 64 KiB leaves room and bounds memory.
	DefaultMaxBody = 64 << 10
	// DefaultTimeout bounds one token-endpoint call when ctx has no
	// earlier deadline.
	DefaultTimeout = 30 * time.Second
)

// Client makes the token-endpoint calls: code exchange (RFC 6749 §4.1.3),
// client credentials (§4.4), refresh (§6) and revocation (RFC 7009). It
// never follows a redirect (any 3xx is refused), reads the answer under a
// cap, bounds the time, and refuses an endpoint that is not https before
// any connection. A Client is safe for concurrent use.
type Client struct {
	// HTTP sends the requests. The daemon passes its public transport
	// (ceiling check, SSRF guard); Client copies it and sets CheckRedirect
	// to refuse, so a redirect is never followed whatever HTTP does.
	// It must not be nil.
	HTTP *http.Client
	// MaxBody caps an answer (zero: DefaultMaxBody).
	MaxBody int64
	// Timeout bounds one call (zero: DefaultTimeout).
	Timeout time.Duration
	// Now is the clock for Token.ObtainedAt (nil: time.Now).
	Now func() time.Time
}

// AuthStyle is how a confidential client authenticates at the token
// endpoint (RFC 6749 §2.3.1). A public client (no secret) sends its
// client_id in the body whatever the style.
type AuthStyle int

const (
	// AuthBasic is client_secret_basic, the default: RFC 6749 §2.3.1 says
	// an authorization server MUST support it.
	AuthBasic AuthStyle = iota
	// AuthPost is client_secret_post: client_id and client_secret in the
	// form body, for providers that document only that (GitHub, Twitch).
	AuthPost
)

// Endpoint is a row's token side: its endpoints and client credentials.
type Endpoint struct {
	TokenURL  string // endpoints.token
	RevokeURL string // endpoints.revoke; empty when the provider has none
	ClientID  string
	// ClientSecret is empty for a public client (PKCE only).
	ClientSecret string
	AuthStyle    AuthStyle
	// RevokeMethod is how the provider withdraws a grant; the zero value
	// is RFC 7009 at RevokeURL (nothing is sent when RevokeURL is empty).
	// For RevokeGitHubGrant, RevokeURL holds GrantURLPlaceholder.
	RevokeMethod RevokeMethod
	// ManageAccessURL is the provider's page where the user removes the
	// app, when its documentation names one: what a Revocation that could
	// not withdraw the grant points to. Empty when unknown.
	ManageAccessURL string
}

// String, GoString and LogValue keep the client secret out of logs.
func (ep Endpoint) String() string {
	return "oauth endpoint " + ep.TokenURL + " client " + ep.ClientID + " secret REDACTED"
}

// GoString keeps %#v from printing the client secret.
func (ep Endpoint) GoString() string { return ep.String() }

// LogValue logs the endpoint without the client secret.
func (ep Endpoint) LogValue() slog.Value {
	return slog.GroupValue(slog.String("token_url", ep.TokenURL), slog.String("revoke_url", ep.RevokeURL),
		slog.String("client_id", ep.ClientID))
}

// Token is a token-endpoint success (RFC 6749 §5.1).
type Token struct {
	AccessToken string
	// TokenType is "Bearer"; any other type is refused.
	TokenType string
	// RefreshToken is the refresh token to store. After Refresh it is the
	// rotated one when the server sent one (Rotated), else the one that
	// was used, kept.
	RefreshToken string
	Rotated      bool
	// ExpiresIn is the lifetime the server gave; zero when it gave none.
	ExpiresIn  time.Duration
	ObtainedAt time.Time
	// Scopes are the granted scopes: the answer's scope, or the requested
	// ones when the answer omits it (§5.1: then they are identical).
	Scopes []string
	// Wider are granted scopes beyond the requested (or pinned) ones: a
	// caller discloses them.
	Wider []string
}

// Expiry returns when the access token expires, zero when unknown.
func (t Token) Expiry() time.Time {
	if t.ExpiresIn <= 0 {
		return time.Time{}
	}
	return t.ObtainedAt.Add(t.ExpiresIn)
}

// String, GoString and LogValue keep the token values out of logs and
// messages.
func (t Token) String() string { return "oauth token REDACTED" }

// GoString keeps %#v from printing the token values.
func (t Token) GoString() string { return t.String() }

// LogValue logs the token's metadata, never its values.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(slog.Time("obtained_at", t.ObtainedAt),
		slog.Duration("expires_in", t.ExpiresIn), slog.Any("scopes", t.Scopes),
		slog.Bool("rotated", t.Rotated))
}

// ExchangeParams are a code exchange's inputs.
type ExchangeParams struct {
	Code        string
	RedirectURI string // the flow's redirect, byte for byte (§4.1.3)
	Verifier    string // the flow's PKCE verifier; empty when PKCE is off
	// Scopes are the requested (pinned) scopes, for Token.Wider.
	Scopes []string
}

// Exchange redeems an authorization code (RFC 6749 §4.1.3, RFC 7636
// §4.5). It returns an *Error on failure.
func (c *Client) Exchange(ctx context.Context, ep Endpoint, p ExchangeParams) (Token, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {p.Code}, "redirect_uri": {p.RedirectURI}}
	secrets := []string{p.Code}
	if p.Verifier != "" {
		form.Set("code_verifier", p.Verifier)
		secrets = append(secrets, p.Verifier)
	}
	return c.token(ctx, "code exchange", ep, form, secrets, p.Scopes, "")
}

// ClientCredentials fetches a token with the client's own credentials
// (RFC 6749 §4.4), asking for scopes when there are any. It returns an
// *Error on failure.
func (c *Client) ClientCredentials(ctx context.Context, ep Endpoint, scopes []string) (Token, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	return c.token(ctx, "client credentials", ep, form, nil, scopes, "")
}

// Refresh trades a refresh token for a new access token (RFC 6749 §6),
// asking for the scopes already granted (no scope parameter). scopes are
// the granted or pinned scopes, for Token.Wider. A rotated refresh token in
// the answer is returned in Token.RefreshToken with Rotated set: the caller
// writes it and the access token in one transaction, since the old one may
// now be refused. It returns an *Error on failure; an Expired one means
// the grant is gone, a Transient one that the refresh token is kept.
func (c *Client) Refresh(ctx context.Context, ep Endpoint, refreshToken string, scopes []string) (Token, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	return c.token(ctx, "refresh", ep, form, []string{refreshToken}, scopes, refreshToken)
}

// token posts a token request and parses the answer.
func (c *Client) token(ctx context.Context, op string, ep Endpoint, form url.Values, secrets, requested []string, usedRefresh string) (Token, error) {
	body, e := c.post(ctx, op, ep.TokenURL, ep, form, secrets)
	if e != nil {
		return Token{}, e
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	t, err := ParseTokenResponse(body, requested, now())
	if err != nil {
		return Token{}, answerError(op, err, body, submittedSecrets(ep, secrets))
	}
	if usedRefresh != "" {
		t.Rotated = t.RefreshToken != "" && t.RefreshToken != usedRefresh
		if t.RefreshToken == "" {
			t.RefreshToken = usedRefresh
		}
	}
	return t, nil
}

// answerError is the error for a 2xx answer that is not a token.
func answerError(op string, err error, body []byte, secrets []string) *Error {
	var te *tokenAnswerError
	if errors.As(err, &te) && te.code != "" {
		return &Error{Op: op, Class: classify(http.StatusOK, te.code), Code: te.code, Status: http.StatusOK,
			Secrets: secrets, reason: "the token endpoint refused the request", body: body}
	}
	return &Error{Op: op, Class: Failed, Status: http.StatusOK, Secrets: secrets,
		reason: "the token endpoint's answer is not a usable bearer token", body: body}
}

// submittedSecrets lists every secret a request to ep carrying secrets
// submits: the form's secrets, and the client secret in both the forms it
// may travel in (raw in the body, inside the Basic header).
func submittedSecrets(ep Endpoint, secrets []string) []string {
	out := slices.Clone(secrets)
	if ep.ClientSecret != "" {
		out = append(out, ep.ClientSecret)
		if ep.AuthStyle == AuthBasic {
			out = append(out, basicCredentials(ep.ClientID, ep.ClientSecret))
		}
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

func basicCredentials(id, secret string) string {
	// RFC 6749 §2.3.1: both are form-urlencoded before the Basic encoding.
	return base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id) + ":" + url.QueryEscape(secret)))
}

// errRedirect is returned by CheckRedirect so the 3xx answer comes back
// unfollowed, to be refused.
var errRedirect = http.ErrUseLastResponse

// post sends form to endpoint with ep's client authentication and returns
// a 2xx answer's body, or an *Error.
func (c *Client) post(ctx context.Context, op, endpoint string, ep Endpoint, form url.Values, secrets []string) ([]byte, *Error) {
	return c.send(ctx, request{op: op, method: http.MethodPost, endpoint: endpoint, form: form, auth: authEndpoint}, ep, secrets)
}

// clientAuth is how one call authenticates the client.
type clientAuth int

const (
	// authEndpoint: ep's AuthStyle for a confidential client; client_id in
	// the form for a public one.
	authEndpoint clientAuth = iota
	// authClientIDOnly: client_id in the form and nothing else, whatever
	// the client holds (Twitch's revocation).
	authClientIDOnly
	// authBasicRaw: HTTP Basic (RFC 7617) of the client ID and secret as
	// they are, for a provider's REST API (GitHub's grant deletion).
	authBasicRaw
	// authNone: no client authentication; the request's own header
	// carries its credential (a bearer revocation).
	authNone
)

// request is one call to a provider endpoint: a form POST, or a request
// with a JSON body.
type request struct {
	op, method, endpoint string
	form                 url.Values // the form body; nil with json
	json                 []byte     // a JSON body instead of a form
	noBody               bool       // neither: no body and no Content-Type
	auth                 clientAuth
	header               map[string]string // further request headers
}

// send sends r with its client authentication and returns a 2xx answer's
// body, or an *Error.
func (c *Client) send(ctx context.Context, r request, ep Endpoint, secrets []string) ([]byte, *Error) {
	secrets = submittedSecrets(ep, secrets)
	if r.auth == authBasicRaw && ep.ClientSecret != "" {
		secrets = append(secrets, basicRaw(ep.ClientID, ep.ClientSecret))
	}
	fail := func(class Class, status int, reason string, body []byte, err error) *Error {
		return &Error{Op: r.op, Class: class, Status: status, Secrets: secrets, reason: reason, body: body, err: err}
	}
	u, err := endpointURL(r.endpoint)
	if err != nil {
		return nil, fail(Failed, 0, "the endpoint is not an https address", nil, nil)
	}
	if !printable(ep.ClientID) {
		return nil, fail(Failed, 0, "the client ID is empty or not printable", nil, nil)
	}
	if c.HTTP == nil {
		return nil, fail(Failed, 0, "no HTTP client was given", nil, nil)
	}
	if r.auth == authBasicRaw && ep.ClientSecret == "" {
		return nil, fail(Failed, 0, "the call needs the client secret, and the connection holds none", nil, nil)
	}
	var body io.Reader
	contentType := "application/json"
	switch {
	case r.noBody:
		contentType = ""
	case r.json != nil:
		body = bytes.NewReader(r.json)
	default:
		switch {
		case r.auth == authClientIDOnly || ep.ClientSecret == "":
			r.form.Set("client_id", ep.ClientID)
		case r.auth == authEndpoint && ep.AuthStyle == AuthPost:
			r.form.Set("client_id", ep.ClientID)
			r.form.Set("client_secret", ep.ClientSecret)
		}
		body = strings.NewReader(r.form.Encode())
		contentType = "application/x-www-form-urlencoded"
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, fail(Failed, 0, "the request could not be built", nil, nil)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	switch {
	case r.auth == authBasicRaw:
		req.Header.Set("Authorization", "Basic "+basicRaw(ep.ClientID, ep.ClientSecret))
	case r.auth == authEndpoint && ep.ClientSecret != "" && ep.AuthStyle == AuthBasic:
		req.Header.Set("Authorization", "Basic "+basicCredentials(ep.ClientID, ep.ClientSecret))
	}
	hc := *c.HTTP
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	resp, err := hc.Do(req)
	if err != nil {
		// The cause keeps the transport's words but not the URL.
		return nil, fail(Transient, 0, "the token endpoint could not be reached", nil, causeOf(err))
	}
	defer resp.Body.Close()
	max := c.MaxBody
	if max <= 0 {
		max = DefaultMaxBody
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fail(Transient, resp.StatusCode, "the token endpoint's answer broke off", nil, causeOf(err))
	}
	if int64(len(answer)) > max {
		return nil, fail(Failed, resp.StatusCode, "the token endpoint's answer is larger than snugd accepts", answer[:max], nil)
	}
	switch s := resp.StatusCode; {
	case s >= 300 && s < 400:
		return nil, fail(Failed, s, "the token endpoint answered with a redirect, which snugd never follows", answer, nil)
	case s >= 200 && s < 300:
		return answer, nil
	}
	code := errorCode(answer)
	e := fail(classify(resp.StatusCode, code), resp.StatusCode, "the token endpoint refused the request", answer, nil)
	e.Code = code
	if e.Class == Transient && code == "" {
		e.reason = "the token endpoint is unavailable"
	}
	return nil, e
}

// basicRaw is RFC 7617's Basic credentials of id and secret as they are
// (a REST API's Basic, not RFC 6749 §2.3.1's form-encoded one).
func basicRaw(id, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(id + ":" + secret))
}

// causeOf unwraps a *url.Error so the cause carries no URL.
func causeOf(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// classify says what a refusal means: invalid_grant is an expired grant;
// 5xx, 429 and the two "try later" codes are transient; anything else
// failed.
func classify(status int, code string) Class {
	switch {
	case code == "invalid_grant":
		return Expired
	case status >= 500, status == http.StatusTooManyRequests,
		code == "server_error", code == "temporarily_unavailable":
		return Transient
	}
	return Failed
}

// githubCodes maps GitHub's token-endpoint codes onto RFC 6749's: it
// answers 200 with bad_verification_code for a bad or expired code and
// bad_refresh_token for a bad refresh token, both invalid_grant in RFC
// terms. Checked 2026-12-01:
// https://docs.github.com/en/apps/oauth-apps/maintaining-oauth-apps/troubleshooting-oauth-app-access-token-request-errors
var githubCodes = map[string]string{
	"bad_verification_code":        "invalid_grant",
	"bad_refresh_token":            "invalid_grant",
	"incorrect_client_credentials": "invalid_client",
}

// errorCode returns the §5.2 error code of a JSON error answer, or "" when
// the body is not one or the code is not a known one.
func errorCode(body []byte) string {
	var v struct {
		Error any `json:"error"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	s, _ := v.Error.(string)
	if m, ok := githubCodes[s]; ok {
		s = m
	}
	if slices.Contains(tokenErrors, s) {
		return s
	}
	return ""
}

// tokenAnswerError is a 2xx answer that carries an error code (GitHub
// answers errors with 200).
type tokenAnswerError struct{ code string }

func (e *tokenAnswerError) Error() string { return "token answer carries an error" }

// Errors ParseTokenResponse returns besides a *tokenAnswerError.
var (
	errNotToken   = errors.New("token answer: not a JSON object with an access token")
	errTokenType  = errors.New("token answer: token_type is not Bearer")
	errTokenValue = errors.New("token answer: a token holds characters a header cannot carry")
	errExpiresIn  = errors.New("token answer: expires_in is not a non-negative whole number of seconds")
	errScope      = errors.New("token answer: scope is neither a string nor a list of strings")
)

// maxExpiresIn bounds expires_in to a sane range (about 68 years).
const maxExpiresIn = 1<<31 - 1

// ParseTokenResponse parses a token-endpoint success (RFC 6749 §5.1):
// access_token (b64token, RFC 6750 §2.1, so it can ride in a header),
// token_type (Bearer, case-insensitive; required), expires_in (a number, or
// a string of digits as some providers send), refresh_token (printable)
// and scope (space-delimited; GitHub's commas and Twitch's JSON array are
// read too). requested are the requested or pinned scopes: granted ones
// beyond them land in Wider.
// Unknown members (id_token…) are ignored. A body that carries an error
// member and no access token is an error answer.
func ParseTokenResponse(body []byte, requested []string, now time.Time) (Token, error) {
	var v struct {
		AccessToken  *string         `json:"access_token"`
		TokenType    *string         `json:"token_type"`
		ExpiresIn    json.RawMessage `json:"expires_in"`
		RefreshToken *string         `json:"refresh_token"`
		Scope        json.RawMessage `json:"scope"`
		Error        any             `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&v); err != nil || dec.More() {
		return Token{}, errNotToken
	}
	if v.AccessToken == nil {
		if v.Error != nil {
			return Token{}, &tokenAnswerError{code: errorCode(body)}
		}
		return Token{}, errNotToken
	}
	t := Token{AccessToken: *v.AccessToken, ObtainedAt: now}
	if !b64token(t.AccessToken) {
		return Token{}, errTokenValue
	}
	if v.TokenType == nil || !strings.EqualFold(*v.TokenType, "bearer") {
		return Token{}, errTokenType
	}
	t.TokenType = "Bearer"
	if v.RefreshToken != nil && *v.RefreshToken != "" {
		if !printable(*v.RefreshToken) {
			return Token{}, errTokenValue
		}
		t.RefreshToken = *v.RefreshToken
	}
	secs, err := parseExpiresIn(v.ExpiresIn)
	if err != nil {
		return Token{}, err
	}
	t.ExpiresIn = time.Duration(secs) * time.Second
	if len(v.Scope) > 0 && string(v.Scope) != "null" {
		if t.Scopes, err = parseScope(v.Scope); err != nil {
			return Token{}, err
		}
	} else {
		t.Scopes = slices.Clone(requested)
	}
	for _, s := range t.Scopes {
		if !slices.Contains(requested, s) && !slices.Contains(t.Wider, s) {
			t.Wider = append(t.Wider, s)
		}
	}
	return t, nil
}

func parseExpiresIn(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	s := string(raw)
	if s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, errExpiresIn
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > maxExpiresIn {
		return 0, errExpiresIn
	}
	return n, nil
}

// parseScope reads the answer's scope: RFC 6749's space-delimited string
// (GitHub's commas read too), or the JSON array of strings Twitch sends
// (checked 2026-12-01: https://dev.twitch.tv/docs/authentication/getting-tokens-oauth/).
func parseScope(raw json.RawMessage) ([]string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return splitScopes(s), nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, errScope
	}
	return splitScopes(strings.Join(list, " ")), nil
}

func splitScopes(s string) []string {
	out := []string{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// b64token reports whether s is an RFC 6750 §2.1 b64token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func b64token(s string) bool {
	t := strings.TrimRight(s, "=")
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~+/", c) >= 0:
		default:
			return false
		}
	}
	return true
}
