package oauth_test

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/oauth"
)

// miniDaemon is the caller the package is built for, as small as a test
// can make it: flows sealed as bytes in a map (the daemon's
// auth:_flow:<id>), the state key (auth:_state_hmac), single use enforced
// in the same critical section that reads the flow, and the loopback
// callback route. The next phase puts this in the daemon proper.
type miniDaemon struct {
	key    []byte
	client *oauth.Client
	ep     oauth.Endpoint
	scopes []string

	mu    sync.Mutex
	now   time.Time
	flows map[string][]byte
	token *oauth.Token // the last token a callback obtained
	port  int
}

func newMiniDaemon(t *testing.T, client *oauth.Client, ep oauth.Endpoint, scopes []string) *miniDaemon {
	t.Helper()
	key := make([]byte, oauth.StateKeySize)
	rand.Read(key)
	return &miniDaemon{key: key, client: client, ep: ep, scopes: scopes, flows: map[string][]byte{}, now: time.Now()}
}

func (d *miniDaemon) clock() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.now
}

func (d *miniDaemon) advance(by time.Duration) {
	d.mu.Lock()
	d.now = d.now.Add(by)
	d.mu.Unlock()
}

// start is POST /v1/oauth/start: a flow, sealed, and its authorize URL.
func (d *miniDaemon) start(t *testing.T, p oauth.FlowParams, authorizeEndpoint string, params map[string]string) (oauth.Flow, string) {
	t.Helper()
	f, err := oauth.NewFlow(p, d.clock())
	if err != nil {
		t.Fatalf("NewFlow(%+v) = %v", p, err)
	}
	state, err := oauth.State(d.key, f)
	if err != nil {
		t.Fatal(err)
	}
	u, err := oauth.AuthorizeURL(oauth.AuthorizeRequest{
		Endpoint: authorizeEndpoint, ClientID: d.ep.ClientID, RedirectURI: f.RedirectURI,
		Scopes: d.scopes, State: state, Verifier: f.Verifier, Params: params,
	})
	if err != nil {
		t.Fatalf("AuthorizeURL = %v", err)
	}
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.flows[f.ID] = b
	d.mu.Unlock()
	return f, u
}

// callback is the work of both callback routes: parse, find the flow,
// verify and mark it used in one critical section (the daemon: one
// transaction), then exchange the code.
func (d *miniDaemon) callback(ctx context.Context, rawQuery string, at oauth.Callback) (oauth.Token, error) {
	code, state, err := oauth.ParseCallback(rawQuery)
	if err != nil {
		return oauth.Token{}, err
	}
	id, err := oauth.FlowIDFromState(state)
	if err != nil {
		return oauth.Token{}, err
	}
	d.mu.Lock()
	b, ok := d.flows[id]
	if !ok {
		d.mu.Unlock()
		return oauth.Token{}, oauth.ErrBadState
	}
	var f oauth.Flow
	if err := f.UnmarshalBinary(b); err != nil {
		d.mu.Unlock()
		return oauth.Token{}, err
	}
	if err := oauth.Verify(d.key, f, state, at, d.now); err != nil {
		d.mu.Unlock()
		return oauth.Token{}, err
	}
	f.Used = true
	b, _ = f.MarshalBinary()
	d.flows[id] = b
	d.mu.Unlock()
	tok, err := d.client.Exchange(ctx, d.ep, oauth.ExchangeParams{
		Code: code, RedirectURI: f.RedirectURI, Verifier: f.Verifier, Scopes: d.scopes,
	})
	if err != nil {
		return oauth.Token{}, err
	}
	d.mu.Lock()
	d.token = &tok
	d.mu.Unlock()
	return tok, nil
}

// The plain pages the desktop callback answers: no token, code or host.
const (
	pageDone   = "Connected. You can close this window and return to Snug."
	pageFailed = "The sign-in did not complete. Return to Snug to try again."
)

// serveLoopback is GET /oauth/callback on 127.0.0.1 (plain http, as RFC
// 8252 §7.3 has it).
func (d *miniDaemon) serveLoopback(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != oauth.CallbackPath || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if _, err := d.callback(r.Context(), r.URL.RawQuery, oauth.Callback{Surface: oauth.SurfaceDesktop}); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, pageFailed)
			return
		}
		io.WriteString(w, pageDone)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	d.port, _ = strconv.Atoi(u.Port())
	return srv
}

// lastToken returns what the last successful callback obtained.
func (d *miniDaemon) lastToken(t *testing.T) oauth.Token {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.token == nil {
		t.Fatal("no callback obtained a token")
	}
	return *d.token
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s = %v, want %v", what, err, want)
	}
}
