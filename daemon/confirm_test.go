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
)

func post(body string) []byte {
	return frame("POST", "https://api.example.com/send", map[string]any{"body": body})
}

// parkedNet starts a request and returns its result channel.
func (r *rig) parkedNet(ctx context.Context, t *testing.T, app string, f []byte) <-chan NetResult {
	ch := make(chan NetResult, 1)
	go func() {
		res := r.d.Net(ctx, NetCall{AppID: app, Frame: f, Delivery: DeliveryApp})
		ch <- res
	}()
	return ch
}

// conformance: P3-L16-09, P3-L16-10, P3-X14-25, P3-X14-28, P3-L16-08
func TestConfirmFIFO(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	first := r.parkedNet(context.Background(), t, "app1", post(`{"n":1}`))
	waitConfirms(t, r.d, 1)
	second := r.parkedNet(context.Background(), t, "app1", post(`{"n":2}`))
	cs := waitConfirms(t, r.d, 2)
	if cs[0].Body != `{"n":1}` || cs[1].Body != `{"n":2}` {
		t.Fatalf("Confirms() = %+v, want arrival order", cs)
	}
	c := cs[0]
	if c.Host != apiHost || c.Method != "POST" || c.URL != "https://api.example.com/send" || c.Slot != "ex" || c.Probe || len(c.ID) != 32 || c.ID == cs[1].ID {
		t.Errorf("confirm = %+v", c)
	}
	if got, ok := r.d.ConfirmByID(c.ID); !ok || got.ID != c.ID {
		t.Errorf("ConfirmByID(%q) = %v", c.ID, ok)
	}
	// A forged or guessed id decides nothing.
	if err := r.d.DecideConfirm("0123456789abcdef0123456789abcdef", true, RememberOnce); !errorsIsCode(err, errcode.NotFound) {
		t.Fatalf("DecideConfirm(forged) = %v, want NOT_FOUND", err)
	}
	// Deciding the second first leaves the first's resolver intact.
	if err := r.d.DecideConfirm(cs[1].ID, false, RememberOnce); err != nil {
		t.Fatal(err)
	}
	if res := <-second; res.Code != errcode.NetConfirmDenied {
		t.Fatalf("second = %q, want NET_CONFIRM_DENIED", res.Code)
	}
	if err := r.d.DecideConfirm(c.ID, true, RememberOnce); err != nil {
		t.Fatal(err)
	}
	if res := <-first; res.Code != "" {
		t.Fatalf("first = %q, want ok", res.Code)
	}
	// Deciding again is a no-op.
	if err := r.d.DecideConfirm(c.ID, false, RememberOnce); err != nil {
		t.Errorf("DecideConfirm(decided) = %v, want nil", err)
	}
}

func errorsIsCode(err error, c errcode.Code) bool {
	got, _ := errcode.CodeOf(err)
	return got == c
}

// conformance: P3-L16-11
func TestConfirmCallerGone(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	ctxA, cancelA := context.WithCancel(context.Background())
	a := r.parkedNet(ctxA, t, "app1", post(`{"turn":"A"}`))
	waitConfirms(t, r.d, 1)
	b := r.parkedNet(context.Background(), t, "app1", post(`{"turn":"B"}`))
	waitConfirms(t, r.d, 2)
	cancelA()
	if res := <-a; res.Code != errcode.NetConfirmDenied {
		t.Fatalf("A = %q, want NET_CONFIRM_DENIED", res.Code)
	}
	cs := r.d.Confirms()
	if len(cs) != 1 || cs[0].Body != `{"turn":"B"}` {
		t.Fatalf("after A left, Confirms() = %+v, want only B's", cs)
	}
	r.d.DecideConfirm(cs[0].ID, true, RememberOnce)
	if res := <-b; res.Code != "" {
		t.Fatalf("B = %q, want ok", res.Code)
	}
	if n := len(r.up.requests()); n != 1 {
		t.Errorf("upstream requests = %d, want 1 (B only)", n)
	}
}

