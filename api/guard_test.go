package api

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/internal/testutil"
)

// TestHostHeader: only 127.0.0.1, [::1] and localhost with the listener's
// own port; a refusal never echoes the value (DNS rebinding).
func TestHostHeader(t *testing.T) {
	e := newEnv(t)
	p := strconv.Itoa(e.port)
	for _, h := range []string{"127.0.0.1:" + p, "localhost:" + p, "[::1]:" + p} {
		if resp, body := e.do(req{method: "GET", path: "/v1/health", host: h}); resp.StatusCode != 200 {
			t.Errorf("GET /v1/health with Host %q = %d %s, want 200", h, resp.StatusCode, body)
		}
	}
	for _, h := range []string{
		"rebind-attack.example:" + p, "rebind-attack.example", "127.0.0.1", "localhost", "127.0.0.1:1", "127.0.0.2:" + p,
		"LOCALHOST:" + p, "localhost.rebind-attack.example:" + p, "0.0.0.0:" + p, "[::ffff:127.0.0.1]:" + p, "127.1:" + p,
		"2130706433:" + p, "localhost:" + p + ".", "127.0.0.1:0" + p,
	} {
		resp, body := e.do(req{method: "GET", path: "/v1/health", host: h})
		if resp.StatusCode != http.StatusForbidden || errCode(body) != "FORBIDDEN" {
			t.Errorf("GET /v1/health with Host %q = %d %s, want 403 FORBIDDEN", h, resp.StatusCode, body)
		}
		if strings.Contains(body, strings.Split(h, ":")[0]) && !strings.HasPrefix(h, "[") {
			t.Errorf("refusal of Host %q echoes it: %s", h, body)
		}
		if resp.Header.Get("Snugd-Version") != testVersion || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("refusal lacks the security headers: %v", resp.Header)
		}
	}
}

