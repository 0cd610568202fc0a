package oauth_test

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
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

// TestShippedOAuthEntries drives every OAuth option of the shipped
// registry through this package: its authorize URL builds (with the
// desktop loopback redirect where the entry vouches for it, PKCE on), and
// its token and revoke POSTs go to exactly the pinned endpoint, on a host
// of the entry's pinned hosts — the ceiling a borrowed row derives.
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
					})
					if err != nil {
						t.Fatalf("AuthorizeURL = %v", err)
					}
					inCeiling(u)
				}
				rec := &recorder{}
				c := &oauth.Client{HTTP: &http.Client{Transport: rec}}
				ep := oauth.Endpoint{TokenURL: o.Endpoints.Token, RevokeURL: o.Endpoints.Revoke, ClientID: "client-id", ClientSecret: "s3cret-value"}
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
				c.Revoke(t.Context(), ep, "access", "refresh")
				want := []string{o.Endpoints.Token}
				if o.Endpoints.Revoke != "" {
					want = append(want, o.Endpoints.Revoke, o.Endpoints.Revoke)
				}
				var got []string
				for _, r := range rec.reqs {
					if r.Method != http.MethodPost {
						t.Errorf("%s %s, want POST", r.Method, r.URL)
					}
					got = append(got, r.URL.String())
					inCeiling(r.URL.String())
				}
				if !slices.Equal(got, want) {
					t.Fatalf("requests = %v, want %v", got, want)
				}
			})
		}
	}
	if seen < 3 {
		t.Fatalf("the shipped registry has %d OAuth options, want GitHub's, Spotify's and a client-credentials one", seen)
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