// conformance: P3-L16-12
func TestDenyAfterDecide(t *testing.T) {
	b := newConfirmBroker(time.Hour, newHintBus(), time.Now)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var got bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		got = b.ask(ctx, Confirm{AppID: "a", Host: "h", Method: "POST"}) == askAllowed
	}()
	var p *parkedConfirm
	for p == nil {
		b.mu.Lock()
		if len(b.queue) > 0 {
			p = b.queue[0]
		}
		b.mu.Unlock()
	}
	b.resolve(p, true, RememberOnce)
	cancel()                          // the turn aborts after the decision
	b.resolve(p, false, RememberOnce) // and a late deny arrives
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
		b := newConfirmBroker(2*time.Minute, newHintBus(), time.Now)
		start := time.Now()
		done := make(chan bool)
		go func() {
			done <- b.ask(context.Background(), Confirm{AppID: "a", Host: "h", Method: "DELETE"}) == askAllowed
		}()
		synctest.Wait()
		if len(b.pending()) != 1 {
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
		if len(b.pending()) != 0 {
			t.Error("timed-out confirm still pending")
		}
	})
}

// TestSessionMemory: "allow for this session" answers later requests
// with exactly the same (app, host, method) and nothing else, and any
// write to the app's connections clears it (ruling R10).
//
// conformance: P3-X14-24
func TestSessionMemory(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	r.connect(t, "app1", noneReq("b", "b.example.com"), nil)
	r.connect(t, "app2", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	ask := r.promptAnswer
	if p, code := ask(t, "app1", post("{}"), true, RememberSession); !p || code != "" {
		t.Fatalf("first = %v %q, want a prompt and ok", p, code)
	}
	if p, code := ask(t, "app1", post("{}"), false, RememberOnce); p || code != "" {
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
		if p, code := ask(t, tc.app, tc.f, false, RememberOnce); !p || code != errcode.NetConfirmDenied {
			t.Fatalf("other key %s %s = %v %q, want a prompt", tc.app, tc.f, p, code)
		}
	}
	if err := r.d.SetCredentials(context.Background(), "app1", "ex", map[string]string{"api_key": "rotated"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := ask(t, "app1", post("{}"), false, RememberOnce); !p {
		t.Fatal("session memory survived a connection write")
	}
}

// conformance: P3-X14-27
func TestCloseDeniesParkedConfirms(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	ch := r.parkedNet(context.Background(), t, "app1", post("{}"))
	waitConfirms(t, r.d, 1)
	r.d.confirms.close()
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var parked []<-chan NetResult
	for range maxParkedPerApp {
		parked = append(parked, r.parkedNet(ctx, t, "app1", post("{}")))
	}
	waitConfirms(t, r.d, maxParkedPerApp)
	res, resp := r.net(t, "app1", post("{}"))
	if res.Code != errcode.NetConfirmDenied || !strings.Contains(resp.Error.Message, "too many") {
		t.Fatalf("request beyond the bound = %q %+v, want NET_CONFIRM_DENIED at once", res.Code, resp.Error)
	}
	if n := len(r.d.Confirms()); n != maxParkedPerApp {
		t.Errorf("parked = %d, want %d", n, maxParkedPerApp)
	}
	other := r.parkedNet(ctx, t, "app2", post("{}"))
	waitConfirms(t, r.d, maxParkedPerApp+1)
	// Deciding one of app1's makes room for the next.
	for _, c := range r.d.Confirms() {
		if c.AppID == "app1" {
			r.d.DecideConfirm(c.ID, false, RememberOnce)
			break
		}
	}
	for len(r.d.Confirms()) != maxParkedPerApp {
		time.Sleep(time.Millisecond)
	}
	parked = append(parked, r.parkedNet(ctx, t, "app1", post("{}")))
	waitConfirms(t, r.d, maxParkedPerApp+1)
	cancel()
	for _, ch := range append(parked, other) {
		<-ch
	}
	if n := len(r.up.requests()); n != 0 {
		t.Errorf("upstream requests = %d, want 0", n)
	}

	// The daemon-wide bound, on the broker alone.
	b := newConfirmBroker(time.Hour, newHintBus(), time.Now)
	bctx, bcancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range maxParked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.ask(bctx, Confirm{AppID: fmt.Sprintf("app%d", i), Host: "h", Method: "POST"})
		}()
	}
	for len(b.pending()) < maxParked {
		time.Sleep(time.Millisecond)
	}
	if got := b.ask(bctx, Confirm{AppID: "late", Host: "h", Method: "POST"}); got != askFull {
		t.Errorf("ask beyond maxParked = %d, want askFull", got)
	}
	bcancel()
	wg.Wait()
}
