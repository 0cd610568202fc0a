package api

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// notPairedBody is the whole body of the refusal a page that is not paired
// may read: one fixed sentence, nothing of the request.
const notPairedBody = `{"error":{"code":"NOT_PAIRED","message":"this origin is not paired with snugd: pair again","retryable":false}}` + "\n"

// TestNotPaired: a page on an authenticated route without a token valid
// for its origin (never paired, unpaired, a forged token, another host's)
// reads 401 NOT_PAIRED and nothing else: the exact origin in
// Access-Control-Allow-Origin, Vary: Origin, no exposed header, the fixed
// body, and no handler runs. A null, malformed or repeated Origin still
// gets a refusal it cannot read.
func TestNotPaired(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "declared", hosts: []string{"api.mail.example"}})
	const (
		revokedOrigin = "http://127.0.0.1:4780"
		twiceOrigin   = "https://twice.example"
	)
	web := e.pair("web", webOrigin)
	other := e.pair("web", "https://other.example")
	desk := e.pair("desktop", "")
	revoked := e.pair("web", revokedOrigin)
	revokedID := e.lastHost
	gone := e.pair("web", twiceOrigin)
	goneID := e.lastHost
	kept := e.pair("web", twiceOrigin) // the origin stays paired through this host
	for _, id := range []string{revokedID, goneID} {
		if err := e.ctl.DeleteHost(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	forged := "snugh_" + strings.Repeat("A", 43)
	approve := "/v1/apps/app1/connections/mail/approve"

	for _, tc := range []struct {
		name, origin, token, method, path string
	}{
		{"never paired, no token", "https://evil.example", "", "GET", "/v1/status"},
		{"never paired, a paired host's token", "https://evil.example", web, "GET", "/v1/status"},
		{"never paired, a writer", "https://evil.example", desk, "POST", approve},
		{"never paired, the event stream", "https://evil.example", web, "GET", "/v1/events"},
		{"never paired, localhost", "http://localhost:4781", "", "GET", "/v1/confirms"},
		{"revoked, its own old token", revokedOrigin, revoked, "GET", "/v1/status"},
		{"revoked, the event stream", revokedOrigin, revoked, "GET", "/v1/events"},
		{"revoked, a writer", revokedOrigin, revoked, "POST", approve},
		{"paired twice, the unpaired host's token", twiceOrigin, gone, "GET", "/v1/status"},
		{"paired, a forged token", webOrigin, forged, "GET", "/v1/status"},
		{"paired, no token", webOrigin, "", "POST", approve},
		{"paired, another origin's token", webOrigin, other, "GET", "/v1/apps/app1/connections"},
		{"paired, a desktop token", webOrigin, desk, "POST", approve},
		{"never paired, a forged token", "https://evil.example", forged, "GET", "/v1/journal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := jsonHeader("Origin", tc.origin)
			if tc.token != "" {
				h["Authorization"] = "Bearer " + tc.token
			}
			body := ""
			if tc.method == "POST" {
				body = "{}"
			}
			resp, got := e.do(req{method: tc.method, path: tc.path, header: h, body: body})
			if resp.StatusCode != http.StatusUnauthorized || got != notPairedBody {
				t.Fatalf("%s %s from %s = %d %s, want 401 and only %s", tc.method, tc.path, tc.origin, resp.StatusCode, got, notPairedBody)
			}
			if acao := resp.Header.Get("Access-Control-Allow-Origin"); acao != tc.origin {
				t.Errorf("Access-Control-Allow-Origin = %q, want %q: the page must read the refusal", acao, tc.origin)
			}
			if v := resp.Header.Values("Vary"); !strings.Contains(strings.Join(v, ","), "Origin") {
				t.Errorf("Vary = %q, want Origin", v)
			}
			for _, k := range []string{"Access-Control-Expose-Headers", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods"} {
				if v := resp.Header.Get(k); v != "" {
					t.Errorf("%s = %q on the refusal, want none", k, v)
				}
			}
		})
	}
	// Nothing ran: the declared row is still declared, and the paired
	// hosts' own tokens still work.
	rows, err := e.ctl.Connections(t.Context(), "app1")
	if err != nil || len(rows) != 1 || rows[0].Status != "declared" {
		t.Errorf("row after the refused approvals = %+v, %v, want still declared", rows, err)
	}
	for origin, tok := range map[string]string{webOrigin: web, twiceOrigin: kept} {
		if resp, got := e.do(req{method: "GET", path: "/v1/status", header: map[string]string{"Origin": origin, "Authorization": "Bearer " + tok}}); resp.StatusCode != 200 {
			t.Errorf("GET /v1/status from %s with its own token = %d %s, want 200", origin, resp.StatusCode, got)
		}
	}
	// A caller without an Origin keeps the refusals it always had.
	if resp, got := e.do(req{method: "GET", path: "/v1/status", header: map[string]string{"Authorization": "Bearer " + revoked}}); resp.StatusCode != 401 || errCode(got) != "UNAUTHORIZED" {
		t.Errorf("GET /v1/status without an Origin, an unpaired token = %d %s, want 401 UNAUTHORIZED", resp.StatusCode, got)
	}
}

