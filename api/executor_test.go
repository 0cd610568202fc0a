package api

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/wire"
	"github.com/snug/snugd/daemon/wire/wiretest"
	"github.com/snug/snugd/transports"
)

// The executor's routes reach a real TLS server on loopback: an injected
// resolver answers a documentation address (the one block admitted as public) and an
// injected dialer connects it to the test server. httptest's certificate
// is valid for *.example.com.

const upHost = "api.example.com"

type upstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []http.Header
}

func (u *upstream) requests() []http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]http.Header(nil), u.seen...)
}

type docResolver struct{}

func (docResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("198.51.100.7")}, nil
}

func newExecEnv(t *testing.T) (*env, *upstream) {
	t.Helper()
	u := &upstream{}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Header.Clone())
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/fail" {
			// A provider error echoing the credential it was sent.
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"invalid key `+r.Header.Get("X-Key")+` for café"}}`)
			return
		}
		if r.URL.Path == "/big" {
			io.WriteString(w, `"`+strings.Repeat("x", 64<<10)+`"`)
			return
		}
		io.WriteString(w, `{"pong":true}`)
	}))
	u.srv.StartTLS()
	t.Cleanup(u.srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(u.srv.Certificate())
	to := u.srv.Listener.Addr().String()
	e := newEnvWith(t, func(c *daemon.Config) {
		c.Public = &transports.Public{Resolver: docResolver{}, RootCAs: roots, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, to)
		}}
		c.ConfirmTimeout = time.Minute
	}, seed{app: "app1", slot: "mail", status: "approved", hosts: []string{upHost}})
	if err := e.ctl.SetCredentials(t.Context(), "app1", "mail", map[string]string{"api_key": execSecret}); err != nil {
		t.Fatal(err)
	}
	return e, u
}

const execSecret = "sk-live-exec-secret-5e9f"

func netFrame(method, url string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "snug:net-request", "v": 1, "requestId": "r1", "instanceId": "i1", "url": url, "method": method})
	return b
}

func parseFrame(t *testing.T, b []byte) wire.NetResponse {
	t.Helper()
	r, err := wiretest.ParseNetResponse(b)
	if err != nil {
		t.Fatalf("not a net-response frame (%v): %s", err, b)
	}
	return r
}

// TestNetOverTheAPI: a frame goes through the executor and its answer
// comes back as a frame; the credential reaches the upstream only.
//
// conformance: P1-NET3-10
func TestNetOverTheAPI(t *testing.T) {
	e, up := newExecEnv(t)
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	b, err := c.Net(ctx, NetRequest{AppID: "app1", Frame: netFrame("GET", "https://"+upHost+"/ping"), Delivery: "app"})
	if err != nil {
		t.Fatalf("Net: %v", err)
	}
	r := parseFrame(t, b)
	if !r.OK() || r.Status != 200 || !strings.Contains(r.Body, "pong") {
		t.Fatalf("frame = %+v", r)
	}
	if strings.Contains(string(b), execSecret) {
		t.Errorf("the frame carries the credential")
	}
	if seen := up.requests(); len(seen) != 1 || seen[0].Get("X-Key") != execSecret {
		t.Errorf("upstream saw %v, want the credential injected", seen)
	}
	// The app's identity is the host's: a frame naming another app in its
	// own fields changes nothing, and the same frame for an app without a
	// grant is refused inside the frame.
	b, err = c.Net(ctx, NetRequest{AppID: "app2", Frame: netFrame("GET", "https://"+upHost+"/ping"), Delivery: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if r := parseFrame(t, b); r.OK() || r.Error.Code != errcode.NetNotApproved {
		t.Errorf("frame for app2 = %+v, want NET_NOT_APPROVED", r)
	}
	withAppID, _ := json.Marshal(map[string]any{"type": "snug:net-request", "v": 1, "requestId": "r2", "instanceId": "i1", "url": "https://" + upHost + "/ping", "method": "GET", "appId": "app1"})
	b, err = c.Net(ctx, NetRequest{AppID: "app2", Frame: withAppID, Delivery: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if r := parseFrame(t, b); r.OK() || r.Error.Code != errcode.NetInvalidRequest {
		t.Errorf("frame carrying its own appId = %+v, want NET_INVALID_REQUEST (strict key set)", r)
	}
	// No usable requestId: no frame at all, an API error.
	_, err = c.Net(ctx, NetRequest{AppID: "app1", Frame: json.RawMessage(`{"type":"snug:net-request"}`), Delivery: "app"})
	wantAPIError(t, err, 400, errcode.NetInvalidRequest)
	_, err = c.Net(ctx, NetRequest{AppID: "app1", Frame: netFrame("GET", "https://"+upHost+"/"), Delivery: "iframe"})
	wantAPIError(t, err, 400, errcode.BadRequest)
	// The journal has the metadata, never the credential.
	j, err := c.Journal(ctx, JournalOptions{AppID: "app1"})
	if err != nil || len(j.Entries) == 0 {
		t.Fatalf("Journal = %+v, %v", j, err)
	}
	raw, _ := json.Marshal(j)
	if strings.Contains(string(raw), execSecret) {
		t.Errorf("the journal carries the credential")
	}
	facts, err := c.Facts(ctx, "app1")
	if err != nil || len(facts) != 1 || facts[0].Slot != "mail" || facts[0].Address != "snug-connection://mail/" {
		t.Errorf("Facts = %+v, %v", facts, err)
	}
	if _, err := c.TestConnection(ctx, "app1", "mail"); !errors.Is(err, errcode.NotFound) {
		t.Errorf("TestConnection without a testRequest = %v, want NOT_FOUND", err)
	}
}

// TestProviderErrorHeader: beside a frame whose upstream failed, the host
// gets the provider's error extract in a header, scrubbed and
// percent-encoded; the frame itself is unchanged.
//
// conformance: P3-X14.3-03
func TestProviderErrorHeader(t *testing.T) {
	e, _ := newExecEnv(t)
	token := e.pair("desktop", "")
	body, _ := json.Marshal(NetRequest{AppID: "app1", Frame: netFrame("GET", "https://"+upHost+"/fail"), Delivery: "app"})
	resp, got := e.do(req{method: "POST", path: "/v1/net", body: string(body),
		header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}})
	if r := parseFrame(t, []byte(got)); !r.OK() || r.Status != 401 {
		t.Fatalf("frame = %+v, want the upstream's 401 as a response", r)
	}
	raw := resp.Header.Get(ProviderErrorHeader)
	extract, err := url.PathUnescape(raw)
	if err != nil || !strings.Contains(extract, "invalid key") || !strings.Contains(extract, "café") {
		t.Fatalf("%s = %q (%q, %v), want the error message", ProviderErrorHeader, raw, extract, err)
	}
	if strings.Contains(extract, execSecret) || strings.Contains(got, execSecret) {
		t.Fatalf("the credential echoed by the provider reached the host: %q", extract)
	}
	resp, _ = e.do(req{method: "POST", path: "/v1/net", body: strings.Replace(string(body), "/fail", "/ok", 1),
		header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}})
	if v := resp.Header.Get(ProviderErrorHeader); v != "" {
		t.Fatalf("a successful answer carries %s = %q", ProviderErrorHeader, v)
	}
}

// TestNetFrameLength: a net-response frame goes out with its length
// declared, not chunked, however big: the host has the whole answer once
// its bytes are written, not when the handler returns.
func TestNetFrameLength(t *testing.T) {
	e, _ := newExecEnv(t)
	token := e.pair("desktop", "")
	body, _ := json.Marshal(NetRequest{AppID: "app1", Frame: netFrame("GET", "https://"+upHost+"/big"), Delivery: "app"})
	resp, got := e.do(req{method: "POST", path: "/v1/net", body: string(body),
		header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}})
	if r := parseFrame(t, []byte(got)); !r.OK() || r.Status != 200 || len(r.Body) < 64<<10 {
		t.Fatalf("frame = status %d, %d body bytes, want the upstream's 64 KiB answer", r.Status, len(r.Body))
	}
	if resp.ContentLength != int64(len(got)) || len(resp.TransferEncoding) != 0 {
		t.Fatalf("frame of %d bytes sent with Content-Length %d, Transfer-Encoding %v", len(got), resp.ContentLength, resp.TransferEncoding)
	}
}

// TestNetFrameWrittenBeforeRelease: the API writes a pooled answer frame
// out before it hands the buffer back, which zeroes it: the host receives
// the upstream's answer, never the zeroed buffer.
func TestNetFrameWrittenBeforeRelease(t *testing.T) {
	e, _ := newExecEnv(t)
	token := e.pair("desktop", "")
	body, _ := json.Marshal(NetRequest{AppID: "app1", Frame: netFrame("GET", "https://"+upHost+"/big"), Delivery: "app"})
	for range 2 { // the second answer is encoded into the first one's released buffer
		_, got := e.do(req{method: "POST", path: "/v1/net", body: string(body),
			header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}})
		if strings.Contains(got, "\x00") {
			t.Fatalf("the host received the marker of a released frame buffer (%d bytes)", len(got))
		}
		if r := parseFrame(t, []byte(got)); !r.OK() || r.Body != `"`+strings.Repeat("x", 64<<10)+`"` {
			t.Fatalf("frame = status %d, %d body bytes, want the upstream's 64 KiB answer", r.Status, len(r.Body))
		}
	}
}

// TestNetConfirmOverTheAPI: a mutating request parks on a confirm; the host
// sees it (and its hint), decides, and the parked call answers. A call
// whose host goes away denies its own confirm.
func TestNetConfirmOverTheAPI(t *testing.T) {
	e, up := newExecEnv(t)
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	hints := e.d.Hints(ctx) // before the first call: every confirm rings
	wait := func() ConfirmJSON {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return waitConfirm(wctx, t, e, hints)
	}
	type answer struct {
		b   []byte
		err error
	}
	send := func(ctx context.Context) chan answer {
		ch := make(chan answer, 1)
		go func() {
			b, err := c.Net(ctx, NetRequest{AppID: "app1", Frame: netFrame("POST", "https://"+upHost+"/send"), Delivery: "app"})
			ch <- answer{b, err}
		}()
		return ch
	}

	// Deny.
	done := send(ctx)
	cf := wait()
	if cf.Method != "POST" || cf.Host != upHost || !strings.HasPrefix(cf.URL, "https://"+upHost) || cf.Slot != "mail" {
		t.Errorf("confirm = %+v", cf)
	}
	if got, err := c.Confirm(ctx, cf.ID); err != nil || got.ID != cf.ID {
		t.Errorf("Confirm(%s) = %+v, %v", cf.ID, got, err)
	}
	if st, _ := e.ctl.Status(ctx); st.PendingConfirms != 1 {
		t.Errorf("status pendingConfirms = %d, want 1", st.PendingConfirms)
	}
	if err := c.DecideConfirm(ctx, cf.ID, DecisionRequest{Decision: "deny"}); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || parseFrame(t, a.b).Error == nil || parseFrame(t, a.b).Error.Code != errcode.NetConfirmDenied {
		t.Fatalf("denied call = %s, %v, want NET_CONFIRM_DENIED", a.b, a.err)
	}
	// A second decision is a no-op; an unknown id is 404; a bad decision 400.
	if err := c.DecideConfirm(ctx, cf.ID, DecisionRequest{Decision: "allow"}); err != nil {
		t.Errorf("second decision = %v, want a no-op", err)
	}
	wantAPIError(t, c.DecideConfirm(ctx, "nope", DecisionRequest{Decision: "deny"}), 404, errcode.NotFound)
	wantAPIError(t, c.DecideConfirm(ctx, cf.ID, DecisionRequest{Decision: "maybe"}), 400, errcode.BadRequest)

	// Allow.
	done = send(ctx)
	cf = wait()
	if err := c.DecideConfirm(ctx, cf.ID, DecisionRequest{Decision: "allow", Remember: "once"}); err != nil {
		t.Fatal(err)
	}
	a = <-done
	if a.err != nil || !parseFrame(t, a.b).OK() || len(up.requests()) != 1 {
		t.Fatalf("allowed call = %s, %v; upstream saw %d", a.b, a.err, len(up.requests()))
	}

	// The host goes away: its confirm is denied, nothing is sent.
	cctx, cancel := context.WithCancel(ctx)
	done = send(cctx)
	wait()
	cancel()
	<-done
	// The server learns of the caller's leaving when the connection
	// closes, after the client's call returned: nothing rings then, so
	// this waits by looking.
	deadline := time.Now().Add(10 * time.Second)
	for {
		cs, _ := c.Confirms(ctx)
		if len(cs) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("confirm still pending after its caller went away: %+v", cs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("upstream saw %d requests, want 1", n)
	}
}

// TestStandingNeedsGesture: no standing approval is armed without the
// host's attestation of the user's gesture; the routes list and kill.
//
// conformance: P3-S17-01
func TestStandingNeedsGesture(t *testing.T) {
	e, _ := newExecEnv(t)
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	_, err := c.ArmStanding(ctx, StandingRequest{AppID: "app1", Slot: "mail", Target: "t1", Trigger: "reply", MaxSends: 5, WindowSeconds: 3600})
	wantAPIError(t, err, 400, errcode.BadRequest)
	if list, err := c.Standings(ctx); err != nil || len(list) != 0 {
		t.Errorf("Standings = %+v, %v, want none", list, err)
	}
	if n, err := c.KillStanding(ctx); err != nil || n != 0 {
		t.Errorf("KillStanding = %d, %v", n, err)
	}
	for _, q := range []QuietHoursJSON{{Start: "25:00", End: "07:00"}, {Start: "22:00", End: "7:00"}, {Start: "22:00", End: "07:00", TimeZone: "Mars/Olympus"}} {
		_, err := c.ArmStanding(ctx, StandingRequest{AppID: "app1", Slot: "mail", Target: "t1", Trigger: "reply", MaxSends: 5, WindowSeconds: 3600, QuietHours: &q, UserGesture: true})
		wantAPIError(t, err, 400, errcode.BadRequest)
	}
	rows, _ := c.Connections(ctx, "app1")
	if len(rows) != 1 || rows[0].Standing != nil {
		t.Errorf("connection standing = %+v, want null", rows[0].Standing)
	}
}

// TestBodyAppIDRefusesControls: an appId in a body follows the same rule
// as one in a path: control characters and invalid UTF-8 are refused. An
// appId reaches the journal and the confirm queue, which snugd ctl prints
// to the administrator's terminal; an escape sequence in it could redraw
// the screen and make a confirm read as another request.
func TestBodyAppIDRefusesControls(t *testing.T) {
	e, up := newExecEnv(t)
	ctx := t.Context()
	c := e.host(e.pair("desktop", ""), "")
	for _, id := range []string{"app1\x1b[1A\x1b[2K", "app1\r", "app\x00", "app\u0085"} {
		_, err := c.Net(ctx, NetRequest{AppID: id, Frame: netFrame("GET", "https://"+upHost+"/x"), Delivery: "app"})
		wantAPIError(t, err, 400, errcode.BadRequest)
		_, err = c.ArmStanding(ctx, StandingRequest{AppID: id, Slot: "mail", Target: "t1", Trigger: "reply", MaxSends: 1, WindowSeconds: 60, UserGesture: true})
		wantAPIError(t, err, 400, errcode.BadRequest)
	}
	if n := len(up.requests()); n != 0 {
		t.Errorf("upstream saw %d requests, want 0", n)
	}
	if j, err := e.ctl.Journal(ctx, JournalOptions{Kind: "requests"}); err != nil || len(j.Entries) != 0 { // the setup's acts aside
		t.Errorf("Journal = %+v, %v, want nothing recorded", j, err)
	}
}

// TestQuietHoursZone: quiet hours without a timeZone are the machine's
// local time, as API.md says, and the answer names the zone used.
//
// conformance: P3-S17-11
func TestQuietHoursZone(t *testing.T) {
	for _, tc := range []struct{ in, loc, echo string }{
		{"", "Local", "Local"},
		{"Europe/Berlin", "Europe/Berlin", "Europe/Berlin"},
		{"UTC", "UTC", "UTC"},
	} {
		q, err := quietHours(QuietHoursJSON{Start: "22:00", End: "07:00", TimeZone: tc.in})
		if err != nil {
			if tc.in != "" && strings.Contains(err.Error(), "time zone") {
				t.Skipf("no time zone data for %s here", tc.in)
			}
			t.Fatal(err)
		}
		if q.Location.String() != tc.loc || (tc.in == "" && q.Location != time.Local) {
			t.Errorf("quietHours(timeZone %q) in %s, want %s", tc.in, q.Location, tc.loc)
		}
		j := standingJSON(fetch.Standing{Spec: fetch.StandingSpec{Quiet: q}})
		if j.QuietHours == nil || j.QuietHours.TimeZone != tc.echo {
			t.Errorf("standingJSON(timeZone %q).quietHours = %+v, want timeZone %q", tc.in, j.QuietHours, tc.echo)
		}
	}
}

// TestJournalLimitBounds: limit is 1 to 1000 when given; 0 is refused
// like any other value out of range (the default, 100, is asked for by
// leaving limit out), and a host act's entry has no appId field at all.
func TestJournalLimitBounds(t *testing.T) {
	e := newEnv(t)
	token := e.pair("desktop", "")
	h := jsonHeader("Authorization", "Bearer "+token)
	for q, want := range map[string]int{
		"": http.StatusOK, "?limit=1": http.StatusOK, "?limit=1000": http.StatusOK,
		"?limit=0": http.StatusBadRequest, "?limit=-1": http.StatusBadRequest, "?limit=1001": http.StatusBadRequest, "?limit=x": http.StatusBadRequest,
	} {
		resp, body := e.do(req{method: http.MethodGet, path: "/v1/journal" + q, header: map[string]string{"Authorization": h["Authorization"]}})
		if resp.StatusCode != want {
			t.Errorf("GET /v1/journal%s = %d %s, want %d", q, resp.StatusCode, body, want)
		}
	}
	raw, err := json.Marshal(JournalEntryJSON{Outcome: "act", Act: "host-pair"})
	if err != nil || strings.Contains(string(raw), "appId") {
		t.Errorf("a host act = %s, %v; want no appId field", raw, err)
	}
}
