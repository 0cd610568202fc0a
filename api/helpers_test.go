package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/lan"
	"github.com/snug/snugd/transports"
)

const (
	testVersion = "test-1"
	webOrigin   = "https://snug.example"
	verifier    = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)

// env is a real daemon in a temporary data directory with the API served
// on 127.0.0.1:0 and on its ctl socket.
type env struct {
	t     *testing.T
	dir   string
	d     *daemon.Daemon
	s     *Server
	port  int
	base  string
	ctl   *Client
	clock *testutil.Clock
	logs  *testutil.LogBuffer
	// seeded are the apps seed wrote, in order (shareSeeded).
	seeded []string
	// lastHost is the id of the host pair paired last.
	lastHost string
}

// seed is a connection row a test starts with, proposed on the user
// channel and moved to its status through the writers.
type seed struct {
	app, slot, status string
	hosts             []string
}

// requirementJSON is a minimal valid api_key requirement for slot.
func requirementJSON(slot string, hosts ...string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"slot": slot, "kind": "api_key", "provider": map[string]any{"name": "Example"},
		"fields":           []any{map[string]any{"key": "api_key", "label": "API key", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}},
		"declaredApiHosts": hosts,
	})
	return b
}

func newEnv(t *testing.T, seeds ...seed) *env {
	t.Helper()
	return newEnvWith(t, nil, seeds...)
}

// newEnvWith is newEnv with the daemon's configuration adjusted by cfg.
func newEnvWith(t *testing.T, cfg func(*daemon.Config), seeds ...seed) *env {
	t.Helper()
	// A short path: a unix socket path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "snugd")
	if err != nil {
		t.Fatal(err)
	}
	root := dir // the closure must not see dir's reassignment below
	t.Cleanup(func() { os.RemoveAll(root) })
	dir = filepath.Join(dir, "d")
	e := &env{t: t, dir: dir, clock: testutil.NewClock(testutil.Epoch), logs: &testutil.LogBuffer{}}
	log := e.logs.Logger()
	dc := daemon.Config{
		DataDir: dir, Logger: log, Now: e.clock.Now,
		// No test reaches beyond loopback by accident.
		Public: &transports.Public{Resolver: testutil.NoNetwork{}, Dial: testutil.NoNetwork{}.Dial},
		LAN:    &transports.LAN{Dial: testutil.NoNetwork{}.Dial},
		// Nor multicasts on the machine's own interfaces.
		LANDiscover: func(context.Context, lan.DiscoverConfig) (lan.Discovery, error) { return lan.Discovery{}, nil },
	}
	if cfg != nil {
		cfg(&dc)
	}
	e.d, err = daemon.New(t.Context(), dc)
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	runDaemon(t, e.d)
	e.s = New(DepsOf(e.d), Options{Version: testVersion, Logger: log, Now: e.clock.Now, Heartbeat: 50 * time.Millisecond, DrainTimeout: 2 * time.Second})
	tcp, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctlL, err := ListenCtl(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	e.port = tcp.Addr().(*net.TCPAddr).Port
	e.base = fmt.Sprintf("http://127.0.0.1:%d", e.port)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.s.Serve(ctx, tcp, ctlL) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v, want nil after shutdown", err)
		}
		e.d.Close()
	})
	e.ctl = DialCtl(dir, ClientOptions{})
	for _, sd := range seeds {
		e.seed(sd)
	}
	return e
}

func (e *env) seed(s seed) {
	e.t.Helper()
	ctx := e.t.Context()
	if !slices.Contains(e.seeded, s.app) {
		e.seeded = append(e.seeded, s.app)
	}
	if _, err := e.ctl.PutConnection(ctx, s.app, s.slot, requirementJSON(s.slot, s.hosts...)); err != nil {
		e.t.Fatalf("seed %+v: %v", s, err)
	}
	if s.status == "declared" {
		return
	}
	if _, err := e.ctl.Approve(ctx, s.app, s.slot); err != nil {
		e.t.Fatalf("seed %+v: %v", s, err)
	}
	if s.status == "revoked" {
		if _, err := e.ctl.Revoke(ctx, s.app, s.slot); err != nil {
			e.t.Fatalf("seed %+v: %v", s, err)
		}
	}
}

