package daemon

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/internal/store"
)

// The tests in this file hold the executor's gates at the edges a
// one-token change would move: every member of the confirm set and
// every method outside it, each end of the status classes gates 9 and 10
// sort an answer into, the empty body a content coding may name, a
// .invalid name that is no sidecar, and each comparison the re-grant
// makes after the confirm.

// TestConfirmSetEveryMethod: POST, PUT, PATCH and DELETE each park at the
// confirm, and a denial sends nothing and reads no credential; GET and
// HEAD are never asked and go out at once.
//
// conformance: P3-X14-25, P3-L16-09
func TestConfirmSetEveryMethod(t *testing.T) {
	cases := []struct {
		method string
		body   bool
		asked  bool
	}{
		{"POST", true, true},
		{"PUT", true, true},
		{"PATCH", true, true},
		{"DELETE", false, true},
		{"GET", false, false},
		{"HEAD", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			seen := r.autoDecide(t, false, fetch.RememberOnce)
			var extra map[string]any
			if tc.body {
				extra = map[string]any{"body": `{"x":1}`}
			}
			res, _ := r.net(t, "app1", frame(tc.method, "https://api.example.com/items/1", extra))
			if !tc.asked {
				if res.Code != "" {
					t.Fatalf("%s = %q, want it sent unasked", tc.method, res.Code)
				}
				if got := r.up.last(t).Method; got != tc.method {
					t.Errorf("upstream method = %q, want %q", got, tc.method)
				}
				select {
				case c := <-seen:
					t.Fatalf("%s was asked: %+v", tc.method, c)
				default:
				}
				return
			}
			if res.Code != errcode.NetConfirmDenied {
				t.Fatalf("%s denied = %q, want NET_CONFIRM_DENIED", tc.method, res.Code)
			}
			select {
			case c := <-seen:
				if c.Method != tc.method {
					t.Errorf("confirm method = %q, want %q", c.Method, tc.method)
				}
			default:
				t.Fatalf("the %s was never asked", tc.method)
			}
			if n := len(r.up.requests()); n != 0 || r.reads.Load() != 0 {
				t.Fatalf("upstream saw %d requests, %d credential reads; want none", n, r.reads.Load())
			}
		})
	}
}

// TestAnswerStatusEnds: each end of the classes an upstream status falls
// in. Below 100 and above 599 is NET_FETCH_FAILED, 100 and 599 pass; 299
// passes and 300 to 399 are NET_REDIRECT_BLOCKED; from 400 the result
// carries the provider's error extract, below it none. A helper answers,
// as a network server cannot send a final 1xx or a status under 100.
//
// conformance: P3-X14-37, P3-X14-32
func TestAnswerStatusEnds(t *testing.T) {
	const token = "helper-token-0123456789abcdef0123456789abcdef"
	const body = `{"error":{"message":"quota exceeded for this key"}}`
	cases := []struct {
		status   int
		want     errcode.Code
		provider bool
	}{
		{99, errcode.NetFetchFailed, false},
		{100, "", false},
		{299, "", false},
		{300, errcode.NetRedirectBlocked, false},
		{399, errcode.NetRedirectBlocked, false},
		{400, "", true},
		{599, "", true},
		{600, errcode.NetFetchFailed, false},
	}
	for _, tc := range cases {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			h := &fakeHelper{status: tc.status, header: http.Header{"Content-Type": {"application/json"}}, body: body}
			r := newRig(t, func(c *Config) { c.Helpers = helpersOf(map[string]*fakeHelper{"sim": h}) })
			r.connectSim(t, "app1", "wa", map[string]string{"helper_token": token})
			res, resp := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/v1/chats", nil))
			if res.Code != tc.want {
				t.Fatalf("Net with status %d = %q, want %q", tc.status, res.Code, tc.want)
			}
			if len(h.requests()) != 1 {
				t.Fatalf("helper requests = %d, want 1", len(h.requests()))
			}
			if tc.want != "" {
				return
			}
			if resp.Status != tc.status || res.Status != tc.status {
				t.Errorf("status = %d (result %d), want %d", resp.Status, res.Status, tc.status)
			}
			if got := res.ProviderError != ""; got != tc.provider {
				t.Errorf("status %d: provider error %q, want one: %v", tc.status, res.ProviderError, tc.provider)
			}
		})
	}
}

