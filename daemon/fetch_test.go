package daemon

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/wire"
)

// conformance: P3-X14-35, P3-C12.9-04, P3-C12.9-06, P3-C12.9-10, P1-SEC-01, P3-C12-09, P3-C13-09
func TestNetEndToEnd(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	appURL := "https://" + apiHost + "/v1/items?q=1"
	res, resp := r.net(t, "app1", frame("GET", appURL, nil))
	if res.Code != "" || resp.Status != 200 {
		t.Fatalf("Net = %+v, %+v; want 200", res, resp)
	}
	if resp.URL != appURL {
		t.Errorf("url = %q, want the app's %q", resp.URL, appURL)
	}
	got := r.up.last(t)
	if got.Header.Get("X-Key") != secretKey {
		t.Errorf("upstream X-Key = %q, want the credential", got.Header.Get("X-Key"))
	}
	u, _ := url.Parse(got.URI)
	if u.Query().Get("appid") != secretKey || u.Query().Get("q") != "1" {
		t.Errorf("upstream query = %q, want q=1 and the credential", u.RawQuery)
	}
	if strings.Contains(string(res.Frame), "Secret") {
		t.Errorf("frame carries the credential: %s", res.Frame)
	}
}

// TestGateOrder: a request that fails two gates gets the earlier gate's
// code, and nothing of the later gate happens (no lookup, no confirm, no
// dial).
//
// conformance: P3-X14-02, P3-X14-06, P3-X14-23
func TestGateOrder(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, r *rig)
		frame []byte
		want  errcode.Code
	}{
		{"shape before resolution", nil, frame("HEAD", "snug-connection://nope/x", map[string]any{"body": "x"}), errcode.NetInvalidRequest},
		{"resolution before grant", nil, frame("GET", "snug-connection://nope/x", nil), errcode.NetInvalidRequest},
		{"grant before ceiling", func(t *testing.T, r *rig) {
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
		}, frame("GET", "http://evil.example.com/", nil), errcode.NetHostBlocked},
		{"ceiling before ssrf", func(t *testing.T, r *rig) {
			r.connect(t, "app1", noneReq("p", "private.example.com"), nil)
			r.resolver.Script("private.example.com", "10.0.0.1")
		}, frame("GET", "http://private.example.com/", nil), errcode.NetSchemeBlocked},
		{"ssrf before confirm", func(t *testing.T, r *rig) {
			r.connect(t, "app1", noneReq("p", "private.example.com"), nil)
			r.resolver.Script("private.example.com", "10.0.0.1")
		}, frame("POST", "https://private.example.com/", map[string]any{"body": "{}"}), errcode.NetSSRFBlocked},
		{"resolved connection url still meets the ceiling and ssrf", func(t *testing.T, r *rig) {
			r.connect(t, "app1", noneReq("p", "private.example.com"), nil)
			r.resolver.Script("private.example.com", "127.0.0.1")
		}, frame("POST", "snug-connection://p/x", map[string]any{"body": "{}"}), errcode.NetSSRFBlocked},
		{"LAN stand-down still needs the confirm", func(t *testing.T, r *rig) {
			r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
		}, frame("PUT", "http://192.168.1.20/api/lights/1/state", map[string]any{"body": `{"on":true}`}), errcode.NetConfirmDenied},
		{"LAN stand-down still needs the ceiling", func(t *testing.T, r *rig) {
			r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
		}, frame("GET", "http://192.168.1.21/api", nil), errcode.NetHostBlocked},
		{"confirm before fetch", func(t *testing.T, r *rig) {
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
				http.Redirect(w, nil, "https://evil.example.com/", http.StatusFound)
			})
		}, frame("POST", "https://api.example.com/", map[string]any{"body": "{}"}), errcode.NetConfirmDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
			if tc.setup != nil {
				tc.setup(t, r)
			}
			r.autoDecide(t, false, fetch.RememberOnce)
			res, _ := r.net(t, "app1", tc.frame)
			if res.Code != tc.want {
				t.Fatalf("Net = %q, want %q", res.Code, tc.want)
			}
			if n := len(r.dialer.Dials()) + len(r.lanDial.Dials()); n != 0 {
				t.Errorf("dials = %d, want 0", n)
			}
			if n := r.reads.Load(); n != 0 {
				t.Errorf("credential reads = %d, want 0", n)
			}
			if tc.want != errcode.NetConfirmDenied && tc.want != errcode.NetSSRFBlocked {
				if l := r.resolver.Asked(); len(l) != 0 {
					t.Errorf("lookups = %v, want none", l)
				}
			}
		})
	}
}

