package daemon

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/oauth"
	"github.com/snug/snugd/daemon/oauth/oauthtest"
	"github.com/snug/snugd/daemon/pairing"
	"github.com/snug/snugd/transports"
)

// The OAuth kinds end to end inside the daemon, against zitadel's OP
// (daemon/oauth/oauthtest) reached through the shipped registry entries'
// hosts: an injected resolver answers a documentation address for every
// name and an injected dialer connects it to the OP (never a
// registry switch).

// oauthHosts are the shipped entries' hosts the OP's certificate names.
var oauthHosts = []string{"accounts.spotify.com", "api.spotify.com", "id.twitch.tv", "api.twitch.tv", "github.com", "api.github.com", "auth.example.net", "api.example.net"}

// oauthRig is a daemon wired to the OP, with a clock the test moves.
type oauthRig struct {
	*rig
	op    *oauthtest.Server
	clock *oauthClock
	dials atomic.Int64
}

type oauthClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *oauthClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *oauthClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fixedResolver answers one documentation address for every name.
type fixedResolver struct{ asked atomic.Int64 }

func (r *fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	r.asked.Add(1)
	return []netip.Addr{netip.MustParseAddr("203.0.113.40")}, nil
}

func newOAuthRig(t *testing.T) *oauthRig {
	t.Helper()
	op := oauthtest.New(t, oauthHosts...)
	o := &oauthRig{op: op, clock: &oauthClock{t: time.Now().Truncate(time.Second)}}
	o.rig = newRig(t, func(c *Config) {
		c.Now = o.clock.now
		c.Public = &transports.Public{
			Resolver: &fixedResolver{},
			Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				o.dials.Add(1)
				return op.Dial(ctx, network, addr)
			},
			RootCAs: op.Roots(),
		}
	})
	o.autoDecide(t, true, fetch.RememberSession)
	return o
}

func spotifyDecl(slot string) map[string]any {
	return map[string]any{
		"slot": slot, "provider": map[string]any{"name": "Spotify"}, "kind": "oauth2_auth_code",
		"fields":           []any{map[string]any{"key": "client_id", "label": "Client ID", "type": "text"}},
		"endpoints":        map[string]any{"authorize": "https://accounts.spotify.com/authorize", "token": "https://accounts.spotify.com/api/token"},
		"declaredApiHosts": []any{"api.spotify.com"},
	}
}

func twitchDecl(slot string) map[string]any {
	return map[string]any{
		"slot": slot, "provider": map[string]any{"name": "Twitch"}, "kind": "oauth2_client_creds",
		"fields": []any{
			map[string]any{"key": "client_id", "label": "Client ID", "type": "text"},
			map[string]any{"key": "client_secret", "label": "Client secret", "type": "secret"},
		},
		"endpoints":        map[string]any{"token": "https://id.twitch.tv/oauth2/token", "revoke": "https://id.twitch.tv/oauth2/revoke"},
		"declaredApiHosts": []any{"api.twitch.tv"},
	}
}

// approveOAuth proposes decl as the user (the registry borrows the shipped
// entry), approves it and stores values.
func (o *oauthRig) approveOAuth(t *testing.T, app string, decl map[string]any, values map[string]string) {
	t.Helper()
	if c := o.approveRow(t, app, decl, values); !c.Borrowed {
		t.Fatalf("the row is not the shipped entry's: %+v", c.Requirement)
	}
}

// approveRow proposes decl as the user, approves it and stores values
// (when not nil); the row need not be a shipped entry's.
func (o *oauthRig) approveRow(t *testing.T, app string, decl map[string]any, values map[string]string) grants.Connection {
	t.Helper()
	ctx := t.Context()
	slot := decl["slot"].(string)
	if _, err := o.d.proposers.ProposeUser(ctx, app, slot, mustJSON(t, decl)); err != nil {
		t.Fatalf("ProposeUser: %v", err)
	}
	c, err := o.d.grants.Approve(ctx, app, slot)
	if err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if values != nil {
		if err := o.d.grants.SetCredentials(ctx, app, slot, values); err != nil {
			t.Fatalf("SetCredentials: %v", err)
		}
	}
	return c
}

// startSpotify approves app's Spotify row music with the OP's native
// client and starts its desktop flow.
func (o *oauthRig) startSpotify(t *testing.T, app string) pairing.OAuthStart {
	t.Helper()
	o.approveOAuth(t, app, spotifyDecl("music"), map[string]string{"client_id": oauthtest.NativeClient})
	st, err := o.d.pairing.StartOAuth(t.Context(), app, "music", 4747, false)
	if err != nil {
		t.Fatalf("StartOAuth: %v", err)
	}
	return st
}

