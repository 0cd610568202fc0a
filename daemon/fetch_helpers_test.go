package daemon

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/wire"
	"github.com/snug/snugd/daemon/wire/wiretest"
	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/transports"
)

// The executor's tests reach real TLS servers on loopback through an
// injected resolver (answering documentation-range addresses, which the
// SSRF guard admits) and an injected dialer that connects
// those addresses to the loopback listener. No setting a deployment could
// flip is involved: Public's Resolver, Dial and RootCAs are test seams.

// docAddr is the "public" address every upstream host resolves to.
const docAddr = "198.51.100.7"

// apiHost is the upstream host; httptest's certificate is valid for
// *.example.com.
const apiHost = "api.example.com"

// seenRequest is what an upstream received.
type seenRequest struct {
	Method   string
	Host     string
	URI      string
	Header   http.Header
	Body     string
	TLS      bool
	Received time.Time
}

// upstream is a TLS test server with a request log.
type testUpstream struct {
	srv     *httptest.Server
	mu      sync.Mutex
	seen    []seenRequest
	handler atomic.Pointer[http.HandlerFunc]
}

func (u *testUpstream) handle(h http.HandlerFunc) { u.handler.Store(&h) }

func (u *testUpstream) requests() []seenRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

func (u *testUpstream) last(t *testing.T) seenRequest {
	t.Helper()
	rs := u.requests()
	if len(rs) == 0 {
		t.Fatal("upstream saw no request")
	}
	return rs[len(rs)-1]
}

func newTestUpstream(t testing.TB) *testUpstream {
	u := &testUpstream{}
	u.handle(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.seen = append(u.seen, seenRequest{Method: r.Method, Host: r.Host, URI: r.RequestURI, Header: r.Header.Clone(), Body: string(b), TLS: r.TLS != nil, Received: time.Now()})
		u.mu.Unlock()
		(*u.handler.Load())(w, r)
	}))
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
	return u
}

// rig is one executor under test: a daemon, its upstream, resolver and
// dialers, and a spy on the credential reads.
type rig struct {
	d        *Daemon
	up       *testUpstream
	resolver *testutil.Resolver // unscripted hosts resolve to docAddr
	dialer   *testutil.Dialer   // every dial reaches up
	lanDial  *testutil.Dialer   // every dial reaches lanUp, port 80 lanHTTP
	lanUp    *testUpstream
	lanHTTP  *httptest.Server
	reads    atomic.Int64
	logs     *testutil.LogBuffer
}

