package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/oauth/oauthtest"
	"github.com/snug/snugd/transports"
)

// The OAuth routes against zitadel's OP (daemon/oauth/oauthtest), reached
// through the shipped Spotify entry's hosts: an injected resolver answers
// a documentation address and an injected dialer connects it to the OP
// (the shipped entries are used as they are, with no test switch).

type oauthResolver struct{}

func (oauthResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("203.0.113.41")}, nil
}

func newOAuthEnv(t *testing.T) (*env, *oauthtest.Server) {
	t.Helper()
	op := oauthtest.New(t, "accounts.spotify.com", "api.spotify.com")
	e := newEnvWith(t, func(c *daemon.Config) {
		c.Public = &transports.Public{Resolver: oauthResolver{}, Dial: func(ctx context.Context, n, a string) (net.Conn, error) {
			return op.Dial(ctx, n, a)
		}, RootCAs: op.Roots()}
	})
	decl, _ := json.Marshal(map[string]any{
		"slot": "music", "provider": map[string]any{"name": "Spotify"}, "kind": "oauth2_auth_code",
		"fields":           []any{map[string]any{"key": "client_id", "label": "Client ID", "type": "text"}},
		"endpoints":        map[string]any{"authorize": "https://accounts.spotify.com/authorize", "token": "https://accounts.spotify.com/api/token"},
		"declaredApiHosts": []any{"api.spotify.com"},
	})
	ctx := t.Context()
	if _, err := e.ctl.PutConnection(ctx, "app1", "music", decl); err != nil {
		t.Fatal(err)
	}
	e.seeded = append(e.seeded, "app1")
	if _, err := e.ctl.Approve(ctx, "app1", "music"); err != nil {
		t.Fatal(err)
	}
	if err := e.ctl.SetCredentials(ctx, "app1", "music", map[string]string{"client_id": oauthtest.NativeClient}); err != nil {
		t.Fatal(err)
	}
	return e, op
}

// The desktop flow through the API: start over the ctl socket, the
// scripted login at the authorize URL, the provider's redirect to the
// loopback GET /oauth/callback (a plain uncached page naming nothing),
// the flow connected, and a request through POST /v1/net carrying the
// OP's bearer. The same redirect again is refused; an Origin is refused.
//
// conformance: P3-C13-17, P3-C13-18
func TestOAuthDesktopFlowThroughTheAPI(t *testing.T) {
	e, op := newOAuthEnv(t)
	ctx := t.Context()
	st, err := e.ctl.OAuthStart(ctx, "app1", "music", false)
	if err != nil {
		t.Fatalf("OAuthStart: %v", err)
	}
	u, _ := url.Parse(st.AuthorizeURL)
	if want := "http://127.0.0.1:" + strconv.Itoa(e.port) + "/oauth/callback"; u.Query().Get("redirect_uri") != want || u.Query().Get("code_challenge_method") != "S256" {
		t.Fatalf("authorize URL = %s", st.AuthorizeURL)
	}
	if st.Flow.State != "pending" || st.FlowID == "" {
		t.Fatalf("flow = %+v", st.Flow)
	}
	cb := op.SignIn(ctx, t, st.AuthorizeURL)
	if cb.Host != "127.0.0.1:"+strconv.Itoa(e.port) {
		t.Fatalf("the provider redirected to %s", cb.Redacted())
	}
	// A page's fetch carries an Origin: refused before anything runs.
	resp, body := e.do(req{method: "GET", path: "/oauth/callback?" + cb.RawQuery, header: map[string]string{"Origin": webOrigin}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("callback with an Origin = %d %s", resp.StatusCode, body)
	}
	resp, body = e.do(req{method: "GET", path: "/oauth/callback?" + cb.RawQuery})
	code := cb.Query().Get("code")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.Contains(body, "Connected.") || strings.Contains(body, code) || strings.Contains(body, "spotify") {
		t.Fatalf("callback = %d %v %s", resp.StatusCode, resp.Header, body)
	}
	f, err := e.ctl.Flow(ctx, st.FlowID)
	if err != nil || f.State != "connected" {
		t.Fatalf("flow = %+v, %v", f, err)
	}
	resp, body = e.do(req{method: "GET", path: "/oauth/callback?" + cb.RawQuery})
	if resp.StatusCode != http.StatusBadRequest || strings.Contains(body, code) {
		t.Fatalf("replayed callback = %d %s", resp.StatusCode, body)
	}
	conns, err := e.ctl.Connections(ctx, "app1")
	if err != nil || len(conns) != 1 || conns[0].State == nil || conns[0].State.Status != "connected" || conns[0].State.ExpiresIn == nil {
		t.Fatalf("connections = %+v, %v", conns, err)
	}

	done := make(chan []byte, 1)
	go func() {
		b, _ := e.ctl.Net(context.WithoutCancel(ctx), NetRequest{AppID: "app1", Frame: netFrame("GET", "https://api.spotify.com/v1/me"), Delivery: "app"})
		done <- b
	}()
	allowConfirms(t, e, done)
	if b := op.Bearers(); len(b) != 1 || !strings.HasPrefix(b[0], "Bearer ") {
		t.Fatalf("the API saw %q", b)
	}
	if strings.Contains(e.logs.String(), strings.TrimPrefix(op.Bearers()[0], "Bearer ")) || strings.Contains(e.logs.String(), code) {
		t.Fatal("the log holds the token or the code")
	}
}

// allowConfirms allows confirms until the request answers.
func allowConfirms(t *testing.T, e *env, done <-chan []byte) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case b := <-done:
			if f := parseFrame(t, b); f.Error != nil || f.Status != 200 {
				t.Fatalf("net = %s", b)
			}
			return
		case <-deadline:
			t.Fatal("the request never answered")
		case <-time.After(20 * time.Millisecond):
			cs, _ := e.ctl.Confirms(t.Context())
			for _, c := range cs {
				e.ctl.DecideConfirm(t.Context(), c.ID, DecisionRequest{Decision: "allow"})
			}
		}
	}
}

