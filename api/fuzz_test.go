package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/hostauth"

	"github.com/snug/snugd/internal/testutil"
)

// FuzzChain sends arbitrary requests through the TCP channel and checks
// the chain's promises: the security headers on every answer; never a
// 500; no answer
// but 403 to a Host that is not loopback with the port; never a wildcard
// or credentialed CORS answer; a 2xx from an authed route only with the
// paired token its origin allows; CORS headers only for an admitted
// origin.
func FuzzChain(f *testing.F) {
	const port = 4747
	dir := filepath.Join(f.TempDir(), "d")
	d, err := daemon.New(f.Context(), daemon.Config{DataDir: dir})
	if err != nil {
		f.Fatal(err)
	}
	runDaemon(f, d)
	f.Cleanup(func() { d.Close() })
	tokens := map[string]string{} // token → origin ("" desktop)
	for _, origin := range []string{"", webOrigin} {
		surface := hostauth.SurfaceDesktop
		if origin != "" {
			surface = hostauth.SurfaceWeb
		}
		p, err := d.Hosts().Pair(f.Context(), hostauth.PairRequest{Name: "fuzz", Surface: surface, Origin: origin, Challenge: testutil.ChallengeOf(verifier)}, origin)
		if err != nil {
			f.Fatal(err)
		}
		d.Hosts().Approve(f.Context(), p.Code)
		r, err := d.Hosts().Redeem(f.Context(), p.ID, verifier, origin)
		if err != nil {
			f.Fatal(err)
		}
		tokens[r.Token.Reveal()] = origin
	}
	var desk, web string
	for tok, o := range tokens {
		if o == "" {
			desk = tok
		} else {
			web = tok
		}
	}
	s := New(DepsOf(d), Options{Version: testVersion})
	h := s.TCPHandler(port)
	allowed := allowedHosts(port)

	f.Add("GET", "/v1/health", "127.0.0.1:4747", "", "", "", "")
	f.Add("GET", "/v1/status", "localhost:4747", "", "Bearer "+desk, "", "")
	f.Add("GET", "/v1/status", "127.0.0.1:4747", webOrigin, "Bearer "+web, "", "")
	f.Add("GET", "/v1/status", "127.0.0.1:4747", webOrigin, "Bearer "+desk, "", "")
	f.Add("OPTIONS", "/v1/status", "127.0.0.1:4747", webOrigin, "", "", "")
	f.Add("POST", "/v1/hosts/pair", "127.0.0.1:4747", "https://x.example", "", "application/json", `{"name":"x","surface":"web","origin":"https://x.example","challenge":"`+testutil.ChallengeOf(verifier)+`"}`)
	f.Add("POST", "/v1/hosts/pair", "127.0.0.1:4747", "", "", "application/json", `{"name":"x","surface":"desktop","challenge":"`+testutil.ChallengeOf(verifier)+`","invitation":"snugi_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`)
	f.Add("POST", "/v1/hosts/pair", "127.0.0.1:4747", "https://x.example", "", "application/json", `{"name":"x","surface":"web","origin":"https://x.example","challenge":"`+testutil.ChallengeOf(verifier)+`","invitation":"snugi_x"}`)
	f.Add("POST", "/v1/hosts/invite", "127.0.0.1:4747", "", "Bearer "+desk, "application/json", `{"name":"x"}`)
	f.Add("POST", "/v1/apps/a/connections/s/approve", "[::1]:4747", "", "Bearer "+desk, "text/plain", "{}")
	f.Add("GET", "/v1/hosts", "127.0.0.1:4747", "null", "Bearer "+desk, "", "")
	f.Add("PUT", "/v1/apps/a%2Fb/connections/s/credentials", "evil.example:4747", "", "Bearer "+desk, "application/json", `{"fields":{"k":"v"}}`)
	f.Fuzz(func(t *testing.T, method, target, host, origin, authz, ctype, body string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || !validMethod(method) {
			return
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		r := (&http.Request{Method: method, URL: u, Host: host, Header: http.Header{}, Body: http.NoBody, ContentLength: int64(len(body))}).WithContext(ctx)
		if body != "" {
			r.Body = httpBody(body)
		}
		for k, v := range map[string]string{"Origin": origin, "Authorization": authz, "Content-Type": ctype} {
			if v != "" {
				r.Header.Set(k, v)
			}
		}
		if method == "OPTIONS" {
			r.Header.Set("Access-Control-Request-Method", "GET")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		hdr := rec.Header()
		if hdr.Get("Snugd-Version") != testVersion || hdr.Get("X-Content-Type-Options") != "nosniff" || hdr.Get("Cache-Control") != "no-store" ||
			hdr.Get("Content-Security-Policy") != "default-src 'none'; frame-ancestors 'none'" {
			t.Fatalf("security headers missing: %v", hdr)
		}
		// The deadline only ends streams and parked calls; a request it cut
		// short on a loaded machine is not a handler failure.
		if rec.Code == http.StatusInternalServerError && ctx.Err() == nil {
			t.Fatalf("%s %s answered 500: %s", method, target, rec.Body)
		}
		hostOK := false
		for _, a := range allowed {
			hostOK = hostOK || a == host
		}
		if !hostOK && rec.Code != http.StatusForbidden {
			t.Fatalf("Host %q answered %d, want 403", host, rec.Code)
		}
		acao := hdr.Get("Access-Control-Allow-Origin")
		if acao == "*" || hdr.Get("Access-Control-Allow-Credentials") != "" || acao != "" && acao != origin {
			t.Fatalf("CORS headers %v for Origin %q", hdr, origin)
		}
		if rec.Code/100 != 2 {
			return
		}
		if origin == "null" || strings.Contains(origin, "evil") {
			t.Fatalf("Origin %q got %d", origin, rec.Code)
		}
		rt, _, _ := newTable(false).match(method, r.URL.EscapedPath())
		if rt == nil && method != "OPTIONS" {
			t.Fatalf("%s %s answered %d without a route", method, target, rec.Code)
		}
		if rt != nil && rt.access == authed && method != "OPTIONS" {
			tok, _ := bearer(r)
			o, ok := tokens[tok]
			if !ok || o != origin {
				t.Fatalf("authed %s %s answered %d with token %q from %q", method, target, rec.Code, authz, origin)
			}
		}
	})
}

func validMethod(m string) bool {
	switch m {
	case "GET", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "HEAD":
		return true
	}
	return false
}

type stringBody struct{ *strings.Reader }

func (stringBody) Close() error { return nil }

func httpBody(s string) stringBody { return stringBody{strings.NewReader(s)} }

// FuzzMatch: the matcher never panics; a match's literal segments are the
// path's, its parameters are non-empty, and escaping them back matches
// the same route.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{"/v1/health", "/v1/apps/a%2Fb/connections/mail/approve", "/v1/apps//connections", "/v1/%73tatus", "/v1/schemas/snug:net-request", "/v1/hosts/pair/p_1/redeem", "/v1/apps/%ZZ/connections"} {
		f.Add("GET", s)
		f.Add("POST", s)
	}
	tab := newTable(true)
	f.Fuzz(func(t *testing.T, method, path string) {
		rt, params, _ := tab.match(method, path)
		if rt == nil {
			return
		}
		rebuilt := rt.path
		for name, v := range params {
			if v == "" {
				t.Fatalf("match(%q) gave an empty %s", path, name)
			}
			rebuilt = strings.Replace(rebuilt, ":"+name, url.PathEscape(v), 1)
		}
		again, p2, _ := tab.match(method, rebuilt)
		if again != rt || len(p2) != len(params) {
			t.Fatalf("match(%q) = %s, but its rebuilt path %q matches %v", path, rt.path, rebuilt, again)
		}
		for k, v := range params {
			if p2[k] != v {
				t.Fatalf("param %s = %q, rebuilt %q", k, v, p2[k])
			}
		}
	})
}
