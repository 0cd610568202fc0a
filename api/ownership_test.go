package api

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/transports"
)

// Hosts own their apps (issue 10). Before, any paired host could stage and
// re-approve any other host's app row and send that app's stored
// credential where it liked. These tests drive the API served on
// 127.0.0.1 with two paired hosts.

// owned is a daemon with two paired desktop hosts, A and B, where A owns
// the app "mine": an approved slot with a stored credential, a declared
// slot, an armed standing approval and a parked confirm.
type owned struct {
	e            *env
	up           *upstream
	a, b         *Client
	aID, bID     string
	confirmID    string
	standingID   string
	netDone      chan error
	cancelParked context.CancelFunc
}

const ownedSecret = "sk-live-owned-canary-71c3"

func newOwned(t *testing.T) *owned {
	t.Helper()
	e, up := newOwnedEnv(t) // seeds app1 on the ctl channel: the administrator's
	ctx := t.Context()
	o := &owned{e: e, up: up}
	o.a = e.host(e.pair("desktop", ""), "")
	o.aID = newestHost(t, e)
	o.b = e.host(e.pair("desktop", ""), "")
	o.bID = newestHost(t, e)

	if _, err := o.a.PutConnection(ctx, "mine", "mail", requirementJSON("mail", upHost)); err != nil {
		t.Fatalf("A PutConnection: %v", err)
	}
	rv, err := o.a.Review(ctx, "mine", "mail")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.a.ApproveReview(ctx, "mine", "mail", rv.ReviewToken); err != nil {
		t.Fatalf("A approve: %v", err)
	}
	if err := o.a.SetCredentials(ctx, "mine", "mail", map[string]string{"api_key": ownedSecret}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.a.PutConnection(ctx, "mine", "draft", requirementJSON("draft", upHost)); err != nil {
		t.Fatal(err)
	}
	st, err := o.a.ArmStanding(ctx, StandingRequest{AppID: "mine", Slot: "mail", Target: "t1", Trigger: "reply", MaxSends: 5, WindowSeconds: 3600, UserGesture: true})
	if err != nil {
		t.Fatalf("A ArmStanding: %v", err)
	}
	o.standingID = st.ID
	pctx, cancel := context.WithCancel(context.Background())
	o.cancelParked = cancel
	o.netDone = make(chan error, 1)
	go func() {
		_, err := o.a.Net(pctx, NetRequest{AppID: "mine", Frame: netFrame("POST", "https://"+upHost+"/send"), Delivery: "app"})
		o.netDone <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for o.confirmID == "" && time.Now().Before(deadline) {
		cs, _ := o.a.Confirms(ctx)
		if len(cs) == 1 {
			o.confirmID = cs[0].ID
		}
		time.Sleep(5 * time.Millisecond)
	}
	if o.confirmID == "" {
		t.Fatal("A's confirm never parked")
	}
	t.Cleanup(func() {
		cancel()
		<-o.netDone
	})
	return o
}

// newOwnedEnv is newExecEnv with standing approvals possible: a reply
// trigger on every requirement.
func newOwnedEnv(t *testing.T) (*env, *upstream) {
	t.Helper()
	u := &upstream{}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Header.Clone())
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
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
		c.StandingTargets = func(*requirement.Requirement) []fetch.StandingTarget {
			return []fetch.StandingTarget{{Trigger: "reply", Method: "POST", PathPattern: "/v1/threads/{target}/messages", BodyField: "message.thread_id"}}
		}
	}, seed{app: "app1", slot: "mail", status: "approved", hosts: []string{upHost}})
	return e, u
}

// newestHost returns the id of the host paired last.
func newestHost(t *testing.T, e *env) string {
	t.Helper()
	if e.lastHost == "" {
		t.Fatal("no host paired")
	}
	return e.lastHost
}

// rawAs sends a request over TCP as the host with token.
func (e *env) rawAs(token, method, path, body string) (int, string) {
	e.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + token}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	resp, b := e.do(req{method: method, path: path, header: h, body: body})
	return resp.StatusCode, b
}

