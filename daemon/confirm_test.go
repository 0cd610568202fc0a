package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/hostauth"
)

func post(body string) []byte {
	return frame("POST", "https://api.example.com/send", map[string]any{"body": body})
}

// parkedNet starts a request and returns its result channel.
func (r *rig) parkedNet(ctx context.Context, t *testing.T, app string, f []byte) <-chan fetch.NetResult {
	ch := make(chan fetch.NetResult, 1)
	go func() {
		res := r.d.exec.Net(ctx, fetch.NetCall{AppID: app, Frame: f, Delivery: fetch.DeliveryApp})
		ch <- res
	}()
	return ch
}

// conformance: P3-L16-09, P3-L16-10, P3-X14-25, P3-X14-28, P3-L16-08
func TestConfirmFIFO(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	first := r.parkedNet(t.Context(), t, "app1", post(`{"n":1}`))
	waitConfirms(t, r.d, 1)
	second := r.parkedNet(t.Context(), t, "app1", post(`{"n":2}`))
	cs := waitConfirms(t, r.d, 2)
	if cs[0].Body != `{"n":1}` || cs[1].Body != `{"n":2}` {
		t.Fatalf("Confirms() = %+v, want arrival order", cs)
	}
	c := cs[0]
	if c.Host != apiHost || c.Method != "POST" || c.URL != "https://api.example.com/send" || c.Slot != "ex" || c.Probe || len(c.ID) != 32 || c.ID == cs[1].ID {
		t.Errorf("confirm = %+v", c)
	}
	if got, ok := r.d.exec.ConfirmByID(context.Background(), c.ID); !ok || got.ID != c.ID {
		t.Errorf("ConfirmByID(%q) = %v", c.ID, ok)
	}
	// A forged or guessed id decides nothing.
	if err := r.d.exec.DecideConfirm("0123456789abcdef0123456789abcdef", true, fetch.RememberOnce); !errorsIsCode(err, errcode.NotFound) {
		t.Fatalf("DecideConfirm(forged) = %v, want NOT_FOUND", err)
	}
	// Deciding the second first leaves the first's resolver intact.
	if err := r.d.exec.DecideConfirm(cs[1].ID, false, fetch.RememberOnce); err != nil {
		t.Fatal(err)
	}
	if res := <-second; res.Code != errcode.NetConfirmDenied {
		t.Fatalf("second = %q, want NET_CONFIRM_DENIED", res.Code)
	}
	if err := r.d.exec.DecideConfirm(c.ID, true, fetch.RememberOnce); err != nil {
		t.Fatal(err)
	}
	if res := <-first; res.Code != "" {
		t.Fatalf("first = %q, want ok", res.Code)
	}
	// Deciding again is a no-op.
	if err := r.d.exec.DecideConfirm(c.ID, false, fetch.RememberOnce); err != nil {
		t.Errorf("DecideConfirm(decided) = %v, want nil", err)
	}
}

// subscribe subscribes to a bare hint bus (a broker tested alone).
func subscribe(b *hints.Bus) <-chan hints.Hint {
	return b.Subscribe(context.Background())
}

func errorsIsCode(err error, c errcode.Code) bool {
	got, _ := errcode.CodeOf(err)
	return got == c
}

// conformance: P3-L16-11
func TestConfirmCallerGone(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	ctxA, cancelA := context.WithCancel(t.Context())
	a := r.parkedNet(ctxA, t, "app1", post(`{"turn":"A"}`))
	waitConfirms(t, r.d, 1)
	b := r.parkedNet(t.Context(), t, "app1", post(`{"turn":"B"}`))
	waitConfirms(t, r.d, 2)
	cancelA()
	if res := <-a; res.Code != errcode.NetConfirmDenied {
		t.Fatalf("A = %q, want NET_CONFIRM_DENIED", res.Code)
	}
	cs := r.d.exec.Confirms(context.Background())
	if len(cs) != 1 || cs[0].Body != `{"turn":"B"}` {
		t.Fatalf("after A left, Confirms() = %+v, want only B's", cs)
	}
	r.d.exec.DecideConfirm(cs[0].ID, true, fetch.RememberOnce)
	if res := <-b; res.Code != "" {
		t.Fatalf("B = %q, want ok", res.Code)
	}
	if n := len(r.up.requests()); n != 1 {
		t.Errorf("upstream requests = %d, want 1 (B only)", n)
	}
}

