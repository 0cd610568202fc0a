package oauth

import (
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// CallbackPath is the path of both redirect surfaces: snugd's own loopback
// listener on the desktop, the host's origin on the web.
const CallbackPath = "/oauth/callback"

// Errors AuthorizeURL and the redirect helpers return. Each is a fixed
// sentence a caller may show as it is.
var (
	// ErrLoopbackWithoutPKCE: a loopback redirect is representable only
	// beside PKCE; without it an intercepted code could
	// be redeemed by anyone on the machine.
	ErrLoopbackWithoutPKCE = errors.New("a loopback redirect needs PKCE, and this flow has it turned off")
	// ErrEndpoint: the endpoint is not an https URL without userinfo or
	// fragment.
	ErrEndpoint = errors.New("the OAuth endpoint is not an https address snugd can use")
	// ErrRedirectURI: the redirect URI is neither snugd's loopback callback
	// nor an https origin's callback.
	ErrRedirectURI = errors.New("the redirect address is neither snugd's loopback callback nor an https origin's callback")
	// ErrReservedParam: an authorizeParams entry, or the endpoint's own
	// query, names a parameter snugd sets itself.
	ErrReservedParam = errors.New("an extra authorization parameter names a parameter snugd sets itself")
	// ErrClientID: the client ID is empty or holds a control character.
	ErrClientID = errors.New("the client ID is empty or not printable")
	// ErrScopeSeparator: the scope separator is neither a space nor a
	// comma.
	ErrScopeSeparator = errors.New("the scope separator is neither a space nor a comma")
)

// reservedParams are the authorization-request parameters snugd sets (or
// never lets an author set) itself, compared case-insensitively. It is
// requirement.ReservedAuthorizeParams; a test keeps the two
// equal, since this leaf does not import the requirement package.
var reservedParams = []string{
	"response_type", "client_id", "client_secret", "redirect_uri", "scope",
	"state", "code", "code_challenge", "code_challenge_method",
	"code_verifier", "grant_type", "refresh_token", "nonce", "response_mode",
	"request", "request_uri", "token", "access_token", "id_token",
	"assertion", "client_assertion", "client_assertion_type", "username",
	"password",
}

func isReserved(name string) bool {
	return slices.Contains(reservedParams, strings.ToLower(name))
}

// AuthorizeRequest is what an authorization request (RFC 6749 §4.1.1)
// carries. Verifier is the flow's PKCE verifier; empty means the row turned
// PKCE off, which a loopback redirect refuses.
type AuthorizeRequest struct {
	Endpoint    string // the requirement's endpoints.authorize
	ClientID    string
	RedirectURI string
	Scopes      []string
	State       string
	Verifier    string
	// Params are the requirement's authorizeParams.
	Params map[string]string
	// ScopeSeparator joins Scopes: "" or " " for RFC 6749 §3.3's space,
	// "," for a provider that documents commas (the registry's
	// scopeSeparator). Anything else is ErrScopeSeparator.
	ScopeSeparator string
}

// AuthorizeURL returns the URL the user opens to sign in: the endpoint with
// response_type=code, client_id, redirect_uri, scope (when there are
// scopes), state, code_challenge and code_challenge_method=S256 (when
// there is a verifier), and the extra params. A query the endpoint already
// has is kept (RFC 6749 §3.1). It returns ErrEndpoint, ErrRedirectURI,
// ErrClientID, ErrReservedParam, ErrLoopbackWithoutPKCE, ErrScopeSeparator
// or ErrBadState.
func AuthorizeURL(r AuthorizeRequest) (string, error) {
	u, err := endpointURL(r.Endpoint)
	if err != nil {
		return "", err
	}
	loopback, err := checkRedirectURI(r.RedirectURI)
	if err != nil {
		return "", err
	}
	if r.Verifier == "" && loopback {
		return "", ErrLoopbackWithoutPKCE
	}
	if r.Verifier != "" && !validVerifier(r.Verifier) {
		return "", errors.New("the PKCE verifier is not 43–128 unreserved characters")
	}
	if !printable(r.ClientID) {
		return "", ErrClientID
	}
	if r.State == "" || !printable(r.State) {
		return "", ErrBadState
	}
	sep := r.ScopeSeparator
	switch sep {
	case "":
		sep = " "
	case " ", ",":
	default:
		return "", ErrScopeSeparator
	}
	for _, sc := range r.Scopes {
		if strings.Contains(sc, sep) {
			return "", ErrScopeSeparator // the joined list would split it
		}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", ErrEndpoint
	}
	for name := range q {
		if isReserved(name) {
			return "", ErrReservedParam
		}
	}
	for name, v := range r.Params {
		if isReserved(name) || name == "" {
			return "", ErrReservedParam
		}
		if _, dup := q[name]; dup {
			return "", ErrReservedParam
		}
		q.Set(name, v)
	}
	q.Set("response_type", "code")
	q.Set("client_id", r.ClientID)
	q.Set("redirect_uri", r.RedirectURI)
	if len(r.Scopes) > 0 {
		q.Set("scope", strings.Join(r.Scopes, sep))
	}
	q.Set("state", r.State)
	if r.Verifier != "" {
		q.Set("code_challenge", Challenge(r.Verifier))
		q.Set("code_challenge_method", "S256")
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// DesktopRedirectURI returns the loopback redirect of the desktop surface
// on snugd's API port: http://127.0.0.1:<port>/oauth/callback. RFC 8252
// §7.3 and §8.3: the IP literal, never "localhost", which a resolver or a
// firewall may send elsewhere.
func DesktopRedirectURI(port int) (string, error) {
	if port < 1 || port > 65535 {
		return "", ErrRedirectURI
	}
	return "http://127.0.0.1:" + strconv.Itoa(port) + CallbackPath, nil
}

// WebRedirectURI returns the redirect of the web surface (the
// origin-callback posture): the host's https origin followed by
// /oauth/callback. The origin is scheme, host and optional port only, as a
// browser sends it in the Origin header.
func WebRedirectURI(origin string) (string, error) {
	if _, err := checkOrigin(origin); err != nil {
		return "", err
	}
	return origin + CallbackPath, nil
}

// checkOrigin reports whether origin is a serialized https origin: no
// path, query, fragment or userinfo, a lowercase host.
func checkOrigin(origin string) (*url.URL, error) {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" ||
		strings.HasSuffix(origin, "?") || strings.HasSuffix(origin, "#") ||
		u.Host != strings.ToLower(u.Host) || !printable(origin) {
		return nil, ErrRedirectURI
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return nil, ErrRedirectURI
		}
	}
	return u, nil
}

// checkRedirectURI admits the two redirect shapes snugd uses and reports
// whether uri is the loopback one: http://127.0.0.1:<port>/oauth/callback
// (or [::1]), or an https origin followed by /oauth/callback.
func checkRedirectURI(uri string) (loopback bool, err error) {
	u, err := url.Parse(uri)
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Path != CallbackPath || !printable(uri) {
		return false, ErrRedirectURI
	}
	switch u.Scheme {
	case "http":
		a, err := netip.ParseAddr(u.Hostname())
		if err != nil || !a.IsLoopback() || u.Port() == "" {
			return false, ErrRedirectURI
		}
		return true, nil
	case "https":
		if _, err := checkOrigin(u.Scheme + "://" + u.Host); err != nil {
			return false, err
		}
		return false, nil
	}
	return false, ErrRedirectURI
}

// endpointURL parses an OAuth endpoint: https, a host, no userinfo, no
// fragment (RFC 6749 §3.1, §3.2), nothing unprintable.
func endpointURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil ||
		u.Fragment != "" || strings.Contains(raw, "#") || u.Opaque != "" || !printable(raw) {
		return nil, ErrEndpoint
	}
	return u, nil
}

// printable reports whether s is non-empty printable ASCII (RFC 6749
// Appendix A's VSCHAR, %x20-7E).
func printable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
