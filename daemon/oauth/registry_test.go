package oauth_test

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/snug/snugd/daemon/oauth"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
)

// recorder is a transport that sends nothing: it records each request and
// refuses it, so a test sees what would have left without a packet.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

var errNoNetwork = errors.New("recorder: nothing is sent in this test")

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return nil, errNoNetwork
}

// protocolEndpoint is the wiring the daemon does for a row bound to a
// registry entry: the row's endpoints and client fields, and the entry's
// protocol seats (client authentication, revocation method and URL, the
// manage-access page).
func protocolEndpoint(t *testing.T, p registry.OAuthProtocol, ep oauth.Endpoint) oauth.Endpoint {
	t.Helper()
	var ok bool
	if ep.AuthStyle, ok = oauth.ParseAuthStyle(string(p.TokenAuth)); !ok {
		t.Fatalf("tokenAuth %q does not parse", p.TokenAuth)
	}
	if ep.RevokeMethod, ok = oauth.ParseRevokeMethod(string(p.Revocation.Method)); !ok && p.Revocation.Method != "" {
		t.Fatalf("revocation method %q does not parse", p.Revocation.Method)
	}
	if ep.RevokeMethod == oauth.RevokeGitHubGrant {
		ep.RevokeURL = p.Revocation.URL
	}
	ep.ManageAccessURL = p.Revocation.ManageAccessURL
	return ep
}

// TestShippedOAuthEntries drives every OAuth option of the shipped
// registry through this package with its entry's protocol seats: its
// authorize URL builds (with the desktop loopback redirect where the entry
// vouches for it, PKCE on, the entry's scope separator), and its token
// and revocation requests go to exactly the pinned endpoints, in the
// method's shape, on a host of the entry's pinned hosts — the ceiling a
// borrowed row derives; the authorize URL's scope is the pin.
//
// conformance: P3-C13-20, P3-C13-22, P3-C12.12-08
func TestShippedOAuthEntries(t *testing.T) {
	g, err := registry.Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range g.Entries() {
		for _, o := range e.Options {
			if o.Kind != requirement.KindOAuth2AuthCode && o.Kind != requirement.KindOAuth2ClientCreds {
				continue
			}
			seen++
			t.Run(e.ID+"/"+o.ID, func(t *testing.T) {
				inCeiling := func(raw string) {
					t.Helper()
					u, _ := url.Parse(raw)
					if !slices.Contains(e.Hosts, u.Hostname()) {
						t.Errorf("endpoint %s is outside the pinned hosts %v", raw, e.Hosts)
					}
				}
				p, ok := g.OAuthProtocol(&requirement.Requirement{Kind: o.Kind, Endpoints: o.Endpoints})
				if !ok {
					t.Fatal("OAuthProtocol does not bind the entry's own option")
				}
				if o.Kind == requirement.KindOAuth2AuthCode {
					redirect, _ := oauth.WebRedirectURI("https://host.example")
					if e.DesktopRedirect == registry.PostureLoopback {
						redirect, _ = oauth.DesktopRedirectURI(4747)
					}
					pkce := o.PKCE == nil || *o.PKCE
					verifier := ""
					if pkce {
						verifier = oauth.NewVerifier()
					}
					u, err := oauth.AuthorizeURL(oauth.AuthorizeRequest{
						Endpoint: o.Endpoints.Authorize, ClientID: "client-id", RedirectURI: redirect,
						Scopes: e.Scopes, State: "flow.mac", Verifier: verifier, Params: o.AuthorizeParams,
						ScopeSeparator: p.ScopeSeparator,
					})
					if err != nil {
						t.Fatalf("AuthorizeURL = %v", err)
					}
					inCeiling(u)
					if pu, _ := url.Parse(u); len(e.Scopes) > 0 && pu.Query().Get("scope") != strings.Join(e.Scopes, p.ScopeSeparator) {
						t.Errorf("scope = %q, want the pinned scopes joined by %q", pu.Query().Get("scope"), p.ScopeSeparator)
					}
				}
				rec := &recorder{}
				c := &oauth.Client{HTTP: &http.Client{Transport: rec}}
				ep := protocolEndpoint(t, p, oauth.Endpoint{TokenURL: o.Endpoints.Token, RevokeURL: o.Endpoints.Revoke, ClientID: "client-id", ClientSecret: "s3cret-value"})
				var tokErr error
				if o.Kind == requirement.KindOAuth2AuthCode {
					_, tokErr = c.Exchange(t.Context(), ep, oauth.ExchangeParams{Code: "c", RedirectURI: "https://host.example/oauth/callback"})
				} else {
					_, tokErr = c.ClientCredentials(t.Context(), ep, e.Scopes)
				}
				var oe *oauth.Error
				if !errors.As(tokErr, &oe) || oe.Class != oauth.Transient || !errors.Is(tokErr, errNoNetwork) {
					t.Fatalf("token call = %v, want it to reach the transport", tokErr)
				}
				rev := c.RevokeGrant(t.Context(), ep, "access", "refresh")
				want := []string{"POST " + o.Endpoints.Token}
				switch p.Revocation.Method {
				case registry.RevokeRFC7009:
					want = append(want, "POST "+o.Endpoints.Revoke, "POST "+o.Endpoints.Revoke)
				case registry.RevokeTokenClientID, registry.RevokeBearer:
					want = append(want, "POST "+o.Endpoints.Revoke)
				case registry.RevokeGitHubGrant:
					want = append(want, "DELETE "+strings.Replace(p.Revocation.URL, registry.GrantURLPlaceholder, "client-id", 1))
				case registry.RevokeNone:
					if rev.Outcome != oauth.AccessRemains || rev.ManageAccessURL != p.Revocation.ManageAccessURL {
						t.Errorf("RevokeGrant = %+v, want AccessRemains", rev)
					}
				}
				var got []string
				for _, r := range rec.reqs {
					got = append(got, r.Method+" "+r.URL.String())
					inCeiling(r.URL.String())
				}
				if !slices.Equal(got, want) {
					t.Fatalf("requests = %v, want %v", got, want)
				}
			})
		}
	}
	if seen < 19 {
		t.Fatalf("the shipped registry has %d OAuth options, want the three older ones and issue 29's sixteen", seen)
	}
}