// TestNotPairedUnreadable: what is not a real page gets no readable
// refusal at all: Origin null (a sandboxed app), a malformed or
// non-loopback http origin, two Origin headers, and the open health route.
func TestNotPairedUnreadable(t *testing.T) {
	e := newEnv(t)
	web := e.pair("web", webOrigin)
	for _, tc := range []struct {
		name    string
		origins []string
		path    string
	}{
		{"null", []string{"null"}, "/v1/status"},
		{"http off loopback", []string{"http://evil.example"}, "/v1/status"},
		{"a path in the origin", []string{"https://evil.example/"}, "/v1/status"},
		{"two unpaired origins", []string{"https://evil.example", "https://evil.example"}, "/v1/status"},
		{"a paired and an unpaired origin", []string{webOrigin, "https://evil.example"}, "/v1/status"},
		{"health, unpaired", []string{"https://evil.example"}, "/v1/health"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hr, err := http.NewRequestWithContext(t.Context(), "GET", e.base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Authorization", "Bearer "+web)
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
				t.Errorf("GET %s with Origin %q = %d %s, want 403 FORBIDDEN", tc.path, tc.origins, resp.StatusCode, b)
			}
			if acao := resp.Header.Get("Access-Control-Allow-Origin"); acao != "" {
				t.Errorf("Access-Control-Allow-Origin = %q, want none", acao)
			}
		})
	}
}

// TestNotPairedPreflight: the preflight of an authenticated route is
// answered for a page that is not paired, so that it can send the request
// and read NOT_PAIRED; it grants no header beyond Authorization and
// Content-Type, and null, a repeated Origin and the open health route get
// no answer a browser accepts.
func TestNotPairedPreflight(t *testing.T) {
	e := newEnv(t)
	pre := func(origins []string, path, method, headers string) *http.Response {
		t.Helper()
		hr, err := http.NewRequestWithContext(t.Context(), "OPTIONS", e.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range origins {
			hr.Header.Add("Origin", o)
		}
		hr.Header.Set("Access-Control-Request-Method", method)
		hr.Header.Set("Access-Control-Request-Headers", headers)
		hr.Header.Set("Access-Control-Request-Private-Network", "true")
		resp, err := http.DefaultTransport.RoundTrip(hr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	evil := []string{"https://evil.example"}
	resp := pre(evil, "/v1/apps/app1/connections/mail/approve", "POST", "authorization, content-type")
	h := resp.Header
	if resp.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != evil[0] ||
		h.Get("Access-Control-Allow-Headers") != "Authorization, Content-Type" || h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight of a writer from an unpaired page = %d %v, want 204 for the refusal to be read", resp.StatusCode, h)
	}
	for _, tc := range []struct {
		name    string
		origins []string
		path    string
		method  string
		headers string
	}{
		{"an extra header", evil, "/v1/status", "GET", "authorization, x-api-key"},
		{"a cookie header", evil, "/v1/status", "GET", "cookie"},
		{"null", []string{"null"}, "/v1/status", "GET", "authorization"},
		{"two origins", []string{evil[0], evil[0]}, "/v1/status", "GET", "authorization"},
		{"health", evil, "/v1/health", "GET", ""},
		{"a method the route lacks", evil, "/v1/status", "DELETE", "authorization"},
	} {
		resp := pre(tc.origins, tc.path, tc.method, tc.headers)
		if resp.StatusCode/100 == 2 || resp.Header.Get("Access-Control-Allow-Origin") != "" || resp.Header.Get("Access-Control-Allow-Headers") != "" {
			t.Errorf("%s: preflight = %d %v, want a refusal without CORS headers", tc.name, resp.StatusCode, resp.Header)
		}
	}
}