// conformance: P3-L16-12
func TestDenyAfterDecide(t *testing.T) {
	bus := hints.NewBus()
	b := fetch.NewConfirmBroker(time.Hour, bus, time.Now)
	hints := subscribe(bus)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var got bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, _ := b.Ask(ctx, fetch.Confirm{AppID: "a", Host: "h", Method: "POST"})
		got = res == fetch.AskAllowed
	}()
	<-hints // parked
	b.Mu.Lock()
	p := b.Queue[0]
	b.Mu.Unlock()
	b.ResolveBy(p, true, fetch.RememberOnce, fetch.DeniedByUser)
	cancel()                                                      // the turn aborts after the decision
	b.ResolveBy(p, false, fetch.RememberOnce, fetch.DeniedByUser) // and a late deny arrives
	wg.Wait()
	if !got {
		t.Fatal("ask = denied, want the allow decided first")
	}
}

// TestConfirmTimeout runs the broker on a fake clock: an unanswered
// confirm is denied after ConfirmTimeout, and only then.
//
// conformance: P3-X14-27
func TestConfirmTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := fetch.NewConfirmBroker(2*time.Minute, hints.NewBus(), time.Now)
		start := time.Now()
		done := make(chan bool)
		go func() {
			res, _ := b.Ask(t.Context(), fetch.Confirm{AppID: "a", Host: "h", Method: "DELETE"})
			done <- res == fetch.AskAllowed
		}()
		synctest.Wait()
		if len(b.Pending()) != 1 {
			t.Fatal("confirm not parked")
		}
		time.Sleep(119 * time.Second)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("denied before the timeout")
		default:
		}
		if allow := <-done; allow || time.Since(start) != 2*time.Minute {
			t.Fatalf("ask = %v after %v, want a deny after 2m", allow, time.Since(start))
		}
		if len(b.Pending()) != 0 {
			t.Error("timed-out confirm still pending")
		}
	})
}