// TestOriginRefusals: every way a web page may try to reach the API.
func TestOriginRefusals(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "declared", hosts: []string{"api.mail.example"}})
	web := e.pair("web", webOrigin)
	other := e.pair("web", "https://other.example")
	desk := e.pair("desktop", "")
	auth := func(tok string) string { return "Bearer " + tok }
	tests := []struct {
		name   string
		r      req
		status int
	}{
		{"paired origin, own token", req{method: "GET", path: "/v1/status", header: map[string]string{"Origin": webOrigin, "Authorization": auth(web)}}, 200},
		{"desktop token, no origin", req{method: "GET", path: "/v1/status", header: map[string]string{"Authorization": auth(desk)}}, 200},
		{"origin null", req{method: "GET", path: "/v1/status", header: map[string]string{"Origin": "null", "Authorization": auth(desk)}}, 403},
		{"unpaired origin", req{method: "GET", path: "/v1/status", header: map[string]string{"Origin": "https://evil.example", "Authorization": auth(web)}}, 401},
		{"unpaired origin, no token", req{method: "GET", path: "/v1/status", header: map[string]string{"Origin": "https://evil.example"}}, 401},
		{"paired origin, another host's token", req{method: "GET", path: "/v1/status", header: map[string]string{"Origin": webOrigin, "Authorization": auth(other)}}, 401},
		{"paired origin, a desktop token", req{method: "GET", path: "/v1/status", header: map[string]string{"Origin": webOrigin, "Authorization": auth(desk)}}, 401},
		{"web token without its origin", req{method: "GET", path: "/v1/status", header: map[string]string{"Authorization": auth(web)}}, 403},
		{"paired origin, no token", req{method: "GET", path: "/v1/status", header: map[string]string{"Origin": webOrigin}}, 401},
		{"malformed origin", req{method: "GET", path: "/v1/status", header: map[string]string{"Origin": webOrigin + "/", "Authorization": auth(web)}}, 403},
		{"no-cors", req{method: "GET", path: "/v1/status", header: map[string]string{"Sec-Fetch-Mode": "no-cors", "Authorization": auth(desk)}}, 403},
		{"websocket upgrade", req{method: "GET", path: "/v1/events", header: map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Authorization": auth(desk)}}, 403},
		{"h2c upgrade", req{method: "GET", path: "/v1/status", header: map[string]string{"Upgrade": "h2c", "Authorization": auth(desk)}}, 403},
		{"text/plain POST", req{method: "POST", path: "/v1/apps/app1/connections/mail/approve", header: map[string]string{"Content-Type": "text/plain;charset=UTF-8", "Authorization": auth(desk)}, body: "{}"}, 415},
		{"form POST", req{method: "POST", path: "/v1/apps/app1/connections/mail/approve", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": auth(desk)}, body: "a=b"}, 415},
		{"JSON in latin1", req{method: "POST", path: "/v1/apps/app1/connections/mail/approve", header: map[string]string{"Content-Type": "application/json; charset=latin1", "Authorization": auth(desk)}, body: "{}"}, 415},
		{"JSON with another parameter", req{method: "POST", path: "/v1/apps/app1/connections/mail/approve", header: map[string]string{"Content-Type": "application/json; v=1", "Authorization": auth(desk)}, body: "{}"}, 415},
		{"JSON in UTF-8, to no app", req{method: "POST", path: "/v1/apps/app9/connections/mail/approve", header: map[string]string{"Content-Type": "application/json; charset=UTF-8", "Authorization": auth(desk)}, body: "{}"}, 404},
		{"bearer in lower case", req{method: "GET", path: "/v1/status", header: map[string]string{"Authorization": "bearer " + desk}}, 200},
		{"token as basic auth", req{method: "GET", path: "/v1/status", header: map[string]string{"Authorization": "Basic " + desk}}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.do(tc.r)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s = %d %s, want %d", tc.r.method, tc.r.path, resp.StatusCode, body, tc.status)
			}
			if tc.status >= 400 && errCode(body) == "" {
				t.Errorf("refusal body %q is not the error shape", body)
			}
			acao := resp.Header.Get("Access-Control-Allow-Origin")
			if tc.status == 403 && acao != "" && acao != tc.r.header["Origin"] {
				t.Errorf("Access-Control-Allow-Origin = %q on a refusal", acao)
			}
			// A page on an authenticated route is told only that it is
			// not paired, whatever token it sent.
			if origin := tc.r.header["Origin"]; tc.status == 401 && origin != "" {
				if errCode(body) != "NOT_PAIRED" || acao != origin {
					t.Errorf("refusal of a page = %s with Access-Control-Allow-Origin %q, want NOT_PAIRED readable by %s", body, acao, origin)
				}
			}
			if resp.Header.Get("Access-Control-Allow-Credentials") != "" || acao == "*" {
				t.Errorf("CORS headers %v, want never credentials, never *", resp.Header)
			}
		})
	}
	// The text/plain CSRF never reached the writer.
	rows, err := e.ctl.Connections(t.Context(), "app1")
	if err != nil || len(rows) != 1 || rows[0].Status != "declared" {
		t.Errorf("row after refused POSTs = %+v, %v, want still declared", rows, err)
	}
}

// TestOneOriginHeader: a request with two Origin headers is refused on an
// authenticated route whatever its token, the same origin twice too: a
// reader that took the first, the last or none of them would disagree
// with the browser about who is asking.
func TestOneOriginHeader(t *testing.T) {
	e := newEnv(t)
	web := e.pair("web", webOrigin)
	desk := e.pair("desktop", "")
	for _, tc := range []struct {
		name    string
		token   string
		origins []string
	}{
		{"desktop token, paired origin twice", desk, []string{webOrigin, webOrigin}},
		{"web token, paired origin twice", web, []string{webOrigin, webOrigin}},
		{"web token, paired and unpaired", web, []string{webOrigin, "https://evil.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hr, err := http.NewRequestWithContext(t.Context(), "GET", e.base+"/v1/status", nil)
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Authorization", "Bearer "+tc.token)
			for _, o := range tc.origins {
				hr.Header.Add("Origin", o)
			}
			resp, err := http.DefaultTransport.RoundTrip(hr)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusForbidden || errCode(string(b)) != "FORBIDDEN" {
				t.Fatalf("GET /v1/status with Origin %q = %d %s, want 403 FORBIDDEN", tc.origins, resp.StatusCode, b)
			}
			if acao := resp.Header.Get("Access-Control-Allow-Origin"); acao != "" {
				t.Errorf("Access-Control-Allow-Origin = %q on a refusal", acao)
			}
		})
	}
}

// TestUnpairedPageRefusedEverywhere walks the route table itself: a
// request from a page that is not paired reaches no handler, with or
// without a valid token, and its preflight gets no CORS header. That
// includes a Snug app itself: its sandboxed iframe (allow-scripts, no
// allow-same-origin) has the opaque origin and sends Origin: null, so
// nothing an app or the model inside it does can reach a requirement,
// grant or standing-approval writer. The one exception is POST
// /v1/hosts/pair, which a real origin may call to pair itself (that is how
// a web host pairs; the administrator still approves it); for any other
// origin, and for null, it is refused too.
//
// conformance: P3-C12.1-01, P3-C12.1-09, P3-S17-01
func TestUnpairedPageRefusedEverywhere(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "approved", hosts: []string{"api.mail.example"}})
	desk := e.pair("desktop", "")
	for _, rt := range routes() {
		path := concrete(rt.path)
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			for _, page := range []string{"https://evil.example", "null"} {
				unpairedPage(t, e, rt, path, page, desk)
			}
		})
	}
}