// host returns a Client over TCP with a token and origin.
func (e *env) host(token, origin string) *Client {
	return NewClient(e.base, ClientOptions{Token: token, Origin: origin})
}

// pair pairs a host through the API (pair over TCP, approve over ctl,
// redeem over TCP) and returns its token.
func (e *env) pair(surface, origin string) string {
	e.t.Helper()
	ctx := e.t.Context()
	before := e.hostIDs()
	c := e.host("", origin)
	p, err := c.Pair(ctx, PairRequest{Name: "test " + surface, Surface: surface, Origin: origin, Challenge: testutil.ChallengeOf(verifier)})
	if err != nil {
		e.t.Fatalf("Pair: %v", err)
	}
	if _, err := e.ctl.ApproveHost(ctx, p.Code); err != nil {
		e.t.Fatalf("ApproveHost: %v", err)
	}
	r, err := c.Redeem(ctx, p.PairingID, verifier)
	if err != nil || r.State != "approved" || r.Token == "" {
		e.t.Fatalf("Redeem = %+v, %v", r, err)
	}
	for id := range e.hostIDs() {
		if !before[id] {
			e.lastHost = id
		}
	}
	e.shareSeeded(e.lastHost)
	return r.Token
}

// hostIDs returns the ids of the paired hosts.
func (e *env) hostIDs() map[string]bool {
	e.t.Helper()
	hs, err := e.ctl.Hosts(e.t.Context())
	if err != nil {
		e.t.Fatalf("Hosts: %v", err)
	}
	ids := map[string]bool{}
	for _, h := range hs.Hosts {
		ids[h.HostID] = true
	}
	return ids
}

// shareSeeded gives host every app seeded so far (on the ctl channel, so
// the administrator's): the tests' hosts are the user's own, and most of
// them pair after seeding. Tests of app ownership pair their hosts before
// any app exists, or check what this gives.
func (e *env) shareSeeded(host string) {
	e.t.Helper()
	ctx := e.t.Context()
	for _, app := range e.seeded {
		if _, err := e.ctl.ShareApp(ctx, app, host); err != nil {
			e.t.Fatalf("ShareApp(%s, %s): %v", app, host, err)
		}
	}
}

// req is a raw request over TCP.
type req struct {
	method, path string
	host         string // "" → 127.0.0.1:<port>
	header       map[string]string
	body         string
}

// do sends r raw and returns the response with its body read.
func (e *env) do(r req) (*http.Response, string) {
	e.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequestWithContext(e.t.Context(), r.method, e.base+r.path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.host != "" {
		hr.Host = r.host
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(hr)
	if err != nil {
		e.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// errCode returns the code of an error body, "" when there is none.
func errCode(body string) string {
	var e errorJSON
	if json.Unmarshal([]byte(body), &e) != nil {
		return ""
	}
	return string(e.Error.Code)
}

// concrete fills a route's parameters with sample values.
func concrete(path string) string {
	r := strings.NewReplacer(":appId", "app1", ":slot", "mail", ":pairingId", "p_"+strings.Repeat("0", 32), ":hostId", "h_1", ":type", "snug:net-request", ":id", "c1")
	return r.Replace(path)
}

// jsonHeader is the header of a JSON body.
func jsonHeader(extra ...string) map[string]string {
	h := map[string]string{"Content-Type": "application/json"}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

// runDaemon runs d until the test ends, as main runs it beside the API
// server.
func runDaemon(t testing.TB, d *daemon.Daemon) { testutil.RunUntilCleanup(t, d.Run) }
