package daemon

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
)

// TestLocalTransport: a send to a registered helper departs after the
// confirm, with the helper token and gate 7's strip; its answer gets the
// cap, the scrub and the header whitelist; a missing or failing helper
// refuses with nothing sent to the network.
//
// conformance: P3-X14-22, P3-X14-30, P3-X14-31, P3-X14-32, P3-X14-33
func TestLocalTransport(t *testing.T) {
	const token = "helper-token-0123456789abcdef0123456789abcdef"
	setup := func(t *testing.T, h *fakeHelper, helpers map[string]*fakeHelper) *rig {
		r := newRig(t, func(c *Config) {
			c.ConfirmTimeout = time.Hour
			c.Helpers = helpersOf(helpers)
		})
		r.connectSim(t, "app1", "wa", map[string]string{"helper_token": token})
		return r
	}
	t.Run("send after confirm, answer scrubbed", func(t *testing.T) {
		h := &fakeHelper{status: 200, header: http.Header{"Content-Type": {"application/json"}, "X-Helper-Debug": {token}, "Link": {"<x?t=" + token + ">"}},
			body: `{"sent":true,"echo":"` + token + `"}`}
		r := setup(t, h, map[string]*fakeHelper{"sim": h})
		ch := r.parkedNet(t.Context(), t, "app1", frame("POST", "https://sim.sidecar.invalid/v1/messages?to=1",
			map[string]any{"body": `{"text":"hi"}`, "headers": map[string]any{"Accept-Encoding": "gzip", "X-Trace": "1"}}))
		cs := waitConfirms(t, r.d, 1)
		if len(h.requests()) != 0 || r.reads.Load() != 0 {
			t.Fatal("the helper was called or the token read before the confirm")
		}
		if cs[0].Host != "sim.sidecar.invalid" || cs[0].Slot != "wa" {
			t.Errorf("confirm = %+v", cs[0])
		}
		r.d.exec.DecideConfirm(cs[0].ID, true, fetch.RememberOnce)
		res := <-ch
		if res.Code != "" {
			t.Fatalf("Net = %q", res.Code)
		}
		reqs := h.requests()
		if len(reqs) != 1 || reqs[0].Token != token || reqs[0].PathAndQuery != "/v1/messages?to=1" || reqs[0].Body != `{"text":"hi"}` {
			t.Fatalf("helper got %+v", reqs)
		}
		if reqs[0].Header.Get("Accept-Encoding") != "" || reqs[0].Header.Get("X-Trace") != "1" {
			t.Errorf("helper headers = %v, want the strip applied", reqs[0].Header)
		}
		if strings.Contains(string(res.Frame), token) || strings.Contains(string(res.Frame), "x-helper-debug") {
			t.Errorf("answer not scrubbed or filtered: %s", res.Frame)
		}
		if r.resolver.Lookups() != 0 || len(r.dialer.Dials()) != 0 {
			t.Errorf("the sidecar host reached DNS or the network: %v", r.resolver.Asked())
		}
	})
	t.Run("denied confirm never reaches the helper", func(t *testing.T) {
		h := &fakeHelper{status: 200}
		r := setup(t, h, map[string]*fakeHelper{"sim": h})
		r.autoDecide(t, false, fetch.RememberOnce)
		res, _ := r.net(t, "app1", frame("POST", "https://sim.sidecar.invalid/v1/messages", map[string]any{"body": "{}"}))
		if res.Code != errcode.NetConfirmDenied || len(h.requests()) != 0 {
			t.Fatalf("Net = %q, helper calls %d; want denied, 0", res.Code, len(h.requests()))
		}
	})
	for _, tc := range []struct {
		name    string
		helpers func(h *fakeHelper) map[string]*fakeHelper
	}{
		{"missing helper", func(*fakeHelper) map[string]*fakeHelper {
			return map[string]*fakeHelper{"signal": &fakeHelper{}}
		}},
		{"no helpers at all", func(*fakeHelper) map[string]*fakeHelper { return nil }},
		{"helper down", func(h *fakeHelper) map[string]*fakeHelper {
			h.err = errors.New("helper exited holding " + token)
			return map[string]*fakeHelper{"sim": h}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHelper{}
			r := setup(t, h, tc.helpers(h))
			res, resp := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/v1/chats", nil))
			if res.Code != errcode.NetFetchFailed {
				t.Fatalf("Net = %q, want NET_FETCH_FAILED", res.Code)
			}
			if r.resolver.Lookups() != 0 || len(r.dialer.Dials()) != 0 || len(r.up.requests()) != 0 {
				t.Errorf("fell back to the network: lookups %v, dials %d", r.resolver.Asked(), len(r.dialer.Dials()))
			}
			if strings.Contains(resp.Error.Message, "exited") {
				t.Errorf("message carries the cause: %q", resp.Error.Message)
			}
			if strings.Contains(r.logs.String(), token) {
				t.Errorf("the log carries the helper token: %s", r.logs.String())
			}
		})
	}
	t.Run("helper answers too much or a redirect", func(t *testing.T) {
		big := &fakeHelper{status: 200, body: strings.Repeat("a", 1<<20+1)}
		r := setup(t, big, map[string]*fakeHelper{"sim": big})
		if res, _ := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/x", nil)); res.Code != errcode.NetSizeExceeded {
			t.Errorf("oversized helper answer = %q", res.Code)
		}
		redir := &fakeHelper{status: 302, header: http.Header{"Location": {"https://evil.example.com/"}}}
		r = setup(t, redir, map[string]*fakeHelper{"sim": redir})
		if res, _ := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/x", nil)); res.Code != errcode.NetRedirectBlocked {
			t.Errorf("helper redirect = %q", res.Code)
		}
	})
}

// TestHelperContentEncodingAnySpelling: a helper's answer in a content
// coding is refused however the header name is spelled: a helper's header
// map is not canonicalized the way net/http's is, and the scrub cannot
// see inside a compressed body.
//
// conformance: P3-X14-32
func TestHelperContentEncodingAnySpelling(t *testing.T) {
	const token = "helper-token-0123456789abcdef0123456789abcdef"
	for _, name := range []string{"content-encoding", "CONTENT-ENCODING", "Content-Encoding"} {
		t.Run(name, func(t *testing.T) {
			h := &fakeHelper{status: 200, header: http.Header{name: {"gzip"}}, body: "compressed " + token}
			r := newRig(t, func(c *Config) { c.Helpers = helpersOf(map[string]*fakeHelper{"sim": h}) })
			r.connectSim(t, "app1", "wa", map[string]string{"helper_token": token})
			res, _ := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/v1/chats", nil))
			if res.Code != errcode.NetFetchFailed {
				t.Fatalf("Net with %s: gzip = %q, want NET_FETCH_FAILED", name, res.Code)
			}
			if strings.Contains(string(res.Frame), token) {
				t.Fatal("the answer carries the token")
			}
		})
	}
}