func unpairedPage(t *testing.T, e *env, rt route, path, evil, desk string) {
	t.Helper()
	for _, token := range []string{"", desk} {
		h := jsonHeader("Origin", evil)
		if token != "" {
			h["Authorization"] = "Bearer " + token
		}
		body := ""
		if rt.limit > 0 {
			body = "{}"
		}
		if rt.origin == originPairing && rt.access == open {
			body = fmt.Sprintf(`{"name":"x","surface":"web","origin":%q,"challenge":%q}`, webOrigin, testutil.ChallengeOf(verifier))
		}
		resp, got := e.do(req{method: rt.method, path: path, header: h, body: body})
		want := http.StatusForbidden
		// An authenticated route tells a real origin that it is not
		// paired, in a refusal it may read; null is refused before.
		readable := rt.access == authed && evil != "null"
		if readable {
			want = http.StatusUnauthorized
		}
		if rt.access == ctlOnly && evil != "null" {
			want = http.StatusNotFound // the TCP listener has no such route
		}
		if resp.StatusCode != want {
			t.Errorf("%s %s from %s (token %t) = %d %s, want %d", rt.method, path, evil, token != "", resp.StatusCode, got, want)
		}
		acao := resp.Header.Get("Access-Control-Allow-Origin")
		switch {
		case readable:
			if acao != evil || got != notPairedBody || resp.Header.Get("Access-Control-Expose-Headers") != "" {
				t.Errorf("%s %s from %s = %s with %v, want only the NOT_PAIRED refusal, readable by the page", rt.method, path, evil, got, resp.Header)
			}
		case acao != "" && rt.origin != originPairing:
			t.Errorf("Access-Control-Allow-Origin = %q for an unpaired page", acao)
		}
	}
	resp, _ := e.do(req{method: "OPTIONS", path: path, header: map[string]string{
		"Origin": evil, "Access-Control-Request-Method": rt.method,
		"Access-Control-Request-Headers": "authorization, content-type", "Access-Control-Request-Private-Network": "true",
	}})
	if (rt.origin == originPairing && rt.access == open || rt.access == authed) && evil != "null" {
		// Any real origin may ask to pair itself, and may send an
		// authenticated route the request refused above.
		return
	}
	if resp.StatusCode/100 == 2 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Private-Network") != "" {
		t.Errorf("preflight of %s %s from %s = %d %v, want a refusal without CORS headers", rt.method, path, evil, resp.StatusCode, resp.Header)
	}
}