// TestEmptyBodyMayNameACoding: an answer in a content coding is refused
// because the scrub cannot read inside it; an empty body holds nothing to
// read, so a 204 naming gzip passes.
//
// conformance: P3-X14-32
func TestEmptyBodyMayNameACoding(t *testing.T) {
	const token = "helper-token-0123456789abcdef0123456789abcdef"
	h := &fakeHelper{status: 204, header: http.Header{"Content-Encoding": {"gzip"}}}
	r := newRig(t, func(c *Config) { c.Helpers = helpersOf(map[string]*fakeHelper{"sim": h}) })
	r.connectSim(t, "app1", "wa", map[string]string{"helper_token": token})
	res, resp := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/v1/chats", nil))
	if res.Code != "" || resp.Status != 204 {
		t.Fatalf("Net = %q, status %d; want a 204", res.Code, resp.Status)
	}
}

// TestInvalidNameNeverLookedUp: a name under .invalid that is no
// registered helper's sidecar host refuses as a DNS miss would, without a
// lookup: such a name never reaches DNS.
//
// conformance: P3-X14-22
func TestInvalidNameNeverLookedUp(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", noneReq("dev", "printer.invalid"), nil)
	res, _ := r.net(t, "app1", frame("GET", "https://printer.invalid/status", nil))
	if res.Code != errcode.NetFetchFailed {
		t.Fatalf("Net = %q, want NET_FETCH_FAILED", res.Code)
	}
	if n := r.resolver.Lookups(); n != 0 {
		t.Errorf("the .invalid name was looked up %d times: %v", n, r.resolver.Asked())
	}
	if n := len(r.dialer.Dials()); n != 0 {
		t.Errorf("the .invalid name was dialed %d times", n)
	}
}

// TestRegrantComparesSlotAndKind: after the confirm the re-grant lets the
// request on only when the same slot, of the same kind, is still the one
// grant covering the host. Another slot taking the host over while the
// request waited, or the slot re-approved as another kind, refuses it
// NET_NOT_APPROVED with nothing sent and no credential read.
//
// conformance: P3-X14-08, P3-X14-10, P3-X14-12
func TestRegrantComparesSlotAndKind(t *testing.T) {
	ctx := t.Context()
	cases := []struct {
		name   string
		change func(t *testing.T, r *rig)
	}{
		{"another slot took the host", func(t *testing.T, r *rig) {
			if _, err := r.d.grants.Revoke(ctx, "app1", "ex"); err != nil {
				t.Fatal(err)
			}
			r.connect(t, "app1", apiKeyReq("ex2", apiHost), map[string]string{"api_key": secretKey})
		}},
		{"the slot re-approved as another kind", func(t *testing.T, r *rig) {
			if _, err := r.d.grants.StagePending(ctx, "app1", mustAdmit(t, noneReq("ex", apiHost))); err != nil {
				t.Fatal(err)
			}
			if _, err := r.d.grants.Reapprove(ctx, "app1", "ex"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			ch := r.parkedNet(ctx, t, "app1", frame("POST", "https://api.example.com/send", map[string]any{"body": `{"x":1}`}))
			cs := waitConfirms(t, r.d, 1)
			tc.change(t, r)
			reads := r.reads.Load()
			if err := r.d.exec.DecideConfirm(cs[0].ID, true, fetch.RememberOnce); err != nil {
				t.Fatal(err)
			}
			res := <-ch
			if res.Code != errcode.NetNotApproved {
				t.Fatalf("Net after the change = %q, want NET_NOT_APPROVED", res.Code)
			}
			if n := len(r.up.requests()); n != 0 {
				t.Errorf("the refused request reached the upstream %d times", n)
			}
			if n := r.reads.Load() - reads; n != 0 {
				t.Errorf("the refused request read credentials %d times", n)
			}
		})
	}
}

// TestTransportRefusalSaysWhy: a transport's failure is NET_FETCH_FAILED
// whatever the cause, and the fixed sentence says which cause: a name
// with no address, or a device that did not present its paired
// certificate (another one, or a row with no pin), never "could not be
// reached".
//
// conformance: P3-C12.11-14, P3-X14-22
func TestTransportRefusalSaysWhy(t *testing.T) {
	const noAddress, notPaired = "the host has no address", "the device's certificate is not the paired one"
	t.Run("no address", func(t *testing.T) {
		r := newRig(t)
		r.connect(t, "app1", apiKeyReq("ex", apiHost), nil)
		r.resolver.Script(apiHost)
		res, resp := r.net(t, "app1", frame("GET", "https://api.example.com/", nil))
		if res.Code != errcode.NetFetchFailed || resp.Error.Message != noAddress {
			t.Fatalf("Net = %q %q, want NET_FETCH_FAILED %q", res.Code, resp.Error.Message, noAddress)
		}
	})
	for _, tc := range []struct{ name, pin string }{{"another certificate", strings.Repeat("ab", 32)}, {"no pin", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
			if tc.pin != "" {
				r.setPin(t, "app1", "hue", tc.pin)
			}
			res, resp := r.net(t, "app1", frame("GET", "https://192.168.1.20/clip/v2/resource", nil))
			if res.Code != errcode.NetFetchFailed || resp.Error.Message != notPaired {
				t.Fatalf("Net = %q %q, want NET_FETCH_FAILED %q", res.Code, resp.Error.Message, notPaired)
			}
		})
	}
}