// TestNonHTTPSEndpointRefused: an http, userinfo or unparsable token or
// revoke endpoint is refused before the transport is asked. (The ceiling
// check of P3-C13-20/21/22 is the daemon's transport; this is the leaf's
// own floor beneath it.)
func TestNonHTTPSEndpointRefused(t *testing.T) {
	rec := &recorder{}
	c := &oauth.Client{HTTP: &http.Client{Transport: rec}}
	for _, bad := range []string{"http://id.example/token", "https://u:p@id.example/token", "https://id.example/token#f", "ftp://id.example/", "", "https:///token", "https://id.example/\ntoken"} {
		ep := oauth.Endpoint{TokenURL: bad, RevokeURL: bad, ClientID: "c"}
		_, err := c.ClientCredentials(t.Context(), ep, nil)
		var oe *oauth.Error
		if !errors.As(err, &oe) || oe.Class != oauth.Failed {
			t.Errorf("ClientCredentials(%q) = %v, want a Failed refusal", bad, err)
		}
		if _, err := c.Refresh(t.Context(), ep, "r", nil); err == nil {
			t.Errorf("Refresh(%q) = nil error", bad)
		}
		if errs := c.Revoke(t.Context(), ep, "a", "r"); bad != "" && len(errs) != 2 {
			t.Errorf("Revoke(%q) = %v, want two refusals", bad, errs)
		}
	}
	if len(rec.reqs) != 0 {
		t.Fatalf("the transport was asked %d times, want none", len(rec.reqs))
	}
}

// ceilingRefusal is what the daemon's transport will return for a host
// outside the row's frozen ceiling, before any dial.
type ceilingRefusal struct{ host string }

func (e *ceilingRefusal) Error() string { return "host outside the ceiling" }

type ceilingTransport struct {
	allowed []string
	sent    int
}

func (c *ceilingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !slices.Contains(c.allowed, r.URL.Hostname()) {
		return nil, &ceilingRefusal{host: r.URL.Hostname()}
	}
	c.sent++
	return nil, errNoNetwork
}

// TestTransportRefusalReachesTheCaller: the seam the daemon's ceiling
// check uses. A refusal the transport makes comes back inside the *Error,
// reachable with errors.As, so the daemon can answer it as the ceiling
// refusal it is rather than as a transient failure.
func TestTransportRefusalReachesTheCaller(t *testing.T) {
	tr := &ceilingTransport{allowed: []string{"id.example"}}
	c := &oauth.Client{HTTP: &http.Client{Transport: tr}}
	ep := oauth.Endpoint{TokenURL: "https://elsewhere.example/token", RevokeURL: "https://elsewhere.example/revoke", ClientID: "c", ClientSecret: "s"}
	_, err := c.Refresh(t.Context(), ep, "r", nil)
	var cr *ceilingRefusal
	if !errors.As(err, &cr) || cr.host != "elsewhere.example" {
		t.Fatalf("Refresh to a host outside the ceiling = %v, want the transport's refusal inside", err)
	}
	for _, e := range c.Revoke(t.Context(), ep, "a", "r") {
		if !errors.As(e, &cr) {
			t.Fatalf("Revoke to a host outside the ceiling = %v, want the transport's refusal inside", e)
		}
	}
	if tr.sent != 0 {
		t.Fatalf("%d requests passed the ceiling, want none", tr.sent)
	}
}
