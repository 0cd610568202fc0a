package oauth_test

// The authorization server the tests run against: zitadel/oidc's OpenID
// Provider (github.com/zitadel/oidc/v3/pkg/op, OpenID Certified) with its
// example in-memory storage and login UI, served over TLS on loopback.
// A wrapping handler counts token-endpoint POSTs by grant type, records
// revocations in order, and injects faults.
//
// The scripted user drives the example's real login UI: it opens the
// authorize URL, reads the login form from the HTML (action and hidden
// inputs), fills in the example user's name and password and submits it.
// The example OP has no separate consent screen: signing in is consenting,
// and the OP then redirects to the client's redirect URI.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"golang.org/x/net/html"
)

const (
	nativeClient = "snug-native"              // public client, PKCE, loopback redirect
	webClient    = "snug-web"                 // confidential client, client_secret_basic
	webSecret    = "web-client-secret-7f3a9c" // its secret
	webOrigin    = "https://host.example"     // the web surface's origin
	serviceID    = "sid1"                     // the example storage's client-credentials client
	serviceKey   = "verysecret"               // its secret
	userName     = "test-user2"               // the example storage's user
	userPassword = "verysecure"
)

// authServer is a running OP.
type authServer struct {
	srv                               *httptest.Server
	authorizeURL, tokenURL, revokeURL string

	grants  atomic.Pointer[map[string]*atomic.Int64]
	mu      sync.Mutex
	revoked []string // token_type_hint of each revocation POST, in order
	fault   atomic.Pointer[http.HandlerFunc]
}

// newAuthServer starts an OP on 127.0.0.1 over TLS.
func newAuthServer(t *testing.T) *authServer {
	t.Helper()
	a := &authServer{}
	a.grants.Store(&map[string]*atomic.Int64{
		"authorization_code": {}, "refresh_token": {}, "client_credentials": {},
	})
	srv := httptest.NewUnstartedServer(nil)
	issuer := "https://" + srv.Listener.Addr().String()
	clients := map[string]*storage.Client{
		// A native client: no secret, PKCE, any loopback port (RFC 8252 §7.3).
		nativeClient: storage.NativeClient(nativeClient, "http://127.0.0.1/oauth/callback"),
		webClient:    storage.WebClient(webClient, webSecret, webOrigin+"/oauth/callback"),
	}
	st := storage.NewStorageWithClients(storage.NewUserStore(issuer), clients)
	router := exampleop.SetupServer(issuer, st, nil, false)
	srv.Config.Handler = a.wrap(router)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	a.srv = srv

	var disc struct {
		Authorization string `json:"authorization_endpoint"`
		Token         string `json:"token_endpoint"`
		Revocation    string `json:"revocation_endpoint"`
	}
	resp, err := srv.Client().Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&disc); err != nil {
		t.Fatal(err)
	}
	a.authorizeURL, a.tokenURL, a.revokeURL = disc.Authorization, disc.Token, disc.Revocation
	return a
}

// wrap counts and records token and revocation POSTs and serves faults.
func (a *authServer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && (r.URL.Path == "/oauth/token" || r.URL.Path == "/revoke") {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			form, _ := url.ParseQuery(string(b))
			if r.URL.Path == "/revoke" {
				a.mu.Lock()
				a.revoked = append(a.revoked, form.Get("token_type_hint"))
				a.mu.Unlock()
			} else if c, ok := (*a.grants.Load())[form.Get("grant_type")]; ok {
				c.Add(1)
			}
			if f := a.fault.Load(); f != nil {
				(*f)(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (a *authServer) count(grant string) int64 { return (*a.grants.Load())[grant].Load() }

func (a *authServer) setFault(f http.HandlerFunc) {
	if f == nil {
		a.fault.Store(nil)
		return
	}
	a.fault.Store(&f)
}

func (a *authServer) revocations() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.revoked...)
}

// userAgent is the scripted user's browser: it trusts the OP's test
// certificate and follows redirects, up to a redirect whose target
// stop says to stop at.
type userAgent struct {
	hc *http.Client
}

func (a *authServer) userAgent(stop func(*url.URL) bool) *userAgent {
	base := a.srv.Client()
	hc := &http.Client{Transport: base.Transport, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) > 10 {
			return errors.New("too many redirects")
		}
		if stop != nil && stop(r.URL) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return &userAgent{hc: hc}
}

// signIn opens authorizeURL, submits the login form with the user's name
// and password, and returns the last response (the redirect stop halted
// at, or the page the redirects ended on).
func (ua *userAgent) signIn(ctx context.Context, t *testing.T, authorizeURL string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authorizeURL, nil)
	resp, err := ua.hc.Do(req)
	if err != nil {
		t.Fatalf("open authorize URL: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authorize page: status %d: %s", resp.StatusCode, page)
	}
	action, fields := loginForm(t, page)
	fields.Set("username", userName)
	fields.Set("password", userPassword)
	target := resp.Request.URL.ResolveReference(&url.URL{Path: action})
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, target.String(), strings.NewReader(fields.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = ua.hc.Do(req)
	if err != nil {
		t.Fatalf("submit login form: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// loginForm reads the login page's form: its action and its hidden inputs.
func loginForm(t *testing.T, page []byte) (string, url.Values) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(page))
	var action string
	fields := url.Values{}
	for {
		switch z.Next() {
		case html.ErrorToken:
			if action == "" {
				t.Fatalf("no login form in the page: %s", page)
			}
			return action, fields
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			attr := func(k string) string {
				for _, a := range tok.Attr {
					if a.Key == k {
						return a.Val
					}
				}
				return ""
			}
			switch tok.Data {
			case "form":
				action = attr("action")
			case "input":
				if attr("type") == "hidden" {
					fields.Set(attr("name"), attr("value"))
				}
			}
		}
	}
}