// TestEveryAppScopedRouteHidesAnotherHostsApp walks every authed route of
// the route table as host B against host A's app: each answers as if the
// app did not exist (the one APP_NOT_FOUND body, an unknown id's body, or
// a list without A's items), and nothing of A's changes, no credential
// leaves, no confirm is decided. A route added to the table without saying
// how it reaches an app, or with a scope this test has no check for, fails
// here.
func TestEveryAppScopedRouteHidesAnotherHostsApp(t *testing.T) {
	o := newOwned(t)
	e := o.e
	ctx := t.Context()
	tokB := o.b.token

	// The answers of ids that do not exist, to compare with.
	_, unknownConfirm := e.rawAs(tokB, http.MethodGet, "/v1/confirms/c_unknown", "")
	_, unknownDecide := e.rawAs(tokB, http.MethodPost, "/v1/confirms/c_unknown", `{"decision":"allow"}`)
	_, unknownStanding := e.rawAs(tokB, http.MethodDelete, "/v1/standing/s_unknown", "")
	_, unknownFlow := e.rawAs(tokB, http.MethodGet, "/v1/flows/f_unknown", "")
	_, unknownFlowCancel := e.rawAs(tokB, http.MethodDelete, "/v1/flows/f_unknown", "")

	var appNotFound string
	wantAppNotFound := func(rt route, status int, body string) {
		t.Helper()
		if status != http.StatusNotFound || errCode(body) != string(errcode.AppNotFound) {
			t.Errorf("%s %s as another host = %d %s, want 404 APP_NOT_FOUND", rt.method, rt.path, status, body)
			return
		}
		if appNotFound == "" {
			appNotFound = body
		}
		if body != appNotFound {
			t.Errorf("%s %s answers %s, want the one body %s", rt.method, rt.path, body, appNotFound)
		}
	}
	filtered := map[string]func(rt route, path string){
		"GET /v1/status": func(rt route, path string) {
			var st StatusResponse
			status, body := e.rawAs(tokB, rt.method, path, "")
			if status != 200 || json.Unmarshal([]byte(body), &st) != nil {
				t.Fatalf("status = %d %s", status, body)
			}
			// B sees app1 (shared with it by the test env), not mine.
			if st.Apps != 1 || st.Connections.Total != 1 || st.PendingConfirms != 0 || len(st.Standing) != 0 {
				t.Errorf("B's status = apps %d, connections %+v, pending %d, standing %d; want app1's counts only",
					st.Apps, st.Connections, st.PendingConfirms, len(st.Standing))
			}
		},
		"GET /v1/events": func(route, string) {}, // TestHintsOfAnotherHostsAppAreNotSent
		"GET /v1/confirms": func(rt route, path string) {
			if _, body := e.rawAs(tokB, rt.method, path, ""); strings.Contains(body, o.confirmID) || strings.Contains(body, "mine") {
				t.Errorf("B's confirms list shows A's confirm: %s", body)
			}
		},
		"GET /v1/confirms/:id": func(rt route, path string) {
			if status, body := e.rawAs(tokB, rt.method, path, ""); status != 404 || body != unknownConfirm {
				t.Errorf("B GET A's confirm = %d %s, want an unknown id's %s", status, body, unknownConfirm)
			}
		},
		"POST /v1/confirms/:id": func(rt route, path string) {
			if status, body := e.rawAs(tokB, rt.method, path, `{"decision":"allow"}`); status != 404 || body != unknownDecide {
				t.Errorf("B deciding A's confirm = %d %s, want an unknown id's %s", status, body, unknownDecide)
			}
		},
		"GET /v1/standing": func(rt route, path string) {
			if _, body := e.rawAs(tokB, rt.method, path, ""); strings.Contains(body, o.standingID) || strings.Contains(body, "mine") {
				t.Errorf("B's standing list shows A's: %s", body)
			}
		},
		"DELETE /v1/standing/:id": func(rt route, path string) {
			if status, body := e.rawAs(tokB, rt.method, path, ""); status != 404 || body != unknownStanding {
				t.Errorf("B disarming A's standing approval = %d %s, want an unknown id's %s", status, body, unknownStanding)
			}
		},
		"POST /v1/standing/kill": func(rt route, path string) {
			if status, body := e.rawAs(tokB, rt.method, path, "{}"); status != 200 || !strings.Contains(body, `"disarmed":0`) {
				t.Errorf("B's kill switch = %d %s, want nothing of A's disarmed", status, body)
			}
		},
		"POST /v1/lan/discover": func(rt route, path string) {
			// Relocation after a discovery stages only on B's own rows.
			if status, body := e.rawAs(tokB, rt.method, path, "{}"); status != 200 || strings.Contains(body, "mine") {
				t.Errorf("B's discovery = %d %s", status, body)
			}
		},
		// A's flows answer B as unknown ids (TestLinkFlowOfAnotherHost
		// in the daemon proves it with a live flow).
		"GET /v1/flows/:flowId": func(rt route, path string) {
			if status, body := e.rawAs(tokB, rt.method, path, ""); status != 404 || body != unknownFlow {
				t.Errorf("B GET a flow = %d %s, want an unknown id's %s", status, body, unknownFlow)
			}
		},
		"DELETE /v1/flows/:flowId": func(rt route, path string) {
			if status, body := e.rawAs(tokB, rt.method, path, ""); status != 404 || body != unknownFlowCancel {
				t.Errorf("B cancelling a flow = %d %s, want an unknown id's %s", status, body, unknownFlowCancel)
			}
		},
		"POST /v1/oauth/callback": func(rt route, path string) {
			// A state names its flow; one B did not start is refused as
			// any unknown state is, and ends nothing.
			st := `{"code":"c","state":"` + strings.Repeat("A", 22) + "." + strings.Repeat("A", 43) + `"}`
			if status, body := e.rawAs(tokB, rt.method, path, st); status != 400 || strings.Contains(body, "mine") {
				t.Errorf("B's OAuth callback = %d %s, want a fixed 400", status, body)
			}
		},
		"GET /v1/journal": func(rt route, path string) {
			for _, p := range []string{path, path + "?appId=mine"} {
				if _, body := e.rawAs(tokB, rt.method, p, ""); strings.Contains(body, `"mine"`) {
					t.Errorf("B's journal %s shows A's app: %s", p, body)
				}
			}
		},
	}
	unscoped := map[string]bool{"GET /v1/registry": true, "GET /v1/schemas": true, "GET /v1/schemas/:type": true}

	// The test must have something to hide: A's app is in the journal.
	if j, err := e.ctl.Journal(ctx, JournalOptions{AppID: "mine"}); err != nil || len(j.Entries) == 0 {
		t.Fatalf("ctl journal of mine = %+v, %v: the journal check would prove nothing", j, err)
	}

	fill := strings.NewReplacer(":appId", "mine", ":slot", "mail", ":id", "", ":type", "snug:net-request")
	for _, rt := range routes() {
		if rt.access != authed {
			continue
		}
		key := rt.method + " " + rt.path
		path := fill.Replace(rt.path)
		if strings.HasSuffix(rt.path, "/:id") {
			id := o.confirmID
			if strings.HasPrefix(rt.path, "/v1/standing") {
				id = o.standingID
			}
			path = strings.TrimSuffix(path, "/") + "/" + url.PathEscape(id)
		}
		body := ""
		if rt.limit > 0 {
			body = "{}"
		}
		switch rt.app {
		case scopePath:
			if rt.method == http.MethodPut && strings.HasSuffix(rt.path, ":slot") {
				b, _ := json.Marshal(PutConnectionRequest{Requirement: requirementJSON("mail", "evil.example.com")})
				body = string(b)
			}
			status, got := e.rawAs(tokB, rt.method, path, body)
			wantAppNotFound(rt, status, got)
		case scopeBody:
			switch key {
			case "POST /v1/net":
				b, _ := json.Marshal(NetRequest{AppID: "mine", Frame: netFrame("GET", "https://"+upHost+"/read"), Delivery: "app"})
				body = string(b)
			case "POST /v1/oauth/start":
				body = `{"appId":"mine","slot":"mail"}`
			case "POST /v1/standing":
				b, _ := json.Marshal(StandingRequest{AppID: "mine", Slot: "mail", Target: "t2", Trigger: "reply", MaxSends: 1, WindowSeconds: 60, UserGesture: true})
				body = string(b)
			default:
				t.Errorf("%s names its app in the body, and this test does not know its body: add it", key)
				continue
			}
			status, got := e.rawAs(tokB, rt.method, path, body)
			wantAppNotFound(rt, status, got)
		case scopeFiltered:
			check, ok := filtered[key]
			if !ok {
				t.Errorf("%s filters by app, and this test has no check for it: add one", key)
				continue
			}
			check(rt, path)
		case scopeNone:
			if !unscoped[key] {
				t.Errorf("%s says it reaches no app: an authed route must, unless it is one of %v", key, unscoped)
			}
		default:
			t.Errorf("%s does not say how it reaches an app", key)
		}
	}

	// Nothing of A's changed, and nothing left for A's upstream.
	conns, err := e.ctl.Connections(ctx, "mine")
	if err != nil || len(conns) != 2 {
		t.Fatalf("A's rows after B's walk = %+v, %v; want mail and draft only", conns, err)
	}
	for _, c := range conns {
		switch c.Slot {
		case "mail":
			if c.Status != "approved" || strings.Join(c.AllowedHosts, ",") != upHost || c.RequirementVersion != 1 || c.NeedsReapproval || c.State == nil || c.State.Status != "connected" {
				t.Errorf("A's mail after B's walk = %+v", c)
			}
		case "draft":
			if c.Status != "declared" {
				t.Errorf("A's draft after B's walk = %+v, want declared", c)
			}
		}
	}
	if cs, _ := o.a.Confirms(ctx); len(cs) != 1 || cs[0].ID != o.confirmID {
		t.Errorf("A's confirms after B's walk = %+v, want its parked one", cs)
	}
	if sts, _ := o.a.Standings(ctx); len(sts) != 1 || sts[0].ID != o.standingID {
		t.Errorf("A's standing approvals after B's walk = %+v, want its one", sts)
	}
	o.up.mu.Lock()
	sent := len(o.up.seen)
	o.up.mu.Unlock()
	if sent != 0 {
		t.Errorf("upstream saw %d requests, want none", sent)
	}
	if strings.Contains(e.logs.String(), ownedSecret) {
		t.Error("the log holds A's credential")
	}
	// The ctl channel sees everything.
	if rv, err := e.ctl.Review(ctx, "mine", "mail"); err != nil || rv.ReviewToken == "" {
		t.Errorf("ctl review of A's app = %v", err)
	}
}

