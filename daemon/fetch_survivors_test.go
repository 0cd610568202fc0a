package daemon

import (
	"net/http"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/oauth/oauthtest"
	"github.com/snug/snugd/daemon/scrub"
)

// TestScrubOfAnEchoAsLongAsTheMark: a credential exactly as long as the
// scrub's mark is still scrubbed from the answer. The scrubbed body is
// then as long as the upstream's; the executor must still see that the
// scrub rewrote it (a new slice, not the same bytes) and deliver the
// rewrite, not the bytes it read.
//
// conformance: P3-X14-40
func TestScrubOfAnEchoAsLongAsTheMark(t *testing.T) {
	key := "Kq7Zt9Wm2X"
	if len(key) != len(scrub.Mark) {
		t.Fatalf("the key is %d bytes, the mark %d: the test needs them equal", len(key), len(scrub.Mark))
	}
	r := newRig(t)
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": key})
	r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("echo=" + key))
	})
	res, resp := r.net(t, "app1", frame("GET", "https://api.example.com/v1", nil))
	if res.Code != "" {
		t.Fatalf("Net = %q", res.Code)
	}
	if strings.Contains(string(res.Frame), key) || resp.Body != "echo="+scrub.Mark {
		t.Errorf("answer body = %q, want the echo scrubbed", resp.Body)
	}
}

// TestHelperAnswerOfExactlyTheCap: a helper's answer of exactly 1 MiB is
// delivered whole; one byte more is NET_SIZE_EXCEEDED (TestLocalTransport).
//
// conformance: P3-X14-32, P3-X14-39
func TestHelperAnswerOfExactlyTheCap(t *testing.T) {
	const token = "helper-token-0123456789abcdef0123456789abcdef"
	h := &fakeHelper{status: 200, body: strings.Repeat("a", 1<<20)}
	r := newRig(t, func(c *Config) { c.Helpers = helpersOf(map[string]*fakeHelper{"sim": h}) })
	r.connectSim(t, "app1", "wa", map[string]string{"helper_token": token})
	res, resp := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/x", nil))
	if res.Code != "" || len(resp.Body) != 1<<20 {
		t.Fatalf("a 1 MiB helper answer = %q with %d bytes, want it whole", res.Code, len(resp.Body))
	}
}

// TestOAuthRequestReadsTheSliceOnce: a request on an OAuth connection
// without templates (authorization code, client credentials) reads the
// credential slice once, at gate 8, and the token source takes the bearer
// from that read: it does not read the row again behind the executor.
func TestOAuthRequestReadsTheSliceOnce(t *testing.T) {
	o := newOAuthRig(t)
	o.connectSpotify(t, "app1")
	// A user row of client credentials on a provider of its own, with no
	// header template (the shipped Twitch entry has one: its Client-Id).
	decl := map[string]any{
		"slot": "svc", "provider": map[string]any{"name": "Example OAuth"}, "kind": "oauth2_client_creds",
		"fields": []any{
			map[string]any{"key": "client_id", "label": "Client ID", "type": "text"},
			map[string]any{"key": "client_secret", "label": "Client secret", "type": "secret"},
		},
		"endpoints":        map[string]any{"token": "https://auth.example.net/oauth/token"},
		"registration":     map[string]any{"consoleUrl": "https://auth.example.net/apps", "instructions": []any{"Register an app."}},
		"declaredApiHosts": []any{"api.example.net"},
	}
	o.approveRow(t, "app1", decl, map[string]string{"client_id": oauthtest.ServiceID, "client_secret": oauthtest.ServiceKey})
	for _, u := range []string{"https://api.spotify.com/v1/me", "https://api.example.net/v1/things", "https://api.example.net/v1/things"} {
		before := o.reads.Load()
		if res, _ := o.net(t, "app1", frame("GET", u, nil)); res.Code != "" {
			t.Fatalf("GET %s = %q", u, res.Code)
		}
		if n := o.reads.Load() - before; n != 1 {
			t.Errorf("GET %s read the credential slice %d times at gate 8, want 1", u, n)
		}
	}
	if n := o.op.Count("client_credentials"); n != 1 {
		t.Errorf("client_credentials POSTs = %d, want 1 (the second request uses the stored token)", n)
	}
}