// connectSpotify runs the whole desktop flow and returns the ended flow.
func (o *oauthRig) connectSpotify(t *testing.T, app string) pairing.Flow {
	t.Helper()
	st := o.startSpotify(t, app)
	cb := o.op.SignIn(t.Context(), t, st.AuthorizeURL)
	f, err := o.d.pairing.OAuthLoopbackCallback(t.Context(), cb.RawQuery)
	if err != nil || f.State != pairing.FlowConnected {
		t.Fatalf("callback = %+v, %v", f, err)
	}
	return f
}

func (o *oauthRig) secret(t *testing.T, key string) string {
	t.Helper()
	var v store.Secret
	err := o.d.store.View(t.Context(), func(tx *store.Tx) error {
		var err error
		v, err = tx.Secret(key)
		return err
	})
	if err != nil {
		return ""
	}
	return string(v)
}

func (o *oauthRig) state(t *testing.T, app, slot string) grants.ConnState {
	t.Helper()
	s, _, err := o.d.grants.ConnectionState(t.Context(), app, slot)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The full code + PKCE flow on the desktop surface: the authorize URL
// carries S256, the flow's half is sealed in auth:_flow:<id> with its
// slot, the state key is one 32-byte auth:_state_hmac, the callback
// stores tokens and _connection in one write, and a request carries the
// OP's bearer. The same answer again is refused (single use).
//
// conformance: P3-C13-03, P3-C13-04, P3-C13-17, P3-C13-18
func TestOAuthCodeFlowThroughTheExecutor(t *testing.T) {
	o := newOAuthRig(t)
	ctx := t.Context()
	st := o.startSpotify(t, "app1")
	u, _ := url.Parse(st.AuthorizeURL)
	q := u.Query()
	if u.Host != "accounts.spotify.com" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("redirect_uri") != "http://127.0.0.1:4747/oauth/callback" || q.Get("client_id") != oauthtest.NativeClient {
		t.Fatalf("authorize URL = %s", st.AuthorizeURL)
	}
	if st.Flow.Kind != pairing.FlowOAuth || st.Flow.State != pairing.FlowPending {
		t.Fatalf("flow = %+v", st.Flow)
	}
	var rec oauth.Flow
	if err := rec.UnmarshalBinary([]byte(o.secret(t, pairing.FlowKeyPrefix+st.Flow.ID))); err != nil || rec.Slot != "music" || rec.AppID != "app1" || rec.Verifier == "" {
		t.Fatalf("sealed flow = %v, %v", rec, err)
	}
	key := o.secret(t, store.StateHMACKey)
	if len(key) != oauth.StateKeySize {
		t.Fatalf("auth:_state_hmac is %d bytes", len(key))
	}

	cb := o.op.SignIn(ctx, t, st.AuthorizeURL)
	f, err := o.d.pairing.OAuthLoopbackCallback(ctx, cb.RawQuery)
	if err != nil || f.State != pairing.FlowConnected {
		t.Fatalf("callback = %+v, %v", f, err)
	}
	if _, err := o.d.pairing.OAuthLoopbackCallback(ctx, cb.RawQuery); err == nil {
		t.Fatal("the same sign-in answer was accepted twice")
	}
	s := o.state(t, "app1", "music")
	if s.Status != grants.ConnConnected || s.ObtainedAt == nil || s.ExpiresIn == nil || *s.ExpiresIn <= 0 || s.LastError != "" {
		t.Fatalf("state = %+v", s)
	}
	access := o.secret(t, store.FieldKey("app1", "music", grants.AccessTokenField))
	if access == "" || o.secret(t, store.FieldKey("app1", "music", grants.RefreshTokenField)) == "" {
		t.Fatal("tokens not stored")
	}
	// A second app shares the one state key (app-agnostic).
	o.approveOAuth(t, "app2", spotifyDecl("music"), map[string]string{"client_id": oauthtest.NativeClient})
	if _, err := o.d.pairing.StartOAuth(ctx, "app2", "music", 4747, false); err != nil || o.secret(t, store.StateHMACKey) != key {
		t.Fatalf("second app's flow: %v, key changed: %t", err, o.secret(t, store.StateHMACKey) != key)
	}

	res, _ := o.net(t, "app1", frame("GET", "https://api.spotify.com/v1/me", nil))
	if res.Code != "" || res.Status != http.StatusOK {
		t.Fatalf("net = %+v", res)
	}
	if b := o.op.Bearers(); len(b) != 1 || b[0] != "Bearer "+access {
		t.Fatalf("the API saw %q", b)
	}
	if n := o.op.Count("refresh_token"); n != 0 {
		t.Fatalf("a fresh token was refreshed (%d POSTs)", n)
	}
}

// A tampered state is refused and leaves the flow for its rightful
// answer; an answer after ten minutes ends the flow expired; a desktop
// flow's answer is not taken on the web route without a host.
//
// conformance: P3-C13-18, P3-C13-19
func TestOAuthCallbackRefusals(t *testing.T) {
	o := newOAuthRig(t)
	ctx := t.Context()
	st := o.startSpotify(t, "app1")
	cb := o.op.SignIn(ctx, t, st.AuthorizeURL)
	q := cb.Query()
	state := q.Get("state")
	tampered := state[:len(state)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(state, "AA")]
	q.Set("state", tampered)
	if _, err := o.d.pairing.OAuthLoopbackCallback(ctx, q.Encode()); !isCode(err, errcode.BadRequest) {
		t.Fatalf("tampered state = %v", err)
	}
	if _, err := o.d.pairing.OAuthWebCallback(ctx, cb.Query().Get("code"), state, ""); err == nil {
		t.Fatal("a desktop flow's answer was taken on the web route")
	}
	if f, _ := o.d.pairing.Flow(ctx, st.Flow.ID); f.State != pairing.FlowPending {
		t.Fatalf("a refused answer changed the flow: %+v", f)
	}
	o.clock.advance(oauth.FlowLifetime + time.Second)
	if _, err := o.d.pairing.OAuthLoopbackCallback(ctx, cb.RawQuery); err == nil {
		t.Fatal("an expired flow's answer was accepted")
	}
	if n := o.op.Count("authorization_code"); n != 0 {
		t.Fatalf("a refused answer's code was exchanged (%d)", n)
	}
	if s := o.state(t, "app1", "music"); s.Status != grants.ConnPending || s.LastError != grants.OauthNotConnectedText {
		t.Fatalf("state = %+v", s)
	}
	// A provider's error answer ends the flow denied, with a fixed sentence.
	st, _ = o.d.pairing.StartOAuth(ctx, "app1", "music", 4747, false)
	u, _ := url.Parse(st.AuthorizeURL)
	f, err := o.d.pairing.OAuthLoopbackCallback(ctx, url.Values{"error": {"access_denied"}, "error_description": {"<b>nope</b>"}, "state": {u.Query().Get("state")}}.Encode())
	if err != nil || f.State != pairing.FlowDenied || strings.Contains(f.Message, "nope") {
		t.Fatalf("denied = %+v, %v", f, err)
	}
}

// Client credentials at first use, then from the store; a refresh within
// the skew under 32 concurrent requests makes exactly one refresh POST
// (the OP counts), and a rotated refresh token replaces the old one,
// which the OP then refuses (reuse detection).
//
// conformance: P3-C13-23
func TestOAuthRefreshSingleFlight(t *testing.T) {
	o := newOAuthRig(t)
	o.connectSpotify(t, "app1")
	old := o.secret(t, store.FieldKey("app1", "music", grants.RefreshTokenField))
	s := o.state(t, "app1", "music")
	// 61 s before expiry: nothing to do; 59 s: refresh first.
	o.clock.advance(time.Duration(*s.ExpiresIn)*time.Second - 61*time.Second)
	if res, _ := o.net(t, "app1", frame("GET", "https://api.spotify.com/v1/me", nil)); res.Status != 200 || o.op.Count("refresh_token") != 0 {
		t.Fatalf("61 s before expiry: %+v, refreshes %d", res, o.op.Count("refresh_token"))
	}
	o.clock.advance(2 * time.Second)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range 32 {
		wg.Go(func() {
			res, _ := o.net(t, "app1", frame("GET", "https://api.spotify.com/v1/me", map[string]any{"requestId": "r" + string(rune('a'+i))}))
			if res.Status != http.StatusOK {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := o.op.Count("refresh_token"); n != 1 || failed.Load() != 0 {
		t.Fatalf("32 concurrent requests made %d refresh POSTs, %d failed", n, failed.Load())
	}
	rotated := o.secret(t, store.FieldKey("app1", "music", grants.RefreshTokenField))
	if rotated == "" || rotated == old {
		t.Fatal("the rotated refresh token was not stored")
	}
	// Reuse detection: the OP refuses the old refresh token.
	c := o.d.pairing.OauthClient([]string{"accounts.spotify.com"})
	_, err := c.Refresh(t.Context(), oauth.Endpoint{TokenURL: "https://accounts.spotify.com/api/token", ClientID: oauthtest.NativeClient}, old, nil)
	if oe, ok := err.(*oauth.Error); !ok || oe.Class != oauth.Expired {
		t.Fatalf("the old refresh token after rotation = %v", err)
	}
}

// Client credentials: fetched at first use, reused after. Revoking the
// row POSTs the revocation to the server and wipes the slice; the example
// OP does not let a client-credentials (service) client revoke, so its
// refusal is reported, and the wipe happens anyway.
//
// conformance: P3-C13-22
func TestOAuthClientCredentials(t *testing.T) {
	o := newOAuthRig(t)
	o.approveOAuth(t, "app1", twitchDecl("games"), map[string]string{"client_id": oauthtest.ServiceID, "client_secret": oauthtest.ServiceKey})
	for range 2 {
		if res, _ := o.net(t, "app1", frame("GET", "https://api.twitch.tv/helix/games/top?first=1", nil)); res.Status != 200 {
			t.Fatalf("net = %+v", res)
		}
	}
	if n := o.op.Count("client_credentials"); n != 1 {
		t.Fatalf("client_credentials POSTs = %d, want 1", n)
	}
	if b := o.op.Bearers(); len(b) != 2 || !strings.HasPrefix(b[0], "Bearer ") || b[0] != b[1] {
		t.Fatalf("bearers = %q", b)
	}
	// Twitch's revocation takes client_id and token only, and answers
	// 200: revoked at the provider.
	_, rep, err := o.d.grants.RevokeReported(t.Context(), "app1", "games")
	if err != nil || rep.Remote.Outcome != "revoked" {
		t.Fatalf("revoke = %+v, %v", rep, err)
	}
	if r := o.op.RevokeRequests(); len(r) != 1 || !slices.Equal(r[0].Fields, []string{"client_id", "token"}) || r[0].Authorization != "none" {
		t.Fatalf("revocation requests = %+v, want one with client_id and token only", r)
	}
	if o.secret(t, store.FieldKey("app1", "games", grants.AccessTokenField)) != "" {
		t.Fatal("a refused remote revocation blocked the wipe")
	}
}

// Revocation of an authorization-code connection whose requirement has a
// revoke endpoint: refresh token first, then access token (RFC 7009),
// then the wipe; with the server down the failure is reported and the
// slice is wiped all the same.
//
// conformance: P3-C13-22
func TestOAuthRevocation(t *testing.T) {
	o := newOAuthRig(t)
	ctx := t.Context()
	o.connectSpotify(t, "app1")
	// A user row of a provider of its own, with a revoke endpoint; its
	// tokens are the OP's, copied from the Spotify sign-in.
	decl := map[string]any{
		"slot": "own", "provider": map[string]any{"name": "Example OAuth"}, "kind": "oauth2_auth_code",
		"fields": []any{map[string]any{"key": "client_id", "label": "Client ID", "type": "text"}},
		"endpoints": map[string]any{"authorize": "https://auth.example.net/authorize", "token": "https://auth.example.net/oauth/token",
			"revoke": "https://auth.example.net/revoke"},
		"registration":     map[string]any{"consoleUrl": "https://auth.example.net/apps", "instructions": []any{"Register an app."}},
		"declaredApiHosts": []any{"api.example.net"},
	}
	for _, app := range []string{"app2", "app3"} {
		o.approveRow(t, app, decl, map[string]string{"client_id": oauthtest.NativeClient})
		err := o.d.store.Update(ctx, func(tx *store.Tx) error {
			for _, f := range []string{grants.AccessTokenField, grants.RefreshTokenField} {
				v, err := tx.Secret(store.FieldKey("app1", "music", f))
				if err != nil {
					return err
				}
				if err := tx.PutSecret(store.FieldKey(app, "own", f), v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, rep, err := o.d.grants.RevokeReported(ctx, "app2", "own")
	if err != nil || rep.Remote.Outcome != "revoked" {
		t.Fatalf("revoke = %+v, %v\n%s", rep, err, o.logs.String())
	}
	if r := o.op.Revocations(); len(r) != 2 || r[0] != "refresh_token" || r[1] != "access_token" {
		t.Fatalf("revocations = %q", r)
	}
	if o.secret(t, store.FieldKey("app2", "own", grants.RefreshTokenField)) != "" {
		t.Fatal("the refresh token survived the revocation")
	}
	o.op.SetFault(oauthtest.Unavailable)
	_, rep, err = o.d.grants.RevokeReported(ctx, "app3", "own")
	if err != nil || rep.Remote.Outcome != "failed" || rep.Remote.Confirmed() {
		t.Fatalf("revoke with the server down = %+v, %v", rep, err)
	}
	if o.secret(t, store.FieldKey("app3", "own", grants.RefreshTokenField)) != "" {
		t.Fatal("a failed remote revocation blocked the wipe")
	}
}

// Faults at the refresh: a 503 keeps the refresh token and the status; an
// HTML 500 echoing the submitted secrets leaves none of them in any
// answer or log; invalid_grant marks the connection expired.
//
// conformance: P3-C13-24
func TestOAuthRefreshFaults(t *testing.T) {
	o := newOAuthRig(t)
	o.connectSpotify(t, "app1")
	refresh := o.secret(t, store.FieldKey("app1", "music", grants.RefreshTokenField))
	s := o.state(t, "app1", "music")
	o.clock.advance(time.Duration(*s.ExpiresIn) * time.Second)
	get := func() fetch.NetResult {
		res, _ := o.net(t, "app1", frame("GET", "https://api.spotify.com/v1/me", nil))
		return res
	}

	o.op.SetFault(oauthtest.Unavailable)
	if res := get(); res.Code != errcode.NetAuthFailed {
		t.Fatalf("503 refresh = %+v", res)
	}
	if o.secret(t, store.FieldKey("app1", "music", grants.RefreshTokenField)) != refresh || o.state(t, "app1", "music").Status != grants.ConnConnected {
		t.Fatal("a transient failure discarded the refresh token or changed the status")
	}

	o.op.SetFault(oauthtest.ErrorPage)
	res := get()
	if res.Code != errcode.NetAuthFailed || strings.Contains(string(res.Frame), refresh) || strings.Contains(res.ProviderError, refresh) {
		t.Fatalf("500 refresh = %+v", res)
	}
	if strings.Contains(o.logs.String(), refresh) {
		t.Fatalf("the log carries the refresh token:\n%s", o.logs.String())
	}

	o.op.SetFault(oauthtest.InvalidGrant)
	if res := get(); res.Code != errcode.NetAuthFailed {
		t.Fatalf("invalid_grant = %+v", res)
	}
	if s := o.state(t, "app1", "music"); s.Status != grants.ConnExpired || s.LastError != pairing.OauthExpiredMessage {
		t.Fatalf("after invalid_grant state = %+v", s)
	}
	// Expired: nothing more is posted until a new sign-in.
	n := o.op.Count("refresh_token")
	if res := get(); res.Code != errcode.NetAuthFailed || o.op.Count("refresh_token") != n {
		t.Fatalf("after expiry: %+v, refresh POSTs %d → %d", res, n, o.op.Count("refresh_token"))
	}
}

// A token, refresh or revoke endpoint outside the row's frozen ceiling
// is refused before anything is resolved or dialed.
//
// conformance: P3-C13-20, P3-C13-21, P3-C13-22
func TestOAuthEndpointOutsideCeilingNeverDials(t *testing.T) {
	o := newOAuthRig(t)
	before := o.dials.Load()
	c := o.d.pairing.OauthClient([]string{"accounts.spotify.com", "api.spotify.com"})
	ep := oauth.Endpoint{TokenURL: "https://id.twitch.tv/oauth2/token", RevokeURL: "https://id.twitch.tv/oauth2/revoke", ClientID: "c", ClientSecret: "s"}
	if _, err := c.ClientCredentials(t.Context(), ep, nil); err == nil {
		t.Fatal("a token POST outside the ceiling went through")
	}
	if _, err := c.Refresh(t.Context(), ep, "rt", nil); err == nil {
		t.Fatal("a refresh POST outside the ceiling went through")
	}
	if errs := c.Revoke(t.Context(), ep, "at", "rt"); len(errs) != 2 {
		t.Fatalf("revoke POSTs outside the ceiling: %v", errs)
	}
	if n := o.dials.Load() - before; n != 0 {
		t.Fatalf("%d connections were dialed for endpoints outside the ceiling", n)
	}
	if n := o.op.Count("client_credentials") + o.op.Count("refresh_token"); n != 0 {
		t.Fatalf("the OP received %d token POSTs", n)
	}
}

// A token endpoint whose HTML 500 page echoes the submitted form and the
// Basic header: the client secret is in no answer and no log line, and
// the request ends NET_AUTH_FAILED; a refusal that is not transient marks
// the connection error with a fixed sentence.
//
// conformance: P3-C13-24
func TestOAuthErrorPageEchoingTheClientSecret(t *testing.T) {
	o := newOAuthRig(t)
	o.approveOAuth(t, "app1", twitchDecl("games"), map[string]string{"client_id": oauthtest.ServiceID, "client_secret": oauthtest.ServiceKey})
	o.op.SetFault(oauthtest.ErrorPage)
	res, _ := o.net(t, "app1", frame("GET", "https://api.twitch.tv/helix/games/top?first=1", nil))
	if res.Code != errcode.NetAuthFailed || strings.Contains(string(res.Frame), oauthtest.ServiceKey) || strings.Contains(res.ProviderError, oauthtest.ServiceKey) {
		t.Fatalf("net = %+v", res)
	}
	if !strings.Contains(o.logs.String(), "oauth token request failed") || strings.Contains(o.logs.String(), oauthtest.ServiceKey) {
		t.Fatalf("log:\n%s", o.logs.String())
	}
	o.op.SetFault(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"invalid_client","error_description":"bad secret `+oauthtest.ServiceKey+`"}`)
	})
	o.net(t, "app1", frame("GET", "https://api.twitch.tv/helix/games/top?first=1", nil))
	if s := o.state(t, "app1", "games"); s.Status != grants.ConnError || s.LastError != pairing.OauthFailedMessage {
		t.Fatalf("state after invalid_client = %+v", s)
	}
	if strings.Contains(o.logs.String(), oauthtest.ServiceKey) {
		t.Fatal("the log carries the client secret")
	}
}

// A client-credentials token is fetched again once it is within the
// 60-second skew of its expiry, before the request is sent: 61 s before,
// the stored one is sent; 59 s before, one new client-credentials POST.
//
// conformance: P3-C13-23
func TestOAuthClientCredentialsRefetchedWithinTheSkew(t *testing.T) {
	o := newOAuthRig(t)
	o.approveOAuth(t, "app1", twitchDecl("games"), map[string]string{"client_id": oauthtest.ServiceID, "client_secret": oauthtest.ServiceKey})
	get := func() {
		t.Helper()
		if res, _ := o.net(t, "app1", frame("GET", "https://api.twitch.tv/helix/games/top?first=1", nil)); res.Status != 200 {
			t.Fatalf("net = %+v", res)
		}
	}
	get()
	s := o.state(t, "app1", "games")
	if s.Status != grants.ConnConnected || s.ExpiresIn == nil || *s.ExpiresIn <= 61 {
		t.Fatalf("state after the first fetch = %+v", s)
	}
	o.clock.advance(time.Duration(*s.ExpiresIn)*time.Second - 61*time.Second)
	get()
	if n := o.op.Count("client_credentials"); n != 1 {
		t.Fatalf("61 s before expiry: %d client-credentials POSTs, want 1", n)
	}
	o.clock.advance(2 * time.Second)
	get()
	if n := o.op.Count("client_credentials"); n != 2 {
		t.Fatalf("59 s before expiry: %d client-credentials POSTs, want 2", n)
	}
	if b := o.op.Bearers(); len(b) != 3 || b[0] != b[1] || b[2] == b[1] {
		t.Fatalf("bearers = %q; want the first token twice, then the new one", b)
	}
}

// One live flow per (app, slot): a second start ends the first failed
// ("a newer flow replaced this one"), deletes its sealed half, and the
// first flow's genuine answer is refused without an exchange.
//
// conformance: P3-C13-03
func TestOAuthOneLiveFlowPerSlot(t *testing.T) {
	o := newOAuthRig(t)
	ctx := t.Context()
	first := o.startSpotify(t, "app1")
	cb := o.op.SignIn(ctx, t, first.AuthorizeURL)
	second, err := o.d.pairing.StartOAuth(ctx, "app1", "music", 4747, false)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := o.d.pairing.Flow(ctx, first.Flow.ID); f.State != pairing.FlowFailed || !strings.Contains(f.Message, "newer") {
		t.Fatalf("the first flow after a second start = %+v", f)
	}
	if o.secret(t, pairing.FlowKeyPrefix+first.Flow.ID) != "" {
		t.Fatal("the replaced flow's sealed half (its verifier) was kept")
	}
	if _, err := o.d.pairing.OAuthLoopbackCallback(ctx, cb.RawQuery); err == nil {
		t.Fatal("the replaced flow's answer was taken")
	}
	if n := o.op.Count("authorization_code"); n != 0 {
		t.Fatalf("the replaced flow's code was exchanged (%d)", n)
	}
	cb = o.op.SignIn(ctx, t, second.AuthorizeURL)
	if f, err := o.d.pairing.OAuthLoopbackCallback(ctx, cb.RawQuery); err != nil || f.State != pairing.FlowConnected {
		t.Fatalf("the second flow's answer = %+v, %v", f, err)
	}
}

// Granted scopes wider than the requested ones are disclosed: the flow's
// message says so, _connection's scopesGranted lists what was granted,
// and the log names the extra scopes (names, never a token). The OP
// grants openid and offline_access beside the pinned Spotify scopes.
func TestOAuthWiderScopesDisclosed(t *testing.T) {
	o := newOAuthRig(t)
	f := o.connectSpotify(t, "app1")
	s := o.state(t, "app1", "music")
	if !slices.Contains(s.ScopesGranted, "offline_access") {
		t.Fatalf("scopesGranted = %q, want the OP's grant", s.ScopesGranted)
	}
	if f.Message != pairing.MsgOAuthWider {
		t.Fatalf("flow message = %q, want the wider-grant sentence", f.Message)
	}
	if l := o.logs.String(); !strings.Contains(l, "granted scopes beyond those requested") || !strings.Contains(l, "offline_access") {
		t.Fatalf("the log does not name the wider grant:\n%s", l)
	}
}

// A sign-in without the client ID stored is refused with a sentence that
// names the command that stores it.
func TestOAuthStartWithoutClientID(t *testing.T) {
	o := newOAuthRig(t)
	if _, err := o.d.proposers.ProposeUser(t.Context(), "app1", "music", mustJSON(t, spotifyDecl("music"))); err != nil {
		t.Fatal(err)
	}
	if _, err := o.d.grants.Approve(t.Context(), "app1", "music"); err != nil {
		t.Fatal(err)
	}
	_, err := o.d.pairing.StartOAuth(t.Context(), "app1", "music", 4747, false)
	if !isCode(err, errcode.BadRequest) || !strings.Contains(err.Error(), "snugd ctl credentials set") {
		t.Fatalf("StartOAuth without a client ID = %v", err)
	}
}

// The callback announces how the flow ended: a flow-updated hint for the
// flow (GET /v1/flows/{id} then says connected) and connection-changed
// for the slot, references only.
func TestOAuthCallbackAnnounces(t *testing.T) {
	o := newOAuthRig(t)
	ctx := t.Context()
	st := o.startSpotify(t, "app1")
	cb := o.op.SignIn(ctx, t, st.AuthorizeURL)
	hs := o.d.Hints(ctx)
	if f, err := o.d.pairing.OAuthLoopbackCallback(ctx, cb.RawQuery); err != nil || f.State != pairing.FlowConnected {
		t.Fatalf("callback = %+v, %v", f, err)
	}
	var flowUpdated, connChanged bool
	timeout := time.After(10 * time.Second)
	for !flowUpdated || !connChanged {
		select {
		case h := <-hs:
			switch {
			case h.Type == hints.FlowUpdated && h.ID == st.Flow.ID:
				flowUpdated = true
			case h.Type == hints.ConnectionChanged && h.AppID == "app1" && h.Slot == "music":
				connChanged = true
			}
		case <-timeout:
			t.Fatalf("hints after the callback: flow-updated %v, connection-changed %v", flowUpdated, connChanged)
		}
	}
	if f, err := o.d.pairing.Flow(ctx, st.Flow.ID); err != nil || f.State != pairing.FlowConnected {
		t.Fatalf("Flow = %+v, %v", f, err)
	}
}

// GitHub's OAuth-app option through the whole flow: a row declaring
// client_id and client_secret resolves to the shipped oauth-app option
// (pinned scopes, PKCE), the authorize URL is github.com's with the
// pinned scopes and S256, the code exchange authenticates with the
// secret in the form only (client_secret_post, as GitHub documents; never
// a second copy in a Basic header), and a request to api.github.com
// carries the OP's bearer.
//
// conformance: P3-C13-17
func TestOAuthGitHubAppFlow(t *testing.T) {
	o := newOAuthRig(t)
	ctx := t.Context()
	decl := map[string]any{
		"slot": "gh", "provider": map[string]any{"name": "GitHub"}, "kind": "oauth2_auth_code",
		"fields": []any{
			map[string]any{"key": "client_id", "label": "Client ID", "type": "text"},
			map[string]any{"key": "client_secret", "label": "Client secret", "type": "secret"},
		},
		"endpoints":        map[string]any{"authorize": "https://github.com/login/oauth/authorize", "token": "https://github.com/login/oauth/access_token"},
		"declaredApiHosts": []any{"api.github.com"},
	}
	o.approveOAuth(t, "app1", decl, map[string]string{"client_id": oauthtest.GitHubClient, "client_secret": oauthtest.GitHubSecret})
	st, err := o.d.pairing.StartOAuth(ctx, "app1", "gh", 4747, false)
	if err != nil {
		t.Fatalf("StartOAuth: %v", err)
	}
	u, _ := url.Parse(st.AuthorizeURL)
	q := u.Query()
	if u.Host != "github.com" || u.Path != "/login/oauth/authorize" || q.Get("scope") != "read:user notifications" ||
		q.Get("code_challenge_method") != "S256" || q.Get("redirect_uri") != "http://127.0.0.1:4747/oauth/callback" {
		t.Fatalf("authorize URL = %s", st.AuthorizeURL)
	}
	if strings.Contains(st.AuthorizeURL, oauthtest.GitHubSecret) {
		t.Fatal("the authorize URL carries the client secret")
	}
	cb := o.op.SignIn(ctx, t, st.AuthorizeURL)
	f, err := o.d.pairing.OAuthLoopbackCallback(ctx, cb.RawQuery)
	if err != nil || f.State != pairing.FlowConnected {
		t.Fatalf("callback = %+v, %v\n%s", f, err, o.logs.String())
	}
	if a := o.op.TokenAuths(); len(a) != 1 || a[0] != "post" {
		t.Fatalf("the code exchange authenticated as %q, want the secret in the form only", a)
	}
	res, _ := o.net(t, "app1", frame("GET", "https://api.github.com/user", nil))
	if res.Status != http.StatusOK {
		t.Fatalf("GET api.github.com/user = %+v", res)
	}
	access := o.secret(t, store.FieldKey("app1", "gh", grants.AccessTokenField))
	if b := o.op.Bearers(); len(b) != 1 || b[0] != "Bearer "+access {
		t.Fatalf("the API saw %q", b)
	}
	if strings.Contains(o.logs.String(), oauthtest.GitHubSecret) || strings.Contains(o.logs.String(), access) {
		t.Fatal("the log holds the client secret or the token")
	}
}

// A new sign-in on a signed-in connection needs replace
// (ALREADY_CONNECTED otherwise); one the person denies, and one whose
// code the provider refuses, leave the old tokens serving requests and
// journal nothing; one that completes replaces the tokens and is
// journaled as a credential-replace act.
func TestOAuthNewSignInReplacesOnlyWhenAsked(t *testing.T) {
	o := newOAuthRig(t)
	ctx := t.Context()
	o.connectSpotify(t, "app1")
	accessKey := store.FieldKey("app1", "music", grants.AccessTokenField)
	old := o.secret(t, accessKey)
	served := func(t *testing.T, bearer, when string) {
		t.Helper()
		res, _ := o.net(t, "app1", frame("GET", "https://api.spotify.com/v1/me", nil))
		b := o.op.Bearers()
		if res.Code != "" || res.Status != http.StatusOK || b[len(b)-1] != "Bearer "+bearer {
			t.Fatalf("a request %s = %q %d; want served with the expected token", when, res.Code, res.Status)
		}
	}
	replaceActs := func(t *testing.T) int {
		t.Helper()
		j, err := o.d.records.Journal(ctx, journal.JournalQuery{AppID: "app1", Kind: "acts"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range j {
			if e.Act == journal.ActReplace && e.Slot == "music" {
				n++
			}
		}
		return n
	}
	served(t, old, "after the first sign-in")

	if _, err := o.d.pairing.StartOAuth(ctx, "app1", "music", 4747, false); !isCode(err, errcode.AlreadyConnected) {
		t.Fatalf("a new sign-in without replace = %v, want ALREADY_CONNECTED", err)
	}

	// Denied by the person.
	st, err := o.d.pairing.StartOAuth(ctx, "app1", "music", 4747, true)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(st.AuthorizeURL)
	f, err := o.d.pairing.OAuthLoopbackCallback(ctx, url.Values{"error": {"access_denied"}, "state": {u.Query().Get("state")}}.Encode())
	if err != nil || f.State != pairing.FlowDenied {
		t.Fatalf("denied callback = %+v, %v", f, err)
	}
	if o.secret(t, accessKey) != old {
		t.Fatal("a denied sign-in changed the tokens")
	}
	served(t, old, "after a denied new sign-in")

	// A code the provider refuses.
	st, err = o.d.pairing.StartOAuth(ctx, "app1", "music", 4747, true)
	if err != nil {
		t.Fatal(err)
	}
	u, _ = url.Parse(st.AuthorizeURL)
	f, err = o.d.pairing.OAuthLoopbackCallback(ctx, url.Values{"code": {"not-a-real-code"}, "state": {u.Query().Get("state")}}.Encode())
	if err != nil || f.State != pairing.FlowFailed {
		t.Fatalf("callback with a refused code = %+v, %v", f, err)
	}
	served(t, old, "after a failed new sign-in")

	// Abandoned: started, never signed in (the browser closed); the flow
	// waits and the old tokens serve meanwhile.
	if _, err := o.d.pairing.StartOAuth(ctx, "app1", "music", 4747, true); err != nil {
		t.Fatal(err)
	}
	served(t, old, "while an abandoned new sign-in waits")

	// Signed in, but the token endpoint fails the exchange (503). The
	// new flow replaces the abandoned one.
	st, err = o.d.pairing.StartOAuth(ctx, "app1", "music", 4747, true)
	if err != nil {
		t.Fatal(err)
	}
	cb := o.op.SignIn(ctx, t, st.AuthorizeURL)
	o.op.SetFault(oauthtest.Unavailable)
	f, err = o.d.pairing.OAuthLoopbackCallback(ctx, cb.RawQuery)
	o.op.SetFault(nil)
	if err != nil || f.State != pairing.FlowFailed {
		t.Fatalf("callback whose exchange failed = %+v, %v", f, err)
	}
	if o.secret(t, accessKey) != old {
		t.Fatal("a new sign-in whose exchange failed changed the tokens")
	}
	served(t, old, "after a new sign-in whose exchange failed")
	if cs, _, err := o.d.grants.ConnectionState(ctx, "app1", "music"); err != nil || cs.Status != grants.ConnConnected || cs.LastError != "" {
		t.Fatalf("state after failed new sign-ins = %+v, %v; want connected", cs, err)
	}
	if n := replaceActs(t); n != 0 {
		t.Fatalf("%d credential-replace acts before a replacement completed", n)
	}

	// Completed.
	st, err = o.d.pairing.StartOAuth(ctx, "app1", "music", 4747, true)
	if err != nil {
		t.Fatal(err)
	}
	cb = o.op.SignIn(ctx, t, st.AuthorizeURL)
	if f, err := o.d.pairing.OAuthLoopbackCallback(ctx, cb.RawQuery); err != nil || f.State != pairing.FlowConnected {
		t.Fatalf("callback = %+v, %v", f, err)
	}
	fresh := o.secret(t, accessKey)
	if fresh == old || fresh == "" {
		t.Fatal("the new sign-in did not replace the access token")
	}
	served(t, fresh, "after the new sign-in")
	if n := replaceActs(t); n != 1 {
		t.Fatalf("%d credential-replace acts after one replacement, want 1", n)
	}
}