// TestPreflight: a paired origin gets exact-origin CORS and private-network
// headers with Vary: Origin; never * and never credentials.
func TestPreflight(t *testing.T) {
	e := newEnv(t)
	e.pair("web", webOrigin)
	pre := func(origin, path, method, headers string, pna bool) *http.Response {
		h := map[string]string{"Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": headers}
		if pna {
			h["Access-Control-Request-Private-Network"] = "true"
		}
		resp, _ := e.do(req{method: "OPTIONS", path: path, header: h})
		return resp
	}
	resp := pre(webOrigin, "/v1/apps/app1/connections/mail/approve", "POST", "authorization, content-type", true)
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != webOrigin ||
		h.Get("Access-Control-Allow-Private-Network") != "true" || !strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") || h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight from the paired origin = %d %v", resp.StatusCode, h)
	}
	if resp := pre(webOrigin, "/v1/status", "GET", "authorization", false); resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Private-Network") != "" {
		t.Errorf("preflight without the private-network ask = %d %v, want 204 without Allow-Private-Network", resp.StatusCode, resp.Header)
	}
	for _, tc := range []struct{ name, origin, path, method, headers string }{
		{"unpaired origin, health", "https://evil.example", "/v1/health", "GET", "authorization"},
		{"unpaired origin, extra header", "https://evil.example", "/v1/status", "GET", "authorization, x-evil"},
		{"paired origin, unknown method", webOrigin, "/v1/status", "DELETE", "authorization"},
		{"paired origin, extra header", webOrigin, "/v1/status", "GET", "authorization, x-evil"},
		{"paired origin, ctl route", webOrigin, "/v1/hosts/approve", "POST", "content-type"},
		{"redeem from another origin", "https://evil.example", "/v1/hosts/pair/p_" + strings.Repeat("0", 32) + "/redeem", "POST", "content-type"},
	} {
		resp := pre(tc.origin, tc.path, tc.method, tc.headers, true)
		if resp.StatusCode/100 == 2 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: preflight = %d %v, want a refusal without CORS headers", tc.name, resp.StatusCode, resp.Header)
		}
	}
	// Only Authorization and Content-Type may be asked for: an API-key
	// header (or any other) from a paired page is refused outright.
	for _, headers := range []string{"x-api-key", "authorization, X-Api-Key", "content-type, x-api-key"} {
		if resp := pre(webOrigin, "/v1/status", "GET", headers, false); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight asking for %q = %d %v, want 403 without CORS headers", headers, resp.StatusCode, resp.Header)
		}
	}
	// A page pairing itself: the pair route's preflight, then its redeem's.
	if resp := pre("https://new.example", "/v1/hosts/pair", "POST", "content-type", true); resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://new.example" {
		t.Errorf("pair preflight = %d %v, want 204 for the origin being paired", resp.StatusCode, resp.Header)
	}
	p, err := e.host("", "https://new.example").Pair(t.Context(), PairRequest{Name: "new", Surface: "web", Origin: "https://new.example", Challenge: testutil.ChallengeOf(verifier)})
	if err != nil {
		t.Fatal(err)
	}
	if resp := pre("https://new.example", "/v1/hosts/pair/"+p.PairingID+"/redeem", "POST", "content-type", false); resp.StatusCode != 204 {
		t.Errorf("redeem preflight from the pairing's origin = %d, want 204", resp.StatusCode)
	}
	if resp := pre("https://third.example", "/v1/hosts/pair/"+p.PairingID+"/redeem", "POST", "content-type", false); resp.StatusCode != 403 {
		t.Errorf("redeem preflight from another origin = %d, want 403", resp.StatusCode)
	}
}

