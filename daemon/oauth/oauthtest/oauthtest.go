// Package oauthtest runs a real authorization server for tests of the
// daemon and the API: zitadel/oidc's OpenID Provider (OpenID Certified)
// with its example in-memory storage and login UI, over TLS, with a
// certificate for the shipped registry entries' hosts (tests
// reach it through the pinned hosts mapped onto it by an injected
// resolver and dialer, never a registry switch).
//
// A wrapping handler maps each provider's documented token and revoke
// paths onto the OP's, counts token-endpoint POSTs by grant type, records
// revocations in order and injects faults. The scripted user drives the
// example's real login form. Test code only: nothing outside _test files
// imports it.
package oauthtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/net/html"
)

// The clients the OP knows.
const (
	// NativeClient is a public client (PKCE, loopback redirect on any port),
	// the shape of Spotify's PKCE app.
	NativeClient = "snug-native"
	// WebClient is a confidential client for the web surface.
	WebClient = "snug-web"
	WebSecret = "web-client-secret-7f3a9c"
	WebOrigin = "https://host.example"
	// ShortClient is a public client like NativeClient whose authorization
	// code grants an access token said to live ShortLifetime: inside the
	// refresh skew from its first second, so the next request refreshes it
	// (the tokens a refresh grants live the OP's five minutes). The
	// end-to-end test, which cannot move the real binary's clock, uses it.
	ShortClient   = "snug-native-short"
	ShortLifetime = 30 * time.Second
	// GitHubClient is the shape of a GitHub OAuth app: a confidential
	// client whose secret comes in the token request's form
	// (client_secret_post, as GitHub documents), PKCE, and the loopback
	// redirect on any port.
	GitHubClient = "snug-github"
	GitHubSecret = "github-client-secret-51c0e2"
	// ServiceID and ServiceKey are the example storage's client-credentials
	// client.
	ServiceID    = "sid1"
	ServiceKey   = "verysecret"
	userName     = "test-user2"
	userPassword = "verysecure"
)

// paths maps the providers' documented endpoint paths onto the OP's.
var paths = map[string]string{
	"/api/token":                "/oauth/token", // Spotify
	"/oauth2/token":             "/oauth/token", // Twitch
	"/oauth2/revoke":            "/revoke",      // Twitch
	"/login/oauth/access_token": "/oauth/token", // GitHub
	"/login/oauth/authorize":    "/auth",        // GitHub
	"/authorize":                "/auth",        // Spotify
	"/o/oauth2/v2/auth":         "/auth",        // Google
	"/token":                    "/oauth/token", // Google
	"/oauth/authorize":          "/auth",        // Strava
	"/oauth2/authorize":         "/auth",        // Dropbox
}

// The providers' hosts whose quirks the OP reproduces (quirks.go).
const (
	twitchIDHost  = "id.twitch.tv"
	githubHost    = "github.com"
	githubAPIHost = "api.github.com"
	googleAuth    = "accounts.google.com"
	googleToken   = "oauth2.googleapis.com"
	stravaHost    = "www.strava.com"
	dropboxWeb    = "www.dropbox.com"
	dropboxAPI    = "api.dropboxapi.com"
)

// offlineParam is, per authorize host, the parameter without which the
// provider issues no refresh token.
var offlineParam = map[string][2]string{
	googleAuth: {"access_type", "offline"},
	dropboxWeb: {"token_access_type", "offline"},
}

// Server is a running OP.
type Server struct {
	srv     *httptest.Server
	roots   *x509.CertPool
	handler http.Handler

	grants  map[string]*atomic.Int64
	mu      sync.Mutex
	revoked []string
	fault   atomic.Pointer[http.HandlerFunc]
	bearers []string // Authorization of each API request
	auths   []string // how each token POST authenticated its client

	// live are the access and refresh tokens the OP issued and no
	// revocation through a quirk handler has dropped, by the client they
	// were issued to (quirks.go).
	live     map[string]string
	expired  map[string]bool // live tokens a test made expired (Expire)
	requests []RevokeRequest
}

// New starts an OP on 127.0.0.1 over TLS whose certificate names hosts;
// its issuer is https://hosts[0].
func New(t testing.TB, hosts ...string) *Server {
	t.Helper()
	s := NewOP("https://" + hosts[0])
	cert, roots := certFor(t, hosts)
	s.roots = roots
	srv := httptest.NewUnstartedServer(s.handler)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s.srv = srv
	return s
}

