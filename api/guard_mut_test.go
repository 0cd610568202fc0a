package api

import (
	"net/http"
	"testing"
)

// TestPreflightOfAnUnknownPath: an OPTIONS with an Origin to a path no
// route serves is answered as any request to it is, 404, even from a
// paired origin: only a path some route serves has a preflight.
func TestPreflightOfAnUnknownPath(t *testing.T) {
	e := newEnv(t)
	e.pair("web", webOrigin)
	h := map[string]string{"Origin": webOrigin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}
	resp, body := e.do(req{method: "OPTIONS", path: "/v1/no-such-route", header: h})
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight of an unknown path = %d %v %s, want 404 without CORS headers", resp.StatusCode, resp.Header, body)
	}
}
