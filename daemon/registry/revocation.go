package registry

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/snug/snugd/daemon/requirement"
)

// The OAuth protocol seats: how a provider's token endpoint authenticates a
// client (tokenAuth) and how, if at all, a grant is withdrawn there
// (revocation). They are read at call time by the daemon, bound to a row's
// endpoints (OAuthProtocol), and never become part of a requirement.

// TokenAuth is how a confidential client authenticates at an entry's token
// endpoint (RFC 6749 §2.3.1).
type TokenAuth string

const (
	// TokenAuthBasic is client_secret_basic, RFC 6749's default (its
	// §2.3.1 says a server MUST support it): the seat's absent value.
	TokenAuthBasic TokenAuth = "client_secret_basic"
	// TokenAuthPost is client_secret_post: client_id and client_secret in
	// the form body, for a provider that documents only that.
	TokenAuthPost TokenAuth = "client_secret_post"
)

// RevocationMethod is how a connection's grant is withdrawn at the
// provider.
type RevocationMethod string

const (
	// RevokeRFC7009: POST the token, with token_type_hint, to the option's
	// endpoints.revoke, authenticating the client as tokenAuth says.
	RevokeRFC7009 RevocationMethod = "rfc7009"
	// RevokeTokenClientID: POST only the form fields token and client_id to
	// endpoints.revoke, as Twitch documents; no secret, no hint.
	RevokeTokenClientID RevocationMethod = "token-and-client-id"
	// RevokeGitHubGrant: DELETE the OAuth app's grant for the user (the
	// revocation seat's url, {client_id} filled in) with the client ID and
	// secret as Basic credentials and the access token in a JSON body.
	RevokeGitHubGrant RevocationMethod = "github-grant"
	// RevokeBearer: POST endpoints.revoke with no body and the access
	// token as bearer (Dropbox's /2/auth/token/revoke).
	RevokeBearer RevocationMethod = "bearer"
	// RevokeNone: the provider offers no revocation a client can call;
	// access remains until the user removes it at manageAccessUrl.
	RevokeNone RevocationMethod = "none"
)

// Revocation is an entry's revocation seat.
type Revocation struct {
	Method RevocationMethod
	// URL is the github-grant method's grant URL, with the placeholder
	// {client_id} in its path; "" for the other methods, whose endpoint
	// is the option's endpoints.revoke.
	URL string
	// ManageAccessURL is the provider's page where the user sees and
	// removes the apps that hold access to their account: what a revoke
	// that could not withdraw the grant points the user to. "" when the
	// provider's documentation names no such page (the entry's note says
	// so): the user is then told that access remains, without a link.
	ManageAccessURL string
}

// GrantURLPlaceholder is the seat in a github-grant URL that the client
// ID fills.
const GrantURLPlaceholder = "{client_id}"

// Rule names of the OAuth protocol seats.
const (
	RuleTokenAuth          = "oauth.token-auth"         // a tokenAuth outside the two, or on an entry without an OAuth option
	RuleScopeSeparator     = "oauth.scope-separator"    // a scopeSeparator other than "," (the space is the absent value), or one without an authorization-code option
	RuleRevocationMissing  = "revocation.missing"       // an entry with an authorization-code option that does not say how its grant is withdrawn
	RuleRevocationKind     = "revocation.kind"          // a revocation seat on an entry without an OAuth option
	RuleRevocationMethod   = "revocation.method"        // a method outside the five
	RuleRevocationEndpoint = "revocation.endpoint"      // endpoints.revoke missing beside a method that posts to it, or present beside one that does not
	RuleRevocationURL      = "revocation.url"           // a github-grant URL that is not https on a pinned host with one {client_id}, or a url beside another method
	RuleRevocationManage   = "revocation.manage-access" // no manageAccessUrl beside none, or one that is not an https address
)

// OAuthProtocol is what the daemon needs, beside a row, to talk to its
// provider's authorization, token and revocation endpoints.
type OAuthProtocol struct {
	TokenAuth TokenAuth
	// ScopeSeparator joins the scopes of an authorization request: " "
	// (RFC 6749 §3.3) unless the provider documents "," (Linear, Strava,
	// Todoist).
	ScopeSeparator string
	Revocation     Revocation
}

// OAuthProtocol returns the protocol seats of the entry one of whose OAuth
// options pins exactly r's authorize and token URLs (both byte for byte;
// a client-credentials option pins no authorize URL). ok is false for a
// row that binds to no entry: the caller then uses RFC defaults
// (client_secret_basic, RFC 7009 when the row has a revoke endpoint) and
// knows no page where access is managed.
func (g *Registry) OAuthProtocol(r *requirement.Requirement) (OAuthProtocol, bool) {
	if r == nil || !r.Kind.IsOAuth() || r.Endpoints.Token == "" {
		return OAuthProtocol{}, false
	}
	for _, e := range g.entries {
		for _, o := range e.options {
			ep := o.base.Endpoints
			if o.base.Kind.IsOAuth() && ep.Token == r.Endpoints.Token && ep.Authorize == r.Endpoints.Authorize {
				return e.oauthProtocol(), true
			}
		}
	}
	return OAuthProtocol{}, false
}