// NewOP is the OP for issuer, not yet served: for a test that serves
// Handler itself, on its own listener with its own certificate (the
// end-to-end harness runs it in a network namespace of its own). Addr,
// Roots and Dial are New's only.
func NewOP(issuer string) *Server {
	s := &Server{grants: map[string]*atomic.Int64{
		"authorization_code": {}, "refresh_token": {}, "client_credentials": {},
	}, live: map[string]string{}, expired: map[string]bool{}}
	// The public clients may redirect to the loopback callback (any port,
	// RFC 8252 §7.3) and to the web origin's callback page, as one
	// Spotify app registered for both surfaces does.
	clients := map[string]*storage.Client{
		NativeClient: storage.NativeClient(NativeClient, "http://127.0.0.1/oauth/callback", WebOrigin+"/oauth/callback"),
		ShortClient:  storage.NativeClient(ShortClient, "http://127.0.0.1/oauth/callback", WebOrigin+"/oauth/callback"),
		GitHubClient: storage.NativeClient(GitHubClient, "http://127.0.0.1/oauth/callback"),
		WebClient:    storage.WebClient(WebClient, WebSecret, WebOrigin+"/oauth/callback"),
	}
	st := &shortLived{Storage: storage.NewStorageWithClients(storage.NewUserStore(issuer), clients)}
	s.handler = s.wrap(exampleop.SetupServer(issuer, st, nil, false))
	return s
}

// Handler serves the OP and the providers' APIs (every host api.*, except
// a provider's documented token path there, such as Dropbox's).
func (s *Server) Handler() http.Handler { return s.handler }

// shortLived is the example storage, except that ShortClient's
// authorization code grants an access token it says lives ShortLifetime
// (expires_in is the OP's statement, which is all a client goes by), and
// that GitHubClient authenticates with its secret in the form.
type shortLived struct{ *storage.Storage }

// postClient is a client that authenticates with client_secret_post.
type postClient struct{ op.Client }

func (postClient) AuthMethod() oidc.AuthMethod { return oidc.AuthMethodPost }

func (s *shortLived) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err == nil && id == GitHubClient {
		c = postClient{c}
	}
	return c, err
}

func (s *shortLived) AuthorizeClientIDSecret(ctx context.Context, id, secret string) error {
	if id == GitHubClient {
		if secret != GitHubSecret {
			return errors.New("invalid secret")
		}
		return nil
	}
	return s.Storage.AuthorizeClientIDSecret(ctx, id, secret)
}

func (s *shortLived) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	id, refresh, exp, err := s.Storage.CreateAccessAndRefreshTokens(ctx, req, current)
	if ar, ok := req.(*storage.AuthRequest); ok && err == nil && current == "" && ar.ApplicationID == ShortClient {
		exp = time.Now().Add(ShortLifetime)
	}
	return id, refresh, exp, err
}

// Addr is the OP's listener address, for an injected dialer.
func (s *Server) Addr() string { return s.srv.Listener.Addr().String() }

// Roots trusts the OP's certificate.
func (s *Server) Roots() *x509.CertPool { return s.roots }

// Count is how many token POSTs of grant type the OP received.
func (s *Server) Count(grant string) int64 { return s.grants[grant].Load() }

// Revocations are the token_type_hint of each revocation POST, in order.
func (s *Server) Revocations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.revoked...)
}

// Bearers are the Authorization headers the API hosts (api.*) received.
func (s *Server) Bearers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bearers...)
}

// TokenAuths says how each token POST authenticated its client, in
// order: "basic" (RFC 6749 §2.3.1's header), "post" (client_secret in the
// form), "basic+post" (both: a secret sent twice) or "none" (a public
// client).
func (s *Server) TokenAuths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

// SetFault makes every token and revocation POST answer f (nil: none).
func (s *Server) SetFault(f http.HandlerFunc) {
	if f == nil {
		s.fault.Store(nil)
		return
	}
	s.fault.Store(&f)
}