// TestKeylessLANRowIsPinned: a LAN row that injects no credential still
// has its slot's state read for the device's pin, so a device showing
// another certificate than the recorded one is refused, and plain http,
// which cannot check a pin, is refused once a pin is recorded.
//
// conformance: P3-C12.11-14
func TestKeylessLANRowIsPinned(t *testing.T) {
	r := newRig(t)
	req := lanReq("hue", "192.168.1.20")
	req["kind"], req["request"] = "none", map[string]any{}
	delete(req, "fields")
	r.connect(t, "app1", req, nil)
	r.setPin(t, "app1", "hue", strings.Repeat("ab", 32))
	res, resp := r.net(t, "app1", frame("GET", "https://192.168.1.20/clip/v2/resource", nil))
	if res.Code != errcode.NetFetchFailed || resp.Error.Message != "the device's certificate is not the paired one" {
		t.Fatalf("Net to a device with another certificate = %q %+v, want NET_FETCH_FAILED", res.Code, resp.Error)
	}
	if res, _ := r.net(t, "app1", frame("GET", "http://192.168.1.20/api", nil)); res.Code == "" {
		t.Fatal("plain http went out to a pinned device")
	}
}

// TestNewExecutorRefusesANilHelperTransport: gate 5 stands down for a
// helper's sidecar name when the executor holds a transport for it, so a
// nil one is refused when the executor is built, not met at the send.
func TestNewExecutorRefusesANilHelperTransport(t *testing.T) {
	_, err := fetch.NewExecutor(fetch.ExecDeps{Policy: fetch.PolicyDesktop, Local: map[string]fetch.LocalTransport{"sim": nil}})
	if err == nil || !strings.Contains(err.Error(), `"sim"`) {
		t.Fatalf("NewExecutor with a nil helper transport = %v, want an error naming it", err)
	}
	if _, err := fetch.NewExecutor(fetch.ExecDeps{Policy: fetch.PolicyDesktop, Local: map[string]fetch.LocalTransport{}}); err != nil {
		t.Fatalf("NewExecutor with no helpers = %v", err)
	}
}

// TestRegrantComparesTransportClass: a POST to a LAN device parked at its
// confirm, and meanwhile the slot's row changed to one without lanHost
// whose ceiling still lists the address (a row only a tampered database
// holds: validation refuses a private literal without lanHost). The
// re-grant refuses it NET_NOT_APPROVED: the LAN transport chosen for the
// old row never carries a request the new row would send by the public
// one, and neither transport is dialed.
//
// conformance: P3-X14-10, P3-X14-12
func TestRegrantComparesTransportClass(t *testing.T) {
	ctx := t.Context()
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
	r.setPin(t, "app1", "hue", r.lanPin())
	ch := r.parkedNet(ctx, t, "app1", frame("POST", "https://192.168.1.20/api/lights", map[string]any{"body": `{"on":true}`}))
	cs := waitConfirms(t, r.d, 1)
	public := apiKeyReq("hue", apiHost)
	forgeRow(t, r, store.Connection{AppID: "app1", Slot: "hue", RequirementJSON: canonical(t, public),
		Status: store.StatusApproved, AllowedHosts: `["192.168.1.20"]`})
	if err := r.d.exec.DecideConfirm(cs[0].ID, true, fetch.RememberOnce); err != nil {
		t.Fatal(err)
	}
	if res := <-ch; res.Code != errcode.NetNotApproved {
		t.Fatalf("Net after the row lost its LAN class = %q, want NET_NOT_APPROVED", res.Code)
	}
	if n := len(r.lanUp.requests()) + len(r.up.requests()); n != 0 {
		t.Errorf("the refused request reached a device or upstream %d times", n)
	}
	if n := len(r.lanDial.Dials()) + len(r.dialer.Dials()); n != 0 {
		t.Errorf("the refused request dialed %d times", n)
	}
}