// TestHintsOfAnotherHostsAppAreNotSent: B's event stream carries no
// doorbell for A's app (neither a connection change nor a confirm), while
// it does for an app B reaches.
func TestHintsOfAnotherHostsAppAreNotSent(t *testing.T) {
	o := newOwned(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	events := make(chan Event, 64)
	go o.b.Events(ctx, func(ev Event) error { events <- ev; return nil })
	// B's own doorbell: app1 (shared with B) changes; n makes each ring a
	// real change.
	n := 0
	ring := func() string {
		n++
		host := fmt.Sprintf("h%d.example.com", n)
		if _, err := o.e.ctl.PutConnection(ctx, "app1", "ring", requirementJSON("ring", host)); err != nil {
			t.Fatal(err)
		}
		return host
	}
	// until reads events until a hint for app1/ring arrives, ringing
	// again while the subscription may not be up yet.
	until := func(slot string, again bool) []Event {
		var seen []Event
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case ev := <-events:
				seen = append(seen, ev)
				if ev.Data.AppID == "app1" && ev.Data.Slot == slot {
					return seen
				}
			case <-tick.C:
				if again {
					ring()
				}
			case <-ctx.Done():
				t.Fatalf("no hint for app1/%s; saw %+v", slot, seen)
			}
		}
	}
	ring()
	until("ring", true)
	// A's writes and A's new confirm, then B's own doorbell once more.
	if _, err := o.a.PutConnection(ctx, "mine", "other", requirementJSON("other", upHost)); err != nil {
		t.Fatal(err)
	}
	go o.a.Net(ctx, NetRequest{AppID: "mine", Frame: netFrame("POST", "https://"+upHost+"/again"), Delivery: "app"})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if cs, _ := o.a.Confirms(ctx); len(cs) == 2 || time.Now().After(deadline) {
			break
		}
	}
	// The last doorbell has a slot of its own: every hint before it is in
	// the stream ahead of it.
	if _, err := o.e.ctl.PutConnection(ctx, "app1", "last", requirementJSON("last", upHost)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range until("last", false) {
		if ev.Data.AppID == "mine" || ev.Type == "confirm-pending" {
			t.Errorf("B heard %+v of A's app", ev)
		}
	}
}

