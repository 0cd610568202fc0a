package daemon

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/scrub"
)

// TestScrubCacheRotation: gate 10's compiled spellings are shared between
// requests (scrub.Cache), and a credential written between two requests
// is scrubbed in the very next response, on a short answer and on one long
// enough for the one-pass matcher; the old value, no longer injected, is
// not. The write also empties the cache.
//
// conformance: P3-X14-40, P3-X14.1-01
func TestScrubCacheRotation(t *testing.T) {
	const oldKey, newKey = "sk_live_old/Zq8r2LkP9wXc", "sk_live_new+Tn4=aB7dE1fG"
	for _, pad := range []string{"", strings.Repeat("0123456789abcdef", 4<<10)} {
		r := newRig(t)
		v := apiKeyReq("ex", apiHost)
		v["request"] = map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}}
		r.connect(t, "app1", v, map[string]string{"api_key": oldKey})
		r.up.handle(func(w http.ResponseWriter, req *http.Request) {
			io.WriteString(w, pad+"echo="+req.Header.Get("X-Key")+" old="+oldKey+" new="+newKey+pad)
		})
		get := frame("GET", "https://api.example.com/v1", nil)
		for range 2 { // the second request is served by the warm cache
			_, resp := r.net(t, "app1", get)
			if strings.Contains(resp.Body, oldKey) || !strings.Contains(resp.Body, "new="+newKey) {
				t.Fatalf("before the rotation (%d bytes): want the old key scrubbed, the new one not yet", len(resp.Body))
			}
		}
		if r.d.grants.Scrubs().Len() == 0 {
			t.Fatal("the scrub cache is empty after two requests")
		}
		if err := r.d.grants.SetCredentials(t.Context(), "app1", "ex", map[string]string{"api_key": newKey}); err != nil {
			t.Fatal(err)
		}
		if n := r.d.grants.Scrubs().Len(); n != 0 {
			t.Errorf("the credential write left %d compiled sets in the scrub cache", n)
		}
		_, resp := r.net(t, "app1", get)
		if strings.Contains(resp.Body, newKey) || strings.Contains(resp.Body, "Tn4%3DaB7") {
			t.Errorf("the first request after the rotation (%d bytes) shows the new key", len(resp.Body))
		}
		if !strings.Contains(resp.Body, "old="+oldKey) || !strings.Contains(resp.Body, "echo="+scrub.Mark) {
			t.Errorf("after the rotation (%d bytes): want the new key scrubbed and the old one, no longer injected, not", len(resp.Body))
		}
	}
}

// TestScrubCacheNoMixing: two apps' connections to one host, with
// different keys, alternate through the shared cache: each response
// scrubs exactly the key its own request injected, never the other's
// set, on a short answer and a long one.
//
// conformance: P3-X14-40, P1-SEC-01
func TestScrubCacheNoMixing(t *testing.T) {
	keys := map[string]string{"app1": "sk_app1_Zq8r2LkP9wXc/1", "app2": "sk_app2_Tn4aB7dE1fG+2"}
	r := newRig(t)
	for app, key := range keys {
		v := apiKeyReq("ex", apiHost)
		v["request"] = map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}}
		r.connect(t, app, v, map[string]string{"api_key": key})
	}
	long := strings.Repeat("0123456789abcdef", 4<<10)
	r.up.handle(func(w http.ResponseWriter, req *http.Request) {
		pad := ""
		if req.URL.Query().Get("long") != "" {
			pad = long
		}
		io.WriteString(w, pad+"app1="+keys["app1"]+" app2="+keys["app2"]+pad)
	})
	for i := range 8 {
		for _, app := range []string{"app1", "app2"} {
			other := map[string]string{"app1": "app2", "app2": "app1"}[app]
			u := "https://api.example.com/v1"
			if i%2 == 1 {
				u += "?long=1"
			}
			_, resp := r.net(t, app, frame("GET", u, nil))
			if strings.Contains(resp.Body, keys[app]) {
				t.Fatalf("round %d: %s's response shows its own key", i, app)
			}
			if !strings.Contains(resp.Body, other+"="+keys[other]) {
				t.Fatalf("round %d: %s's response scrubbed %s's key: it used another set", i, app, other)
			}
		}
	}
}