// TestCtlOnlyRoutesAbsentOnTCP: the host routes of the ctl channel answer
// 404 over TCP, with a valid token too, exactly like an unknown path.
func TestCtlOnlyRoutesAbsentOnTCP(t *testing.T) {
	e := newEnv(t)
	desk := e.pair("desktop", "")
	p, err := e.host("", "").Pair(t.Context(), PairRequest{Name: "waiting", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rt := range routes() {
		if rt.access != ctlOnly {
			continue
		}
		n++
		body := ""
		if rt.limit > 0 {
			body = fmt.Sprintf(`{"code":%q}`, p.Code)
		}
		resp, got := e.do(req{method: rt.method, path: concrete(rt.path), header: jsonHeader("Authorization", "Bearer "+desk), body: body})
		_, unknown := e.do(req{method: rt.method, path: "/v1/no-such-route", header: jsonHeader("Authorization", "Bearer "+desk), body: body})
		if resp.StatusCode != http.StatusNotFound || got != unknown {
			t.Errorf("TCP %s %s = %d %s, want the 404 of an unknown path %s", rt.method, rt.path, resp.StatusCode, got, unknown)
		}
	}
	if n == 0 {
		t.Fatal("the route table has no ctl-only route")
	}
	// Approval over TCP never happened: the request still waits.
	hs, err := e.ctl.Hosts(t.Context())
	if err != nil || len(hs.Pending) != 1 || hs.Pending[0].PairingID != p.PairingID {
		t.Errorf("Hosts() = %+v, %v, want the request still pending", hs, err)
	}
}

// TestFailedAuthRateLimit: failed authentications per origin and per
// token; 429 with Retry-After until the bucket refills.
func TestFailedAuthRateLimit(t *testing.T) {
	e := newEnv(t)
	web := e.pair("web", webOrigin)
	bad := func(origin string) int {
		h := map[string]string{"Authorization": "Bearer snugh_wrong"}
		if origin != "" {
			h["Origin"] = origin
		}
		resp, _ := e.do(req{method: "GET", path: "/v1/status", header: h})
		return resp.StatusCode
	}
	for i := range authBurst {
		if got := bad(webOrigin); got != 401 {
			t.Fatalf("failed attempt %d = %d, want 401", i+1, got)
		}
	}
	resp, body := e.do(req{method: "GET", path: "/v1/status", header: map[string]string{"Authorization": "Bearer snugh_wrong", "Origin": webOrigin}})
	if resp.StatusCode != 429 || errCode(body) != "RATE_LIMITED" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("attempt %d = %d %s %v, want 429 RATE_LIMITED with Retry-After", authBurst+1, resp.StatusCode, body, resp.Header)
	}
	// The origin's own valid token is never held back: failures from
	// elsewhere cannot lock a paired host out.
	resp, _ = e.do(req{method: "GET", path: "/v1/status", header: map[string]string{"Authorization": "Bearer " + web, "Origin": webOrigin}})
	if resp.StatusCode != 200 {
		t.Errorf("valid token from the limited origin = %d, want 200", resp.StatusCode)
	}
	// Another origin's failures are counted apart... but the same wrong
	// token is limited by its own key wherever it comes from.
	if got := bad(""); got != 429 {
		t.Errorf("the same wrong token without an origin = %d, want 429 (per-token limit)", got)
	}
	e.clock.Advance(authPeriod)
	if got := bad(webOrigin); got != 401 {
		t.Errorf("a failure after %v = %d, want 401 (the bucket refilled)", authPeriod, got)
	}
}

// TestPairRateLimit: pairing requests are limited per origin.
func TestPairRateLimit(t *testing.T) {
	e := newEnv(t)
	c := e.host("", "")
	for i := range pairBurst {
		if _, err := c.Pair(t.Context(), PairRequest{Name: "x", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)}); err != nil {
			t.Fatalf("Pair %d: %v", i+1, err)
		}
	}
	_, err := c.Pair(t.Context(), PairRequest{Name: "x", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)})
	if ae, ok := err.(*Error); !ok || ae.Status != 429 {
		t.Fatalf("Pair %d = %v, want 429", pairBurst+1, err)
	}
	e.clock.Advance(pairPeriod)
	if _, err := c.Pair(t.Context(), PairRequest{Name: "x", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)}); err != nil {
		t.Errorf("Pair after %v = %v, want nil", pairPeriod, err)
	}
}