// TestUnpairedHostsAppsGoToTheAdministrator: unpairing the owner leaves
// its apps to the ctl channel: no host reaches them, a new host cannot
// claim them by writing, until the administrator shares them.
func TestUnpairedHostsAppsGoToTheAdministrator(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	a := e.host(e.pair("desktop", ""), "")
	aID := newestHost(t, e)
	b := e.host(e.pair("desktop", ""), "")
	bID := newestHost(t, e)
	if _, err := a.PutConnection(ctx, "mine", "mail", requirementJSON("mail", "api.example.com")); err != nil {
		t.Fatal(err)
	}
	if acc, err := e.ctl.AppAccess(ctx, "mine"); err != nil || acc.Owner != aID || len(acc.Shared) != 0 {
		t.Fatalf("AppAccess = %+v, %v; want A the owner", acc, err)
	}
	// B's own app: A cannot see it either.
	if _, err := b.PutConnection(ctx, "theirs", "mail", requirementJSON("mail", "api.example.com")); err != nil {
		t.Fatal(err)
	}
	_, err := a.Connections(ctx, "theirs")
	wantAPIError(t, err, 404, errcode.AppNotFound)

	if err := e.ctl.DeleteHost(ctx, aID); err != nil {
		t.Fatal(err)
	}
	if acc, _ := e.ctl.AppAccess(ctx, "mine"); acc.Owner != "" {
		t.Fatalf("owner after unpairing = %q, want none (the administrator's)", acc.Owner)
	}
	_, err = b.PutConnection(ctx, "mine", "mail", requirementJSON("mail", "evil.example.com"))
	wantAPIError(t, err, 404, errcode.AppNotFound)
	_, err = b.PutConnection(ctx, "mine", "new", requirementJSON("new", "evil.example.com"))
	wantAPIError(t, err, 404, errcode.AppNotFound)

	if _, err := e.ctl.ShareApp(ctx, "mine", bID); err != nil {
		t.Fatal(err)
	}
	if conns, err := b.Connections(ctx, "mine"); err != nil || len(conns) != 1 {
		t.Fatalf("B after share = %+v, %v", conns, err)
	}
	// A share lets B write; it does not make B the owner.
	if _, err := b.PutConnection(ctx, "mine", "second", requirementJSON("second", "api.example.com")); err != nil {
		t.Fatalf("B writing a shared app: %v", err)
	}
	if acc, _ := e.ctl.AppAccess(ctx, "mine"); acc.Owner != "" || len(acc.Shared) != 1 || acc.Shared[0] != bID {
		t.Fatalf("access after B's write = %+v, want no owner and B's share", acc)
	}
	if _, err := e.ctl.UnshareApp(ctx, "mine", bID); err != nil {
		t.Fatal(err)
	}
	_, err = b.Connections(ctx, "mine")
	wantAPIError(t, err, 404, errcode.AppNotFound)
	_, err = e.ctl.ShareApp(ctx, "mine", "h_nobody")
	wantAPIError(t, err, 404, errcode.HostNotFound)
	_, err = e.ctl.ShareApp(ctx, "nothing-here", bID)
	wantAPIError(t, err, 404, errcode.AppNotFound)
}