// The web surface: a web host starts the flow (origin-callback posture,
// redirect to its origin), the scripted user signs in and the OP
// redirects to the host's https://<origin>/oauth/callback page, which the
// test plays: it hands the code and state it was given to POST
// /v1/oauth/callback. Another web host's handing of that genuine answer,
// and a tampered state, are refused and change nothing; the rightful
// host's is taken once, the flow ends connected and a request carries
// the OP's bearer. A code the OP does not know ends a flow failed with a
// fixed sentence after one exchange.
//
// conformance: P3-C13-17, P3-C13-18, P3-C13-19
func TestOAuthWebCallbackOnlyForItsHost(t *testing.T) {
	e, op := newOAuthEnv(t)
	ctx := t.Context()
	origin := oauthtest.WebOrigin // the origin the OP's public client may redirect to
	a := e.host(e.pair("web", origin), origin)
	other := "https://other.example"
	b := e.host(e.pair("web", other), other)
	st, err := a.OAuthStart(ctx, "app1", "music", false)
	if err != nil {
		t.Fatalf("OAuthStart: %v", err)
	}
	u, _ := url.Parse(st.AuthorizeURL)
	if got := u.Query().Get("redirect_uri"); got != origin+"/oauth/callback" || u.Query().Get("code_challenge_method") != "S256" {
		t.Fatalf("web authorize URL = %s", st.AuthorizeURL)
	}
	cb := op.SignIn(ctx, t, st.AuthorizeURL)
	if cb.Scheme+"://"+cb.Host != origin || cb.Path != "/oauth/callback" {
		t.Fatalf("the provider redirected to %s", cb.Redacted())
	}
	code, state := cb.Query().Get("code"), cb.Query().Get("state")
	tampered := state[:len(state)-3] + "AAA"
	if _, err := a.OAuthCallback(ctx, OAuthCallbackRequest{Code: code, State: tampered}); !isAPICode(err, errcode.BadRequest) {
		t.Fatalf("tampered state = %v", err)
	}
	if _, err := b.OAuthCallback(ctx, OAuthCallbackRequest{Code: code, State: state}); !isAPICode(err, errcode.BadRequest) || strings.Contains(err.Error(), code) {
		t.Fatalf("another host's callback = %v", err)
	}
	if _, err := e.ctl.OAuthCallback(ctx, OAuthCallbackRequest{Code: code, State: state}); err == nil {
		t.Fatal("the ctl channel's callback for a web flow was taken")
	}
	if n := op.Count("authorization_code"); n != 0 {
		t.Fatalf("a refused callback's code was exchanged (%d)", n)
	}
	if f, err := a.Flow(ctx, st.FlowID); err != nil || f.State != "pending" {
		t.Fatalf("flow after refusals = %+v, %v", f, err)
	}

	f, err := a.OAuthCallback(ctx, OAuthCallbackRequest{Code: code, State: state})
	if err != nil || f.State != "connected" || f.FlowID != st.FlowID {
		t.Fatalf("rightful callback = %+v, %v", f, err)
	}
	if g, err := a.Flow(ctx, st.FlowID); err != nil || g.State != "connected" {
		t.Fatalf("GET /v1/flows = %+v, %v", g, err)
	}
	if _, err := a.OAuthCallback(ctx, OAuthCallbackRequest{Code: code, State: state}); !isAPICode(err, errcode.BadRequest) {
		t.Fatalf("replayed web callback = %v", err)
	}
	if n := op.Count("authorization_code"); n != 1 {
		t.Fatalf("code exchanges = %d, want 1", n)
	}
	done := make(chan []byte, 1)
	go func() {
		b, _ := a.Net(context.WithoutCancel(ctx), NetRequest{AppID: "app1", Frame: netFrame("GET", "https://api.spotify.com/v1/me"), Delivery: "app"})
		done <- b
	}()
	allowConfirms(t, e, done)
	if bs := op.Bearers(); len(bs) != 1 || !strings.HasPrefix(bs[0], "Bearer ") || len(bs[0]) < len("Bearer ")+8 {
		t.Fatalf("the API saw %q", bs)
	}
	if strings.Contains(e.logs.String(), strings.TrimPrefix(op.Bearers()[0], "Bearer ")) || strings.Contains(e.logs.String(), code) {
		t.Fatal("the log holds the token or the code")
	}

	// Signed in: a new sign-in needs replace.
	if _, err := a.OAuthStart(ctx, "app1", "music", false); !isAPICode(err, errcode.AlreadyConnected) {
		t.Fatalf("a new sign-in without replace = %v, want ALREADY_CONNECTED", err)
	}
	// The rightful host hands over a code the OP does not know: the
	// exchange is tried once and the flow fails with a fixed sentence.
	st, err = a.OAuthStart(ctx, "app1", "music", true)
	if err != nil {
		t.Fatal(err)
	}
	u, _ = url.Parse(st.AuthorizeURL)
	f, err = a.OAuthCallback(ctx, OAuthCallbackRequest{Code: "not-a-real-code", State: u.Query().Get("state")})
	if err != nil || f.State != "failed" || strings.Contains(f.Message, "not-a-real-code") {
		t.Fatalf("callback with an unknown code = %+v, %v", f, err)
	}
	if n := op.Count("authorization_code"); n != 2 {
		t.Fatalf("code exchanges = %d, want 2", n)
	}
	// The failed replacement left the old tokens serving.
	go func() {
		b, _ := a.Net(context.WithoutCancel(ctx), NetRequest{AppID: "app1", Frame: netFrame("GET", "https://api.spotify.com/v1/me"), Delivery: "app"})
		done <- b
	}()
	allowConfirms(t, e, done)
	if bs := op.Bearers(); len(bs) != 2 || bs[1] != bs[0] {
		t.Fatalf("after a failed new sign-in the API saw %d bearers, the same: %v; want the old token again", len(bs), len(bs) == 2 && bs[1] == bs[0])
	}
}

func isAPICode(err error, c errcode.Code) bool {
	var ae *Error
	if e, ok := err.(*Error); ok {
		ae = e
	}
	return ae != nil && ae.Code == c
}