// TestBodyLimits: a body over the route's limit is refused 413 before it
// is parsed (a huge body that is not even JSON says 413, not 400), with or
// without a Content-Length.
func TestBodyLimits(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "approved", hosts: []string{"api.mail.example"}})
	desk := e.pair("desktop", "")
	auth := jsonHeader("Authorization", "Bearer "+desk)
	huge := strings.Repeat("x", requirementBody+1)
	resp, body := e.do(req{method: "PUT", path: "/v1/apps/app1/connections/mail/credentials", header: auth, body: huge})
	if resp.StatusCode != 413 || errCode(body) != "PAYLOAD_TOO_LARGE" {
		t.Errorf("PUT credentials with %d bytes = %d %s, want 413", len(huge), resp.StatusCode, body)
	}
	// Without a Content-Length (chunked), MaxBytesReader stops the read.
	hr, _ := http.NewRequestWithContext(t.Context(), "PUT", e.base+"/v1/apps/app1/connections/mail/credentials", struct{ *strings.Reader }{strings.NewReader(`{"fields":{"api_key":"` + strings.Repeat("k", requirementBody) + `"}}`)})
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+desk)
	resp2, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 413 || resp2.ContentLength == 0 {
		t.Errorf("chunked oversized PUT = %d, want 413", resp2.StatusCode)
	}
	// A GET takes no body; a writer takes a small one.
	if resp, _ := e.do(req{method: "GET", path: "/v1/status", header: auth, body: "{}"}); resp.StatusCode != 413 {
		t.Errorf("GET with a body = %d, want 413", resp.StatusCode)
	}
	if resp, _ := e.do(req{method: "POST", path: "/v1/apps/app1/connections/mail/revoke", header: auth, body: "{" + strings.Repeat(" ", smallBody) + "}"}); resp.StatusCode != 413 {
		t.Errorf("writer with a %d-byte body = %d, want 413", smallBody+2, resp.StatusCode)
	}
	// Under the limit, the same route works.
	if resp, body := e.do(req{method: "PUT", path: "/v1/apps/app1/connections/mail/credentials", header: auth, body: `{"fields":{"api_key":"sk-test-value-1"}}`}); resp.StatusCode != 204 {
		t.Errorf("PUT credentials = %d %s, want 204", resp.StatusCode, body)
	}
}

// TestRouteLimitsFollowR6: every route's body limit is one of the classes,
// POST /v1/net's (when present) fits a MAX_NET_FRAME_BYTES frame, and no
// GET takes a body.
func TestRouteLimitsFollowR6(t *testing.T) {
	seen := map[string]bool{}
	for _, rt := range routes() {
		key := rt.method + " " + rt.path
		if seen[key] {
			t.Errorf("route %s listed twice", key)
		}
		seen[key] = true
		switch rt.limit {
		case noBody, smallBody, requirementBody, netBody, bulkBody:
		default:
			t.Errorf("%s: limit %d is not a size class", key, rt.limit)
		}
		if rt.method == http.MethodGet && rt.limit != noBody {
			t.Errorf("%s: a GET takes no body", key)
		}
		if rt.limit == bulkBody && rt.access != ctlOnly {
			t.Errorf("%s: bulk bodies are for the ctl channel only", key)
		}
		// The OAuth loopback redirect target's path is the contract's
		// (API.md), registered at providers as it stands.
		if !strings.HasPrefix(rt.path, "/v1/") && key != "GET /oauth/callback" {
			t.Errorf("%s: every path starts with /v1/", key)
		}
		if rt.handle == nil {
			t.Errorf("%s: no handler", key)
		}
	}
}

// TestQuickDeadline: an ordinary route's deadline comes from the route
// class, not from a server-wide WriteTimeout (which would also cut the
// event stream).
func TestQuickDeadline(t *testing.T) {
	if quickTimeout >= longTimeout || longTimeout > time.Hour {
		t.Errorf("quick %v, long %v: want quick < long ≤ 1h", quickTimeout, longTimeout)
	}
}