// TestApproveOverTheAPINeedsTheReviewToken: approve with {} (what every
// host sent before) is refused and writes nothing; the review's token
// approves; a token of a review older than the row is 409 REVIEW_STALE.
// conformance: P3-C12.3-21
func TestApproveOverTheAPINeedsTheReviewToken(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	tok := e.pair("desktop", "")
	h := e.host(tok, "")
	if _, err := h.PutConnection(ctx, "app", "mail", requirementJSON("mail", "api.example.com")); err != nil {
		t.Fatal(err)
	}
	if status, body := e.rawAs(tok, http.MethodPost, "/v1/apps/app/connections/mail/approve", "{}"); status != 400 || errCode(body) != string(errcode.BadRequest) {
		t.Errorf("approve {} = %d %s, want 400", status, body)
	}
	rv, err := h.Review(ctx, "app", "mail")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.PutConnection(ctx, "app", "mail", requirementJSON("mail", "evil.example.com")); err != nil {
		t.Fatal(err)
	}
	_, err = h.ApproveReview(ctx, "app", "mail", rv.ReviewToken)
	wantAPIError(t, err, 409, errcode.ReviewStale)
	conns, _ := h.Connections(ctx, "app")
	if len(conns) != 1 || conns[0].Status != "declared" {
		t.Fatalf("after stale approve = %+v, want declared", conns)
	}
	rv, _ = h.Review(ctx, "app", "mail")
	if c, err := h.ApproveReview(ctx, "app", "mail", rv.ReviewToken); err != nil || c.Status != "approved" {
		t.Fatalf("approve with the fresh token = %+v, %v", c, err)
	}
}