// TestNoCredentialReadBeforeConfirm: the spy on the one credential read
// proves it happens only after the user allowed the request, never while
// the confirm is parked and never for a denied one.
//
// conformance: P3-X14-24, P3-X14-26, P3-X14-27
func TestNoCredentialReadBeforeConfirm(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	for _, allow := range []bool{false, true} {
		before := r.reads.Load()
		upBefore := len(r.up.requests())
		done := make(chan fetch.NetResult, 1)
		go func() {
			res, _ := r.net(t, "app1", frame("POST", "https://api.example.com/send", map[string]any{"body": `{"x":1}`}))
			done <- res
		}()
		cs := waitConfirms(t, r.d, 1)
		if n := r.reads.Load() - before; n != 0 {
			t.Fatalf("credential reads while the confirm is parked = %d, want 0", n)
		}
		if n := len(r.up.requests()) - upBefore; n != 0 {
			t.Fatalf("upstream requests while the confirm is parked = %d, want 0", n)
		}
		if err := r.d.exec.DecideConfirm(cs[0].ID, allow, fetch.RememberOnce); err != nil {
			t.Fatal(err)
		}
		res := <-done
		reads := r.reads.Load() - before
		if !allow {
			if res.Code != errcode.NetConfirmDenied || reads != 0 || len(r.up.requests()) != upBefore {
				t.Fatalf("denied: code %q, reads %d, upstream %d; want NET_CONFIRM_DENIED, 0, 0", res.Code, reads, len(r.up.requests())-upBefore)
			}
			continue
		}
		if res.Code != "" || reads != 1 || len(r.up.requests()) != upBefore+1 {
			t.Fatalf("allowed: code %q, reads %d; want ok and exactly one read", res.Code, reads)
		}
	}
}

// TestSSRFResolution: a ceiling host whose DNS answer holds a refused
// address is refused before anything is dialed; one refused answer among
// public ones refuses the request (resolve once, check every answer); a
// rebinding answer on a later lookup never reaches the dialer.
//
// conformance: P3-X14-16, P3-X14-17, P3-X14-18, P3-X14-19, P3-X14-20, P3-X14-21
func TestSSRFResolution(t *testing.T) {
	for _, answer := range []string{"127.0.0.1", "10.0.0.5", "192.168.1.20", "172.16.0.1", "169.254.169.254", "100.64.0.1",
		"::1", "fe80::1", "::ffff:10.0.0.1", "fd00:ec2::254", "0.0.0.0", "64:ff9b:1::a00:1"} {
		t.Run(answer, func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			r.resolver.Script(apiHost, docAddr, answer)
			res, resp := r.net(t, "app1", frame("GET", "https://api.example.com/", nil))
			if res.Code != errcode.NetSSRFBlocked {
				t.Fatalf("Net = %q, want NET_SSRF_BLOCKED", res.Code)
			}
			if len(r.dialer.Dials()) != 0 || r.reads.Load() != 0 {
				t.Errorf("dials %d, reads %d; want 0, 0", len(r.dialer.Dials()), r.reads.Load())
			}
			if strings.Contains(resp.Error.Message, answer) {
				t.Errorf("message %q names the address", resp.Error.Message)
			}
		})
	}
	t.Run("rebinding", func(t *testing.T) {
		// The name re-resolves to loopback after the first request.
		// Within the vetted answer's window gate 5 reuses the checked
		// answer, so the second request is dialled at the checked
		// address and never at the rebound one; a fresh lookup (the
		// window over, transports' own tests) is refused.
		r := newRig(t)
		r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
		r.resolver.Script(apiHost, docAddr)
		r.resolver.Script(apiHost, "127.0.0.1")
		if res, _ := r.net(t, "app1", frame("GET", "https://api.example.com/", nil)); res.Code != "" {
			t.Fatalf("first request = %q, want ok", res.Code)
		}
		if res, _ := r.net(t, "app1", frame("GET", "https://api.example.com/", nil)); res.Code != "" {
			t.Fatalf("second request within the window = %q, want ok at the vetted address", res.Code)
		}
		if len(r.dialer.Dials()) == 0 {
			t.Fatal("nothing was dialled")
		}
		for _, a := range r.dialer.Dials() {
			if !strings.HasPrefix(a, docAddr+":") {
				t.Errorf("dialed %s, want only the checked %s", a, docAddr)
			}
		}
	})
	t.Run("empty answer", func(t *testing.T) {
		r := newRig(t)
		r.connect(t, "app1", apiKeyReq("ex", apiHost), nil)
		r.resolver.Script(apiHost)
		if res, _ := r.net(t, "app1", frame("GET", "https://api.example.com/", nil)); res.Code != errcode.NetFetchFailed {
			t.Fatalf("Net = %q, want NET_FETCH_FAILED", res.Code)
		}
	})
}

