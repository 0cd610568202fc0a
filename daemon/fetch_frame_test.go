package daemon

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/wire"
	"github.com/snug/snugd/daemon/wire/wiretest"
)

// TestPooledBuffersNeverShared: 1 MiB answers read in place from the
// pooled read buffer and encoded into pooled frame buffers, two apps
// alternating, each released before the next: every answer is exactly
// its own upstream's body (so no buffer was handed back while its body
// or frame was in use), a released frame is zeroed over its whole
// capacity, and a provider error extract taken from a 1 MiB error body
// survives the reuse of that body's buffer.
//
// conformance: P3-X14-40, P1-SEC-01
func TestPooledBuffersNeverShared(t *testing.T) {
	r := newRig(t)
	keys := map[string]string{"app1": "sk_app1_Zq8r2LkP9wXc", "app2": "sk_app2_Tn4aB7dE1fG"}
	bodies := map[string]string{}
	for app, key := range keys {
		v := apiKeyReq("ex", apiHost)
		v["request"] = map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}}
		r.connect(t, app, v, map[string]string{"api_key": key})
		// 1 MiB exactly: the pooled read class; the key echoed at the end.
		tail := " key=" + key
		bodies[app] = strings.Repeat(app[3:], wire.MaxNetResponseBody-len(tail)) + tail
	}
	r.up.handle(func(w http.ResponseWriter, req *http.Request) {
		app := "app1"
		if req.Header.Get("X-Key") == keys["app2"] {
			app = "app2"
		}
		body := bodies[app]
		if req.URL.Query().Get("fail") != "" {
			body = "error: the widget " + app + " is broken; key " + keys[app] + strings.Repeat(" ", wire.MaxNetResponseBody-80)
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(http.StatusBadRequest)
		} else {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		io.WriteString(w, body)
	})
	var prevErr string
	for i := range 6 {
		for _, app := range []string{"app1", "app2"} {
			u := "https://api.example.com/v1"
			if i%3 == 2 {
				u += "?fail=1"
			}
			res := r.d.exec.Net(t.Context(), fetch.NetCall{AppID: app, Frame: frame("GET", u, nil), Delivery: fetch.DeliveryApp})
			if res.Code != "" || !res.Answer {
				t.Fatalf("round %d %s: %+v", i, app, res.Code)
			}
			resp, err := wiretest.ParseNetResponse(res.Frame)
			if err != nil {
				t.Fatalf("round %d %s: the frame does not parse: %v", i, app, err)
			}
			if i%3 == 2 {
				if strings.Contains(res.ProviderError, keys[app]) || !strings.Contains(res.ProviderError, "widget "+app) {
					t.Fatalf("round %d %s: provider error %q", i, app, res.ProviderError)
				}
				prevErr = res.ProviderError
			} else {
				want := strings.Replace(bodies[app], keys[app], "[scrubbed]", 1)
				if resp.Body != want {
					t.Fatalf("round %d %s: the body is not its upstream's (%d bytes, want %d)", i, app, len(resp.Body), len(want))
				}
			}
			if res.Pooled == nil {
				t.Fatalf("round %d %s: a 1 MiB answer is not in a pooled frame buffer", i, app)
			}
			b := res.Frame
			res.Release()
			if !bytes.Equal(b[:cap(b)], make([]byte, cap(b))) {
				t.Fatalf("round %d %s: Release pooled a frame buffer that is not zeroed", i, app)
			}
			res.Release() // a second Release does nothing
			if prevErr != "" && !strings.Contains(prevErr, "widget") {
				t.Fatalf("a provider error extract changed after its body's buffer was reused: %q", prevErr)
			}
		}
	}
}

// TestFrameReleaseOnce: releasing an answer twice, or a copy of it,
// pools its buffer once, so two later answers never share one buffer.
func TestFrameReleaseOnce(t *testing.T) {
	fb := fetch.GetFrame()
	res := fetch.NetResult{Pooled: fb}
	cp := res
	res.Release()
	cp.Release()
	res.Release()
	a, b := fetch.GetFrame(), fetch.GetFrame()
	if cap(a.B) != fetch.FrameClass || cap(b.B) != fetch.FrameClass {
		t.Fatalf("getFrame capacities %d, %d; want %d", cap(a.B), cap(b.B), fetch.FrameClass)
	}
	if &a.B[:1][0] == &b.B[:1][0] {
		t.Fatal("two frames share one buffer: it was pooled twice")
	}
	fetch.NetResult{}.Release() // no pooled buffer: nothing to do
}