func (e *entry) oauthProtocol() OAuthProtocol {
	p := OAuthProtocol{TokenAuth: e.tokenAuth, ScopeSeparator: e.scopeSeparator}
	if p.TokenAuth == "" {
		p.TokenAuth = TokenAuthBasic
	}
	if p.ScopeSeparator == "" {
		p.ScopeSeparator = " "
	}
	if e.revocation != nil {
		p.Revocation = *e.revocation
	}
	return p
}

// protocolSeats decodes and checks tokenAuth, scopeSeparator and
// revocation.
func (l *loader) protocolSeats(e *entry, m map[string]json.RawMessage) {
	hasOAuth := slices.ContainsFunc(e.options, func(o *option) bool { return o.base.Kind.IsOAuth() })
	if _, ok := m["tokenAuth"]; ok {
		e.tokenAuth = TokenAuth(l.str(m, "", "tokenAuth", true))
		switch {
		case e.tokenAuth != TokenAuthBasic && e.tokenAuth != TokenAuthPost:
			l.fail("tokenAuth", RuleTokenAuth, "tokenAuth is client_secret_basic or client_secret_post")
		case !hasOAuth:
			l.fail("tokenAuth", RuleTokenAuth, "tokenAuth needs an OAuth option")
		}
	}
	if _, ok := m["scopeSeparator"]; ok {
		e.scopeSeparator = l.str(m, "", "scopeSeparator", true)
		switch {
		case e.scopeSeparator != ",":
			l.fail("scopeSeparator", RuleScopeSeparator, "scopeSeparator is \",\"; leave it out for the RFC's space")
		case !slices.ContainsFunc(e.options, func(o *option) bool { return o.base.Kind == requirement.KindOAuth2AuthCode }):
			l.fail("scopeSeparator", RuleScopeSeparator, "scopeSeparator needs an authorization-code option")
		}
	}
	raw, ok := m["revocation"]
	if !ok {
		if slices.ContainsFunc(e.options, func(o *option) bool { return o.base.Kind == requirement.KindOAuth2AuthCode }) {
			l.fail("revocation", RuleRevocationMissing, "an entry with a sign-in option says how its grant is withdrawn: a revocation method, or none and the page where the user removes access")
		}
		return
	}
	if !hasOAuth {
		l.fail("revocation", RuleRevocationKind, "the revocation seat needs an OAuth option")
		return
	}
	rm, _ := l.members(raw, "revocation", []string{"method", "url", "manageAccessUrl"})
	if rm == nil {
		return
	}
	rv := &Revocation{
		Method:          RevocationMethod(l.str(rm, "revocation", "method", true)),
		URL:             l.str(rm, "revocation", "url", false),
		ManageAccessURL: l.str(rm, "revocation", "manageAccessUrl", false),
	}
	e.revocation = rv
	posts := false
	switch rv.Method {
	case RevokeRFC7009, RevokeTokenClientID, RevokeBearer:
		posts = true
	case RevokeGitHubGrant, RevokeNone:
	default:
		l.fail("revocation.method", RuleRevocationMethod, "the revocation method is rfc7009, token-and-client-id, github-grant, bearer or none")
		return
	}
	for _, o := range e.options {
		if !o.base.Kind.IsOAuth() {
			continue
		}
		if has := o.base.Endpoints.Revoke != ""; has != posts {
			l.fail("revocation.method", RuleRevocationEndpoint, "option "+o.id+": endpoints.revoke is set exactly when the method posts to it (rfc7009, token-and-client-id, bearer)")
		}
	}
	switch {
	case rv.Method == RevokeGitHubGrant && !l.grantURL(e, rv.URL):
		l.fail("revocation.url", RuleRevocationURL, "a github-grant url is https on a pinned host, with "+GrantURLPlaceholder+" once in its path and no query")
	case rv.Method != RevokeGitHubGrant && rv.URL != "":
		l.fail("revocation.url", RuleRevocationURL, "only the github-grant method takes a url")
	}
	if rv.ManageAccessURL != "" && !httpsAddress(rv.ManageAccessURL) {
		l.fail("revocation.manageAccessUrl", RuleRevocationManage, "must be an https address without credentials")
	}
}

// grantURL reports whether u is a usable github-grant URL for e.
func (l *loader) grantURL(e *entry, u string) bool {
	if !httpsAddress(u) || strings.Count(u, GrantURLPlaceholder) != 1 {
		return false
	}
	p, err := url.Parse(strings.Replace(u, GrantURLPlaceholder, "x", 1))
	return err == nil && p.RawQuery == "" && slices.Contains(e.hosts, p.Hostname()) &&
		strings.Contains(p.Path, "/x/")
}

// httpsAddress reports whether s is an https URL with a normalized host and
// no userinfo or fragment.
func httpsAddress(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Fragment != "" || u.Port() != "" {
		return false
	}
	h, err := requirement.NormalizeHost(u.Hostname())
	return err == nil && h == u.Hostname()
}