func newRig(t testing.TB, opts ...func(*Config)) *rig {
	t.Helper()
	r := &rig{up: newTestUpstream(t), resolver: &testutil.Resolver{Default: []netip.Addr{netip.MustParseAddr(docAddr)}}, logs: &testutil.LogBuffer{}}
	r.dialer = &testutil.Dialer{Default: r.up.srv.Listener.Addr().String()}
	r.lanUp = newTestUpstream(t)
	r.lanHTTP = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"lan":"http"}`)
	}))
	t.Cleanup(r.lanHTTP.Close)
	r.lanDial = &testutil.Dialer{Default: r.lanUp.srv.Listener.Addr().String()}
	r.lanDial.RoutePort("80", r.lanHTTP.Listener.Addr().String())
	roots := x509.NewCertPool()
	roots.AddCert(r.up.srv.Certificate())
	cfg := Config{
		DataDir: t.TempDir() + "/data",
		Logger:  slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:     func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) },
		Public:  &transports.Public{Resolver: r.resolver, Dial: r.dialer.Dial, RootCAs: roots},
		LAN:     &transports.LAN{Dial: r.lanDial.Dial},
	}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	run(t, d)
	t.Cleanup(func() {
		d.Close()
		// No test's log may ever carry the credential (DESIGN.md).
		if strings.Contains(r.logs.String(), secretKey) || strings.Contains(r.logs.String(), "Secret+Key") {
			t.Errorf("the daemon's log carries a credential:\n%s", r.logs.String())
		}
	})
	// The executor's credential reader is its dependency; the rig wraps
	// it to count the reads.
	inner := d.exec.ReadSecrets
	d.exec.ReadSecrets = func(ctx context.Context, appID, slot string) (map[string]store.Secret, error) {
		r.reads.Add(1)
		return inner(ctx, appID, slot)
	}
	r.d = d
	return r
}

// lanPin is the certificate pin of the LAN test device.
func (r *rig) lanPin() string { return transports.Fingerprint(r.lanUp.srv.Certificate().Raw) }

// connect declares, approves and (when values is not nil) stores
// credentials for one connection.
func (r *rig) connect(t testing.TB, app string, v map[string]any, values map[string]string) {
	t.Helper()
	a, err := grants.Admit(mustJSONTB(t, v), grants.ProvenanceUser, nil)
	if err != nil {
		t.Fatalf("admit: %v %+v", err, err.(*grants.ValidationError).Violations)
	}
	if _, err := r.d.putDeclared(t.Context(), app, a); err != nil {
		t.Fatalf("putDeclared: %v", err)
	}
	if _, err := r.d.grants.Approve(t.Context(), app, a.Req.Slot); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if values != nil {
		if err := r.d.grants.SetCredentials(t.Context(), app, a.Req.Slot, values); err != nil {
			t.Fatalf("SetCredentials: %v", err)
		}
	}
}

// declare only declares a connection.
func (r *rig) declare(t testing.TB, app string, v map[string]any) {
	t.Helper()
	a, err := grants.Admit(mustJSONTB(t, v), grants.ProvenanceUser, nil)
	if err != nil {
		t.Fatalf("admit: %v %+v", err, err.(*grants.ValidationError).Violations)
	}
	if _, err := r.d.putDeclared(t.Context(), app, a); err != nil {
		t.Fatalf("putDeclared: %v", err)
	}
}

// setPin stores a LAN pin in the slot's connection state.
func (r *rig) setPin(t testing.TB, app, slot, pin string) {
	t.Helper()
	err := r.d.store.Update(t.Context(), func(tx *store.Tx) error {
		st, _, err := grants.ReadConnState(tx, app, slot)
		if err != nil {
			return err
		}
		if st.Status == "" {
			st.Status = grants.ConnConnected
		}
		st.LANPin = &grants.LANPin{Fingerprint: pin}
		return grants.WriteConnState(tx, app, slot, st)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustJSONTB(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// frame builds a snug:net-request frame; extra keys are merged in (nil
// values delete).
func frame(method, rawURL string, extra map[string]any) []byte {
	m := map[string]any{"type": "snug:net-request", "v": 1, "requestId": "r1", "instanceId": "i1", "url": rawURL, "method": method}
	for k, v := range extra {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// net runs one request for app.
func (r *rig) net(t testing.TB, app string, f []byte) (fetch.NetResult, wire.NetResponse) {
	t.Helper()
	return r.netCtx(t, t.Context(), app, f, fetch.DeliveryApp)
}

func (r *rig) netCtx(t testing.TB, ctx context.Context, app string, f []byte, del fetch.Delivery) (fetch.NetResult, wire.NetResponse) {
	t.Helper()
	res := r.d.exec.Net(ctx, fetch.NetCall{AppID: app, Frame: f, Delivery: del})
	if !res.Answer {
		return res, wire.NetResponse{}
	}
	resp, err := wiretest.ParseNetResponse(res.Frame)
	if err != nil {
		t.Fatalf("ParseNetResponse(%s) = %v", res.Frame, err)
	}
	if resp.Error != nil && res.Code != resp.Error.Code {
		t.Fatalf("NetResult.Code = %q, frame says %q", res.Code, resp.Error.Code)
	}
	return res, resp
}

// autoDecide decides every confirm that comes up, until the test ends.
// It returns a channel of the confirms it saw.
func (r *rig) autoDecide(t testing.TB, allow bool, remember fetch.Remember) <-chan fetch.Confirm {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	hs := r.d.Hints(ctx)
	seen := make(chan fetch.Confirm, 64)
	go func() {
		for h := range hs {
			if h.Type != hints.ConfirmPending {
				continue
			}
			if c, ok := r.d.exec.ConfirmByID(context.Background(), h.ID); ok {
				select {
				case seen <- c:
				default:
				}
			}
			r.d.exec.DecideConfirm(h.ID, allow, remember)
		}
	}()
	return seen
}

// waitConfirms waits until n confirms are pending.
func waitConfirms(t testing.TB, d *Daemon, n int) []fetch.Confirm {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Subscribed before the first look: a confirm parked after it rings.
	hs := d.Hints(ctx)
	for {
		if cs := d.exec.Confirms(context.Background()); len(cs) >= n {
			return cs
		}
		select {
		case _, ok := <-hs:
			if !ok {
				t.Fatalf("the daemon closed with %d pending confirms, want %d", len(d.exec.Confirms(context.Background())), n)
			}
		case <-ctx.Done():
			t.Fatalf("waited for %d pending confirms, have %d", n, len(d.exec.Confirms(context.Background())))
		}
	}
}

// apiKeyReq is an api_key requirement with a header and a query template.
func apiKeyReq(slot string, hosts ...string) map[string]any {
	return map[string]any{
		"slot":     slot,
		"provider": map[string]any{"name": "Example"},
		"kind":     "api_key",
		"fields":   []any{map[string]any{"key": "api_key", "label": "API key", "type": "secret"}},
		"request": map[string]any{
			"headerTemplate": map[string]any{"X-Key": "{{api_key}}"},
			"queryTemplate":  map[string]any{"appid": "{{api_key}}"},
		},
		"declaredApiHosts": toAny(hosts),
	}
}

// lanReq is a post-collection LAN requirement on addr.
func lanReq(slot, addr string) map[string]any {
	return map[string]any{
		"slot":             slot,
		"provider":         map[string]any{"name": "Home Bridge"},
		"kind":             "api_key",
		"fields":           []any{map[string]any{"key": "username", "label": "Bridge user", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"hue-application-key": "{{username}}"}},
		"lanHost":          map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
		"declaredApiHosts": []any{addr},
	}
}

// noneReq is a keyless requirement.
func noneReq(slot string, hosts ...string) map[string]any {
	return map[string]any{
		"slot":             slot,
		"provider":         map[string]any{"name": "Open Data"},
		"kind":             "none",
		"declaredApiHosts": toAny(hosts),
	}
}

// secretKey is a credential value tests look for everywhere.
const secretKey = "sk_test_51Hx/Secret+Key=Value&x"
