package daemon

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/scrub"
)

// TestScrubDerivedAndEscaped: an upstream reflecting what the renderer
// derived from a credential — the base64 of user:pass inside the Basic
// header without "Basic ", a whole cdp_jwt without "Bearer " — or a
// credential percent-encoded, or JSON-escaped the way encoding/json, PHP
// (\/) and other encoders (\u002f, \u002F) write it, gets none of them
// back to the app. Before the renderer reported its helper outputs and
// the scrub knew JSON spellings, every one of these crossed.
//
// conformance: P3-X14-40, P3-X14.1-01, P1-SEC-01
func TestScrubDerivedAndEscaped(t *testing.T) {
	const user, pass = "svc-user-4471", "p4ss/w0rd+Key<&>"
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i*7 + 1)
	}
	jwtKey := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed))
	req := map[string]any{
		"slot":             "ex",
		"provider":         map[string]any{"name": "Example"},
		"kind":             "basic_auth",
		"fields":           []any{map[string]any{"key": "credentials", "label": "User and password", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(credentials)}}"}},
		"declaredApiHosts": []any{apiHost},
	}
	cdp := map[string]any{
		"slot":     "cdp",
		"provider": map[string]any{"name": "CDP Example"},
		"kind":     "api_key",
		"fields": []any{
			map[string]any{"key": "key_name", "label": "Key name", "type": "text"},
			map[string]any{"key": "key_secret", "label": "Key secret", "type": "secret"},
		},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Bearer {{cdp_jwt(key_name, key_secret)}}"}},
		"declaredApiHosts": []any{apiHost},
	}
	r := newRig(t)
	r.connect(t, "app1", req, map[string]string{"credentials": user + ":" + pass})
	r.connect(t, "app2", cdp, map[string]string{"key_name": "organizations/o/apiKeys/k", "key_secret": jwtKey})
	var reflected []string
	r.up.handle(func(w http.ResponseWriter, q *http.Request) {
		a := q.Header.Get("Authorization")
		tok := a[strings.IndexByte(a, ' ')+1:] // the base64 or the JWT alone
		goJSON, _ := json.Marshal(pass)
		reflected = []string{
			tok,
			url.QueryEscape(pass),
			strings.Trim(string(goJSON), `"`),       // \u003c\u0026\u003e
			strings.ReplaceAll(pass, "/", `\/`),     // PHP's slash
			strings.ReplaceAll(pass, "/", `\u002f`), // lowercase \u
			strings.ReplaceAll(pass, "/", `\u002F`), // uppercase \u
			strings.ReplaceAll(tok, "/", `\/`),      // the derived value escaped too
		}
		pad := "" // a big answer takes the scrub's one-pass path
		if q.URL.Query().Get("big") != "" {
			pad = strings.Repeat(`{"id":1,"name":"pad"},`, 4<<10)
		}
		io.WriteString(w, `{"pad":[`+pad+`0],"echo":["`+strings.Join(reflected, `","`)+`"]}`)
	})
	for _, call := range []struct{ app, url string }{
		{"app1", "https://api.example.com/v1"}, {"app2", "https://api.example.com/v1"},
		{"app1", "https://api.example.com/v1?big=1"}, {"app2", "https://api.example.com/v1?big=1"},
	} {
		app := call.app
		res, resp := r.net(t, app, frame("GET", call.url, nil))
		if res.Code != "" {
			t.Fatalf("%s: Net = %q", app, res.Code)
		}
		mine := reflected // app1's echoes: its own credential in every spelling
		if app == "app2" {
			mine = []string{reflected[0], reflected[len(reflected)-1]} // the JWT, raw and escaped
		}
		for _, s := range mine {
			if strings.Contains(resp.Body, s) || strings.Contains(string(res.Frame), s) {
				t.Errorf("%s: frame carries the echo %q: %s", app, s, res.Frame)
			}
		}
		if app == "app1" && strings.Count(resp.Body, scrub.Mark) != len(reflected) {
			t.Errorf("%s: body = %q, want %d scrubbed echoes", app, resp.Body, len(reflected))
		}
	}
}

// TestScrubSimpleFINPasswordHalf: a SimpleFIN-style basic_auth value held
// as one "user:pass" field is scrubbed whole, and its password half is
// scrubbed when the bridge echoes it alone.
//
// conformance: P3-X14.1-01
func TestScrubSimpleFINPasswordHalf(t *testing.T) {
	const user, pass = "7F2C9A41B3D8", "9b1e0c6fd24a8e37b5c1"
	req := map[string]any{
		"slot":             "bank",
		"provider":         map[string]any{"name": "Example Bank"},
		"kind":             "basic_auth",
		"fields":           []any{map[string]any{"key": "access_credentials", "label": "Access credentials", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
		"declaredApiHosts": []any{apiHost},
	}
	r := newRig(t)
	r.connect(t, "app1", req, map[string]string{"access_credentials": user + ":" + pass})
	r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"errors":["password `+pass+` expired","user `+user+`"]}`)
	})
	res, _ := r.net(t, "app1", frame("GET", "https://api.example.com/accounts", nil))
	if res.Code != "" {
		t.Fatalf("Net = %q", res.Code)
	}
	for _, s := range []string{pass, user} {
		if strings.Contains(string(res.Frame), s) {
			t.Errorf("frame carries the half %q: %s", s, res.Frame)
		}
	}
}