func (s *Server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.quirk(w, r, next) {
			return
		}
		if _, oauthPath := paths[r.URL.Path]; strings.HasPrefix(r.Host, "api.") && !oauthPath {
			// The provider's API: it records the bearer it was sent.
			s.mu.Lock()
			s.bearers = append(s.bearers, r.Header.Get("Authorization"))
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
			return
		}
		if p, ok := paths[r.URL.Path]; ok {
			r.URL.Path = p
		}
		if r.URL.Path == "/auth" {
			// Spotify and GitHub issue a refresh token without asking;
			// the OP only with offline_access, so the scripted provider
			// asks for it on the user's behalf. Google and Dropbox issue
			// one only when asked for offline access (quirks.go).
			q := r.URL.Query()
			if p, ok := offlineParam[hostOf(r)]; !ok || q.Get(p[0]) == p[1] {
				q.Set("scope", strings.TrimSpace(q.Get("scope")+" openid offline_access"))
			} else {
				q.Set("scope", strings.TrimSpace(q.Get("scope")+" openid"))
			}
			r.URL.RawQuery = q.Encode()
		}
		if r.Method == http.MethodPost && (r.URL.Path == "/oauth/token" || r.URL.Path == "/revoke") {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			form, _ := url.ParseQuery(string(b))
			if r.URL.Path == "/revoke" {
				s.mu.Lock()
				s.revoked = append(s.revoked, form.Get("token_type_hint"))
				s.mu.Unlock()
			} else if c, ok := s.grants[form.Get("grant_type")]; ok {
				c.Add(1)
				how := "none"
				switch _, _, basic := r.BasicAuth(); {
				case basic && form.Has("client_secret"):
					how = "basic+post"
				case basic:
					how = "basic"
				case form.Has("client_secret"):
					how = "post"
				}
				s.mu.Lock()
				s.auths = append(s.auths, how)
				s.mu.Unlock()
			}
			if f := s.fault.Load(); f != nil {
				(*f)(w, r)
				return
			}
			if r.URL.Path == "/oauth/token" {
				s.token(w, r, next)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Dial connects every address to the OP, for a browser the test scripts.
func (s *Server) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", s.Addr())
}

// SignIn is the scripted user: it opens authorizeURL (every host dialed to
// the OP), submits the login form and follows redirects until one leaves
// for a loopback or web-origin callback, which it returns unvisited.
func (s *Server) SignIn(ctx context.Context, t testing.TB, authorizeURL string) *url.URL {
	t.Helper()
	return Browser{Dial: s.Dial, Roots: s.roots}.SignIn(ctx, t, authorizeURL)
}

// A Browser is the scripted user's browser: Dial connects every host it
// opens (the OP's, mapped however the test maps them), and it trusts Roots.
type Browser struct {
	Dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	Roots *x509.CertPool
}

// SignIn opens authorizeURL, submits the OP's login form as its user and
// follows redirects until one leaves for a URL whose path is
// /oauth/callback (the loopback or the web origin's), which it returns
// unvisited.
func (b Browser) SignIn(ctx context.Context, t testing.TB, authorizeURL string) *url.URL {
	t.Helper()
	var callback *url.URL
	hc := &http.Client{
		Transport: &http.Transport{Proxy: nil, DialContext: b.Dial, TLSClientConfig: &tls.Config{RootCAs: b.Roots}},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) > 10 {
				return errors.New("too many redirects")
			}
			if r.URL.Path == "/oauth/callback" {
				callback = r.URL
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authorizeURL, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("open authorize URL: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if callback != nil {
		return callback
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authorize page: status %d: %s", resp.StatusCode, page)
	}
	action, fields := loginForm(t, page)
	fields.Set("username", userName)
	fields.Set("password", userPassword)
	target := resp.Request.URL.ResolveReference(&url.URL{Path: action})
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, target.String(), strings.NewReader(fields.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatalf("submit login form: %v", err)
	}
	resp.Body.Close()
	if callback == nil {
		t.Fatalf("the sign-in ended at %d without a redirect to the callback", resp.StatusCode)
	}
	return callback
}

func loginForm(t testing.TB, page []byte) (string, url.Values) {
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

// certFor makes a CA and a leaf for hosts.
func certFor(t testing.TB, hosts []string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "oauthtest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: hosts, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, roots
}

// ErrorPage is an HTML 500 page echoing the submitted form, the way some
// token endpoints' error pages do: a fault for SetFault.
func ErrorPage(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	auth := r.Header.Get("Authorization")
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(http.StatusInternalServerError)
	io.WriteString(w, "<html><body><h1>Internal error</h1><pre>"+string(b)+" "+auth+"</pre></body></html>")
}

// Unavailable answers 503: a fault for SetFault.
func Unavailable(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusServiceUnavailable)
}

// InvalidGrant answers RFC 6749 §5.2's invalid_grant: a fault for SetFault.
func InvalidGrant(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "grant revoked"})
}