// TestSessionMemory: "allow for this session" answers later requests
// with exactly the same (app, host, method) and nothing else, and any
// write to the app's connections clears it.
//
// conformance: P3-X14-24
func TestSessionMemory(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	r.connect(t, "app1", noneReq("b", "b.example.com"), nil)
	r.connect(t, "app2", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	ask := r.promptAnswer
	if p, code := ask(t, "app1", post("{}"), true, fetch.RememberSession); !p || code != "" {
		t.Fatalf("first = %v %q, want a prompt and ok", p, code)
	}
	if p, code := ask(t, "app1", post("{}"), false, fetch.RememberOnce); p || code != "" {
		t.Fatalf("same key = %v %q, want no prompt", p, code)
	}
	for _, tc := range []struct {
		app string
		f   []byte
	}{
		{"app1", frame("PUT", "https://api.example.com/send", map[string]any{"body": "{}"})},
		{"app1", frame("POST", "https://b.example.com/send", map[string]any{"body": "{}"})},
		{"app2", post("{}")},
	} {
		if p, code := ask(t, tc.app, tc.f, false, fetch.RememberOnce); !p || code != errcode.NetConfirmDenied {
			t.Fatalf("other key %s %s = %v %q, want a prompt", tc.app, tc.f, p, code)
		}
	}
	if err := r.d.grants.SetCredentials(t.Context(), "app1", "ex", map[string]string{"api_key": "rotated"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := ask(t, "app1", post("{}"), false, fetch.RememberOnce); !p {
		t.Fatal("session memory survived a connection write")
	}
}

// conformance: P3-X14-27
func TestCloseDeniesParkedConfirms(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	ch := r.parkedNet(t.Context(), t, "app1", post("{}"))
	waitConfirms(t, r.d, 1)
	r.d.BeginShutdown()
	if res := <-ch; res.Code != errcode.NetConfirmDenied {
		t.Fatalf("parked request after close = %q, want NET_CONFIRM_DENIED", res.Code)
	}
}

// TestConfirmQueueBounded: an app that floods mutating requests parks at
// most maxParkedPerApp of them; the rest are denied at once, without a
// prompt, while other apps still get theirs; and the whole queue holds at
// most maxParked.
//
// conformance: P3-X14-24, P3-X14-27
func TestConfirmQueueBounded(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	r.connect(t, "app2", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var parked []<-chan fetch.NetResult
	for range fetch.MaxParkedPerApp {
		parked = append(parked, r.parkedNet(ctx, t, "app1", post("{}")))
	}
	waitConfirms(t, r.d, fetch.MaxParkedPerApp)
	// Denied at once: one that parks instead waits out this deadline and
	// ends denied as a caller gone, not "too many".
	late, stop := context.WithTimeout(ctx, 20*time.Second)
	res, resp := r.netCtx(t, late, "app1", post("{}"), fetch.DeliveryApp)
	stop()
	if res.Code != errcode.NetConfirmDenied || !strings.Contains(resp.Error.Message, "too many") {
		t.Fatalf("request beyond the bound = %q %+v, want NET_CONFIRM_DENIED at once", res.Code, resp.Error)
	}
	if n := len(r.d.exec.Confirms(context.Background())); n != fetch.MaxParkedPerApp {
		t.Errorf("parked = %d, want %d", n, fetch.MaxParkedPerApp)
	}
	other := r.parkedNet(ctx, t, "app2", post("{}"))
	waitConfirms(t, r.d, fetch.MaxParkedPerApp+1)
	// Deciding one of app1's makes room for the next.
	for _, c := range r.d.exec.Confirms(context.Background()) {
		if c.AppID == "app1" {
			r.d.exec.DecideConfirm(c.ID, false, fetch.RememberOnce)
			break
		}
	}
	// The decision took the confirm off the queue before it returned.
	if n := len(r.d.exec.Confirms(context.Background())); n != fetch.MaxParkedPerApp {
		t.Fatalf("after a decision, parked = %d, want %d", n, fetch.MaxParkedPerApp)
	}
	parked = append(parked, r.parkedNet(ctx, t, "app1", post("{}")))
	waitConfirms(t, r.d, fetch.MaxParkedPerApp+1)
	cancel()
	for _, ch := range append(parked, other) {
		<-ch
	}
	if n := len(r.up.requests()); n != 0 {
		t.Errorf("upstream requests = %d, want 0", n)
	}

	// The daemon-wide bound, on the broker alone.
	bus := hints.NewBus()
	b := fetch.NewConfirmBroker(time.Hour, bus, time.Now)
	bctx, bcancel := context.WithCancel(t.Context())
	hints := subscribe(bus)
	var wg sync.WaitGroup
	for i := range fetch.MaxParked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.Ask(bctx, fetch.Confirm{AppID: fmt.Sprintf("app%d", i), Host: "h", Method: "POST"})
		}()
	}
	for len(b.Pending()) < fetch.MaxParked {
		<-hints // each ask rings after it parked; a dropped ring means more are buffered
	}
	// The ask beyond the bound must come back at once: one that parks
	// instead waits out this deadline and ends denied, not askFull.
	lctx, lcancel := context.WithTimeout(bctx, 20*time.Second)
	if got, _ := b.Ask(lctx, fetch.Confirm{AppID: "late", Host: "h", Method: "POST"}); got != fetch.AskFull {
		t.Errorf("ask beyond maxParked = %d, want askFull", got)
	}
	lcancel()
	bcancel()
	wg.Wait()
}

// withdrawRig is a rig with a paired desktop host whose call is parked on
// a confirm, bound to the host as the API binds it (BindHost): the three
// interleavings of issue 18 start from it.
type withdrawRig struct {
	*rig
	hostID string
	res    <-chan fetch.NetResult
	id     string // the parked confirm's id
}

func newWithdrawRig(t *testing.T) *withdrawRig {
	t.Helper()
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	h, err := r.d.hosts.Authenticate(t.Context(), pairHost(t, r.d, hostauth.SurfaceDesktop, ""), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := r.d.hosts.Bind(t.Context(), h.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	ch := make(chan fetch.NetResult, 1)
	go func() {
		// The API's chain puts the caller in the request's context.
		ch <- r.d.exec.Net(hostauth.WithHost(ctx, h.ID), fetch.NetCall{AppID: "app1", Frame: post("{}"), Delivery: fetch.DeliveryApp})
	}()
	cs := waitConfirms(t, r.d, 1)
	if cs[0].HostID != h.ID {
		t.Fatalf("parked confirm's host = %q, want %q", cs[0].HostID, h.ID)
	}
	return &withdrawRig{rig: r, hostID: h.ID, res: ch, id: cs[0].ID}
}

// denied checks the parked call ended NET_CONFIRM_DENIED with message msg,
// no credential read and no upstream request.
func (w *withdrawRig) denied(t *testing.T, msg string) {
	t.Helper()
	res := <-w.res
	if res.Code != errcode.NetConfirmDenied || !strings.Contains(string(res.Frame), msg) {
		t.Errorf("parked call = %s, want NET_CONFIRM_DENIED %q", res.Frame, msg)
	}
	if n := w.reads.Load(); n != 0 {
		t.Errorf("credential reads = %d, want 0", n)
	}
	if n := len(w.up.requests()); n != 0 {
		t.Errorf("upstream requests = %d, want 0", n)
	}
	if cs := w.d.exec.Confirms(context.Background()); len(cs) != 0 {
		t.Errorf("pending confirms = %+v, want none", cs)
	}
}

// TestUnpairThenAllow: DeleteHost withdraws the host's parked confirm
// before it returns, so an allow after it is a no-op that says so
// (CONFIRM_WITHDRAWN), never an allow.
//
// conformance: P3-X14-27
func TestUnpairThenAllow(t *testing.T) {
	w := newWithdrawRig(t)
	if err := w.d.deleteHost(t.Context(), w.hostID); err != nil {
		t.Fatal(err)
	}
	if cs := w.d.exec.Confirms(context.Background()); len(cs) != 0 {
		t.Fatalf("after DeleteHost returned, pending confirms = %+v, want none", cs)
	}
	if err := w.d.exec.DecideConfirm(w.id, true, fetch.RememberSession); !errorsIsCode(err, errcode.ConfirmWithdrawn) {
		t.Fatalf("DecideConfirm(allow) after the unpairing = %v, want CONFIRM_WITHDRAWN", err)
	}
	w.denied(t, "unpaired")
	if w.d.confirms.SessionAllows("app1", apiHost, "POST") {
		t.Error("a withdrawn confirm's allow was remembered for the session")
	}
}

// TestAllowThenUnpair: the allow arrives first, and the unpairing lands
// before the request takes it (the claim hook runs DeleteHost at exactly
// that point): the allow is void, the call is denied before gate 6 ends.
//
// conformance: P3-X14-27
func TestAllowThenUnpair(t *testing.T) {
	w := newWithdrawRig(t)
	var unpaired error
	hook := func(c fetch.Confirm) {
		if c.ID == w.id {
			unpaired = w.d.deleteHost(context.WithoutCancel(t.Context()), w.hostID)
		}
	}
	fetch.TestHookClaim.Store(&hook)
	t.Cleanup(func() { fetch.TestHookClaim.Store(nil) })
	if err := w.d.exec.DecideConfirm(w.id, true, fetch.RememberSession); err != nil {
		t.Fatalf("DecideConfirm(allow) = %v, want nil", err)
	}
	w.denied(t, "unpaired")
	if unpaired != nil {
		t.Fatalf("DeleteHost = %v", unpaired)
	}
	if w.d.confirms.SessionAllows("app1", apiHost, "POST") {
		t.Error("a voided allow's session memory survived the unpairing")
	}
	if err := w.d.exec.DecideConfirm(w.id, true, fetch.RememberOnce); !errorsIsCode(err, errcode.ConfirmWithdrawn) {
		t.Errorf("a second decision after the unpairing = %v, want CONFIRM_WITHDRAWN", err)
	}
}

// TestShutdownThenAllow: BeginShutdown denies the parked confirm before it
// returns, with its own reason; a late allow is a no-op that says so, and
// a confirm asked afterwards is denied at once without parking.
//
// conformance: P3-X14-27
func TestShutdownThenAllow(t *testing.T) {
	w := newWithdrawRig(t)
	w.d.BeginShutdown()
	if cs := w.d.exec.Confirms(context.Background()); len(cs) != 0 {
		t.Fatalf("after BeginShutdown returned, pending confirms = %+v, want none", cs)
	}
	if err := w.d.exec.DecideConfirm(w.id, true, fetch.RememberOnce); !errorsIsCode(err, errcode.ConfirmWithdrawn) {
		t.Fatalf("DecideConfirm(allow) after shutdown began = %v, want CONFIRM_WITHDRAWN", err)
	}
	w.denied(t, "shutting down")
	res, resp := w.net(t, "app1", post("{}"))
	if res.Code != errcode.NetConfirmDenied || !strings.Contains(resp.Error.Message, "shutting down") {
		t.Errorf("a request after shutdown began = %q %+v, want NET_CONFIRM_DENIED at once", res.Code, resp.Error)
	}
}

// TestWithdrawHostLeavesOthers: unpairing one host leaves another host's
// and the ctl channel's confirms parked and decidable: withdrawal is by
// reference to the host, as an aborted turn's is by reference to itself.
//
// conformance: P3-L16-11
func TestWithdrawHostLeavesOthers(t *testing.T) {
	w := newWithdrawRig(t)
	ctl := w.parkedNet(t.Context(), t, "app1", post(`{"ctl":1}`))
	waitConfirms(t, w.d, 2)
	if n := w.d.confirms.WithdrawHost("another-host"); n != 0 {
		t.Errorf("WithdrawHost(another) = %d, want 0", n)
	}
	if n := w.d.confirms.WithdrawHost(""); n != 0 {
		t.Errorf(`WithdrawHost("") = %d, want 0`, n)
	}
	if err := w.d.deleteHost(t.Context(), w.hostID); err != nil {
		t.Fatal(err)
	}
	if res := <-w.res; res.Code != errcode.NetConfirmDenied {
		t.Errorf("the unpaired host's call = %q, want NET_CONFIRM_DENIED", res.Code)
	}
	cs := w.d.exec.Confirms(context.Background())
	if len(cs) != 1 || cs[0].HostID != "" {
		t.Fatalf("pending after the unpairing = %+v, want the ctl call's", cs)
	}
	if err := w.d.exec.DecideConfirm(cs[0].ID, true, fetch.RememberOnce); err != nil {
		t.Fatal(err)
	}
	if res := <-ctl; res.Code != "" {
		t.Errorf("ctl call = %q, want ok", res.Code)
	}
}

// TestConfirmDeniedDelete: DELETE is a mutating method: it parks at the
// confirm like a POST, and a denial ends it NET_CONFIRM_DENIED with
// nothing sent and no credential read.
//
// conformance: P3-L16-09, P3-X14-25
func TestConfirmDeniedDelete(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	seen := r.autoDecide(t, false, fetch.RememberOnce)
	res, _ := r.net(t, "app1", frame("DELETE", "https://api.example.com/items/1", nil))
	if res.Code != errcode.NetConfirmDenied {
		t.Fatalf("DELETE denied = %q, want NET_CONFIRM_DENIED", res.Code)
	}
	select {
	case c := <-seen:
		if c.Method != "DELETE" {
			t.Errorf("confirm method = %q, want DELETE", c.Method)
		}
	default:
		t.Fatal("the DELETE was never asked")
	}
	if n := len(r.up.requests()); n != 0 || r.reads.Load() != 0 {
		t.Fatalf("upstream saw %d requests, %d credential reads; want none", n, r.reads.Load())
	}
}