// TestNoAppSurface: the route table has no seat for an app. Only three
// routes are open (health, and pairing, which writes nothing but a
// request the administrator must approve); every other route needs a
// paired host or the ctl socket; and no route but the net bridge takes a
// body of the net-frame class, so no other route carries an app's frame
// to a fetch (the connection test fetches the requirement's own
// testRequest, for the user, never a frame).
//
// conformance: P1-F2-15, P3-C12.1-01
func TestNoAppSurface(t *testing.T) {
	openRoutes := map[string]bool{}
	for _, rt := range routes() {
		key := rt.method + " " + rt.path
		if rt.access == open {
			openRoutes[key] = true
		}
		if rt.limit == netBody && key != "POST /v1/net" {
			t.Errorf("%s takes a net-frame body; only POST /v1/net may", key)
		}
		if rt.class == long && key != "POST /v1/net" && key != "POST /v1/apps/:appId/connections/:slot/test" {
			t.Errorf("%s is a long route; only the net bridge and the connection test park on a confirm", key)
		}
	}
	// GET /oauth/callback is the provider's redirect of the person's
	// browser (RFC 8252): it carries no token, admits no Origin, takes no
	// body, and acts only on a state snugd signed for a flow it started.
	want := map[string]bool{"GET /v1/health": true, "POST /v1/hosts/pair": true, "POST /v1/hosts/pair/:pairingId/redeem": true, "GET /oauth/callback": true}
	if len(openRoutes) != len(want) {
		t.Errorf("open routes = %v, want exactly %v", openRoutes, want)
	}
	for k := range openRoutes {
		if !want[k] {
			t.Errorf("open route %s: every route but health, pairing and the OAuth redirect needs a paired host", k)
		}
	}
}

// TestRouteOnce: the security chain's match is the one router. On each
// channel, a request for every route, with that route's method and its
// pattern filled in, runs that route's handler and no other: no entry of
// the table is shadowed by an earlier one (POST /v1/hosts/pair beside
// DELETE /v1/hosts/{hostId}, POST /v1/standing/kill beside DELETE
// /v1/standing/{id}), and a parameter that spells a literal segment
// ("pair", "kill") still reaches the parameter route of its method.
func TestRouteOnce(t *testing.T) {
	s := New(DepsOf(newEnv(t).d), Options{Version: testVersion})
	for _, ctl := range []bool{false, true} {
		ch := s.chain(ctl)
		ch.hosts = allowedHosts(1)
		var ran *route
		for _, rt := range ch.tab.routes {
			rt.handle = func(_ *Server, c echo.Context) error {
				ran = rt
				return c.NoContent(http.StatusNoContent)
			}
		}
		check := func(rt *route, path string) {
			t.Helper()
			ran = nil
			r := httptest.NewRequest(rt.method, path, nil)
			r.Host = "127.0.0.1:1"
			w := httptest.NewRecorder()
			if rt.access == authed && !ctl {
				// Authentication is the chain's step 7, before the
				// dispatch; it is tested on its own. Here the handler
				// must not run without a token.
				ch.ServeHTTP(w, r)
				if ran != nil || (w.Code != http.StatusUnauthorized && w.Code != http.StatusTooManyRequests) {
					t.Errorf("ctl=%t %s %s without a token = %d, ran %v; want 401 (or 429 past the burst), no handler", ctl, rt.method, path, w.Code, ran)
				}
				return
			}
			ch.ServeHTTP(w, r)
			if ran != rt {
				t.Errorf("ctl=%t %s %s ran %v (status %d), want its own route %s %s", ctl, rt.method, path, ran, w.Code, rt.method, rt.path)
			}
		}
		for _, rt := range ch.tab.routes {
			check(rt, concrete(rt.path))
		}
		for _, rt := range ch.tab.routes {
			switch {
			case rt.method == http.MethodDelete && rt.path == "/v1/standing/:id":
				check(rt, "/v1/standing/kill")
			case rt.method == http.MethodDelete && rt.path == "/v1/hosts/:hostId":
				check(rt, "/v1/hosts/pair")
			}
		}
	}
}