// conformance: P3-X14-37, P3-X14-38
func TestRedirectBlocked(t *testing.T) {
	for _, code := range []int{300, 301, 302, 303, 304, 307, 308} { // every 3xx, 300 Multiple Choices included
		t.Run(http.StatusText(code), func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Location", "https://api.example.com/next?appid="+secretKey)
				w.WriteHeader(code)
			})
			res, resp := r.net(t, "app1", frame("GET", "https://api.example.com/", nil))
			if res.Code != errcode.NetRedirectBlocked {
				t.Fatalf("Net = %q, want NET_REDIRECT_BLOCKED", res.Code)
			}
			if n := len(r.up.requests()); n != 1 {
				t.Errorf("upstream requests = %d, want 1 (never followed)", n)
			}
			if strings.Contains(string(res.Frame), "Secret") || strings.Contains(resp.Error.Message, "next") {
				t.Errorf("answer leaks the redirect: %s", res.Frame)
			}
		})
	}
}

// conformance: P3-X14-39, P1-R6-04, P1-R6-06
func TestBodyCap(t *testing.T) {
	cases := []struct {
		name string
		h    http.HandlerFunc
		want errcode.Code
	}{
		{"exactly 1 MiB", func(w http.ResponseWriter, _ *http.Request) { w.Write(bytes.Repeat([]byte("a"), 1<<20)) }, ""},
		{"1 MiB + 1", func(w http.ResponseWriter, _ *http.Request) { w.Write(bytes.Repeat([]byte("a"), 1<<20+1)) }, errcode.NetSizeExceeded},
		{"endless", func(w http.ResponseWriter, r *http.Request) {
			chunk := bytes.Repeat([]byte("a"), 32<<10)
			for i := 0; i < 4096 && r.Context().Err() == nil; i++ { // bounded: 128 MiB at most
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, errcode.NetSizeExceeded},
		{"escaping pushes the frame over its class", func(w http.ResponseWriter, _ *http.Request) {
			w.Write(bytes.Repeat([]byte{1}, 1<<20))
		}, errcode.NetSizeExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", noneReq("p", apiHost), nil)
			r.up.handle(tc.h)
			res, resp := r.net(t, "app1", frame("GET", "https://api.example.com/", nil))
			if res.Code != tc.want || !res.Answer {
				t.Fatalf("Net = %q (answer %v), want %q", res.Code, res.Answer, tc.want)
			}
			if tc.want == "" && len(resp.Body) != 1<<20 {
				t.Errorf("body = %d bytes, want 1 MiB", len(resp.Body))
			}
			if len(res.Frame) > wire.MaxNetFrameBytes {
				t.Errorf("frame = %d bytes, over the class", len(res.Frame))
			}
		})
	}
}
