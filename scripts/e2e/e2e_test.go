//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// harness is everything one run sets up.
type harness struct {
	dir  string
	pki  *pki
	pub  *upstream
	priv *upstream
	// hosts are further /etc/hosts lines ("addr name") for snugd, added
	// by a test before startSnugd for the upstreams it starts itself.
	hosts []string
}

// The credentials of the scenarios. e2eSecret is base64 of 32 bytes, the
// shape Coinbase Exchange issues.
const (
	e2eKey        = "e2e-key-5f2a9c"
	e2eSecret     = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	e2ePassphrase = "e2e pass/phrase"
)

const app = "e2e-app"

// exchangeRequirement is a Coinbase-Exchange-style requirement
// for the "public" upstream. Its provider name is not in snugd's registry,
// so no borrow replaces its host.
const exchangeRequirement = `{
  "slot": "exchange",
  "provider": {"name": "E2E Exchange", "homepageUrl": "https://api.e2e.test"},
  "kind": "api_key",
  "fields": [
    {"key": "api_key", "label": "API key", "type": "text", "required": true},
    {"key": "api_secret", "label": "API secret", "type": "secret", "required": true},
    {"key": "passphrase", "label": "Passphrase", "type": "password", "required": true}
  ],
  "registration": {
    "consoleUrl": "https://api.e2e.test/console",
    "instructions": ["Open the console and create a key.", "Paste the key, the secret and the passphrase here."]
  },
  "request": {
    "headerTemplate": {
      "CB-ACCESS-KEY": "{{api_key}}",
      "CB-ACCESS-PASSPHRASE": "{{passphrase}}",
      "CB-ACCESS-TIMESTAMP": "{{request.timestamp}}",
      "CB-ACCESS-SIGN": "{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}"
    }
  },
  "declaredApiHosts": ["api.e2e.test"]
}`

// privateRequirement is a keyless connection whose one ceiling host
// resolves to the private upstream.
const privateRequirement = `{
  "slot": "private",
  "provider": {"name": "E2E Private"},
  "kind": "none",
  "declaredApiHosts": ["private.e2e.test"]
}`

// setUpHarness sets up the harness; extra are upstream namespaces of the
// calling test, created beside the harness's own (and removed with them).
func setUpHarness(t *testing.T, extra ...netns) *harness {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the end-to-end harness needs root (network namespaces); run scripts/e2e.sh as root")
	}
	lockHarness(t)
	h := &harness{dir: t.TempDir()}
	h.pki = newPKI(t, h.dir)
	before := rootNetwork(t)
	setUpNetwork(t, append([]netns{pubNS(), privNS()}, extra...)...)
	// Nothing joined the machine's own namespace: no link, address or route.
	if after := rootNetwork(t); after != before {
		t.Fatalf("setting up the harness changed the machine's own namespace:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	cert, key := h.pki.leaf(t, "api", "api.e2e.test", simplefinHost)
	h.pub = startUpstream(t, pubNS(), upstreamConfig{Role: "pub", Listen: pubNS().nsAddr + ":443", Cert: cert, Key: key, Secret: e2eSecret}, h.dir)
	cert, key = h.pki.leaf(t, "private", "private.e2e.test")
	h.priv = startUpstream(t, privNS(), upstreamConfig{Role: "priv", Listen: privNS().nsAddr + ":443", Cert: cert, Key: key}, h.dir)
	return h
}

// rootNetwork describes the machine's own namespace: its links, addresses
// and routes (IPv4 and IPv6), for the check that the harness adds nothing.
func rootNetwork(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"-o", "link", "show"}, {"-o", "addr", "show"}, {"route", "show", "table", "all"}, {"-6", "route", "show", "table", "all"}} {
		out, err := ipOut(context.Background(), args...)
		if err != nil {
			t.Fatalf("read the machine's network: %v", err)
		}
		b.WriteString(out)
	}
	return b.String()
}

// direct sends one GET from the test process itself to an upstream at
// addr, verified by the test CA: the positive control that proves the
// upstream is reachable, so that snugd's refusing to reach it means
// something.
func (h *harness) direct(t *testing.T, addr, host, path string) int {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(h.pki.ca)
	tr := &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host},
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return cliDial(ctx, "tcp", addr) // from where snugd is
		},
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+path, nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("direct GET https://%s%s: %v", host, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// netResponse is a snug:net-response frame.
type netResponse struct {
	Type    string            `json:"type"`
	OK      bool              `json:"ok"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	URL     string            `json:"url"`
	Error   *struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		Retryable bool   `json:"retryable"`
	} `json:"error"`
}

// String shows a frame in a failure message: its status, or its error's
// code and message (the error is a pointer, which %+v would print as one).
func (r netResponse) String() string {
	if r.Error != nil {
		return fmt.Sprintf("{ok:%v status:%d error:%s %q retryable:%v url:%q}", r.OK, r.Status, r.Error.Code, r.Error.Message, r.Error.Retryable, r.URL)
	}
	body := r.Body
	if len(body) > 200 {
		body = body[:200] + "…"
	}
	return fmt.Sprintf("{ok:%v status:%d body:%q url:%q}", r.OK, r.Status, body, r.URL)
}

func (r netResponse) code() string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// net sends one snug:net-request for app through POST /v1/net.
func (s *snugd) net(ctx context.Context, token, id, method, rawURL, body string) (netResponse, error) {
	frame := map[string]any{"type": "snug:net-request", "v": 1, "requestId": id, "instanceId": "e2e-instance", "url": rawURL, "method": method}
	if body != "" {
		frame["body"] = body
		frame["headers"] = map[string]string{"Content-Type": "application/json"}
	}
	var r netResponse
	st, raw, err := s.callCtx(ctx, http.MethodPost, "/v1/net", token, map[string]any{"appId": app, "frame": frame, "delivery": "app"}, &r)
	if err != nil {
		return r, err
	}
	if st != http.StatusOK || r.Type != "snug:net-response" {
		return r, fmt.Errorf("POST /v1/net = %d %s", st, raw)
	}
	return r, nil
}

func (s *snugd) mustNet(t *testing.T, token, id, method, rawURL, body string) netResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r, err := s.net(ctx, token, id, method, rawURL, body)
	if err != nil {
		t.Fatalf("net %s %s: %v", method, rawURL, err)
	}
	return r
}

// pendingConfirm waits (bounded) for a pending confirm whose URL has the
// given suffix and returns its id.
func (s *snugd) pendingConfirm(t *testing.T, token, urlSuffix string) string {
	t.Helper()
	for i := 0; i < 100; i++ { // 10 seconds at most
		var list struct {
			Confirms []map[string]any `json:"confirms"`
		}
		if st, raw, err := s.call(t, http.MethodGet, "/v1/confirms", token, nil, &list); err != nil || st != http.StatusOK {
			t.Fatalf("GET /v1/confirms = %d %s, %v", st, raw, err)
		}
		for _, c := range list.Confirms {
			if u, _ := c["url"].(string); strings.HasSuffix(u, urlSuffix) {
				id, _ := c["id"].(string)
				return id
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no pending confirm for …%s within 10 seconds", urlSuffix)
	return ""
}

func TestE2E(t *testing.T) {
	start := time.Now()
	h := setUpHarness(t)
	bin := buildSnugd(t, h.dir)
	t.Logf("set up and built in %v", time.Since(start).Round(time.Millisecond))

	t.Run("upstreams answer directly", func(t *testing.T) {
		if got := h.direct(t, pubNS().nsAddr+":443", "api.e2e.test", "/ping"); got != 200 {
			t.Errorf("direct GET pub = %d, want 200", got)
		}
		if got := h.direct(t, privNS().nsAddr+":443", "private.e2e.test", "/ping"); got != 200 {
			t.Errorf("direct GET priv = %d, want 200", got)
		}
		if n := h.priv.count("accept"); n != 1 {
			t.Errorf("private upstream accepted %d connections, want 1", n)
		}
	})

	s := startSnugd(t, h, bin)
	token := s.pairHost(t, "E2E Desktop")

	t.Run("propose, review and approve via ctl", func(t *testing.T) {
		for _, req := range []string{exchangeRequirement, privateRequirement} {
			var slot struct {
				Slot string `json:"slot"`
			}
			json.Unmarshal([]byte(req), &slot)
			st, raw, err := s.call(t, http.MethodPut, "/v1/apps/"+app+"/connections/"+slot.Slot, token, map[string]json.RawMessage{"requirement": json.RawMessage(req)}, nil)
			if err != nil || st/100 != 2 {
				t.Fatalf("PUT connection %s = %d %s, %v", slot.Slot, st, raw, err)
			}
		}
		code, out, errOut := s.ctl(t, "", "review", app, "exchange")
		if code != 0 {
			t.Fatalf("snugd ctl review = %d\n%s%s", code, out, errOut)
		}
		for _, want := range []string{"api.e2e.test", "1. Open the console and create a key.", "2. Paste the key", "https://api.e2e.test/console"} {
			if !strings.Contains(out, want) {
				t.Errorf("snugd ctl review lacks %q:\n%s", want, out)
			}
		}
		for _, slot := range []string{"exchange", "private"} {
			if code, out, errOut := s.ctl(t, "", "approve", app, slot, "--yes"); code != 0 {
				t.Fatalf("snugd ctl approve %s = %d\n%s%s", slot, code, out, errOut)
			}
		}
	})

	t.Run("ctl apps lists what needs attention", func(t *testing.T) {
		code, out, errOut := s.ctl(t, "", "apps")
		for _, want := range []string{"APP", "CREDENTIALS", app, "exchange", "E2E Exchange", "private", "no credentials stored: snugd ctl credentials set " + app + " exchange"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("snugd ctl apps = %d, lacks %q\n%s%s", code, want, out, errOut)
			}
		}
		if code, out, _ := s.ctl(t, "", "status"); !strings.Contains(out, "needs attention:") || !strings.Contains(out, app+"/exchange: no credentials stored") {
			t.Errorf("snugd ctl status = %d, does not name what needs attention\n%s", code, out)
		}
	})

	t.Run("credentials via ctl stdin", func(t *testing.T) {
		// One of three required values: stored, and the connection is not
		// connected; the missing fields are named.
		code, out, errOut := s.ctl(t, fmt.Sprintf(`{"api_key":%q}`, e2eKey), "credentials", "set", app, "exchange")
		if code != 0 || !strings.Contains(out, "not connected yet: missing required fields: api_secret, passphrase: snugd ctl credentials set "+app+" exchange") {
			t.Errorf("snugd ctl credentials set with one value = %d\n%s%s", code, out, errOut)
		}
		values := fmt.Sprintf(`{"api_key":%q,"api_secret":%q,"passphrase":%q}`, e2eKey, e2eSecret, e2ePassphrase)
		code, out, errOut = s.ctl(t, values, "credentials", "set", app, "exchange")
		if code != 0 || strings.Contains(out, "not connected") {
			t.Fatalf("snugd ctl credentials set = %d\n%s%s", code, out, errOut)
		}
		code, out, _ = s.ctl(t, "", "connections", app, "--json")
		if code != 0 || !strings.Contains(out, `"approved"`) {
			t.Errorf("snugd ctl connections --json = %d\n%s", code, out)
		}
		for _, secret := range []string{e2eKey, e2eSecret, e2ePassphrase} {
			if strings.Contains(out+errOut, secret) {
				t.Errorf("snugd ctl shows a credential")
			}
		}
	})

	// conformance: P3-C12.8.1-05, P3-X14-35, P3-X14-42, P3-C12.9-10
	t.Run("GET signed by the header template", func(t *testing.T) {
		mark := h.pub.mark()
		r := s.mustNet(t, token, "get-1", "GET", "https://api.e2e.test/accounts?limit=5", "")
		if !r.OK || r.Status != 200 || r.Body != `{"ok":true}` {
			t.Fatalf("GET /accounts = %+v", r)
		}
		if r.URL != "" && r.URL != "https://api.e2e.test/accounts?limit=5" {
			t.Errorf("net-response url = %q, want the URL the app asked for", r.URL)
		}
		if _, ok := r.Headers["x-debug"]; ok {
			t.Errorf("a non-whitelisted upstream header crossed: %v", r.Headers)
		}
		reqs := h.pub.awaitRequests(mark, 1)
		if len(reqs) != 1 {
			t.Fatalf("upstream saw %d requests, want 1", len(reqs))
		}
		got := reqs[0]
		if !got.SigOK || got.Query != "limit=5" || first(got.Header, "Cb-Access-Key") != e2eKey || first(got.Header, "Cb-Access-Passphrase") != e2ePassphrase {
			t.Errorf("upstream saw %+v; want a CB-ACCESS-SIGN that verifies against the sent timestamp", got)
		}
		// The host's token authenticates the host to snugd and goes no further.
		for name, vs := range got.Header {
			for _, v := range vs {
				if strings.Contains(v, token) || strings.EqualFold(name, "Authorization") {
					t.Errorf("upstream saw %s: the host token or an Authorization header crossed", name)
				}
			}
		}
	})

	t.Run("connection URL journaled with its resolved host", func(t *testing.T) {
		r := s.mustNet(t, token, "conn-url", "GET", "snug-connection://exchange/accounts", "")
		if !r.OK || r.Status != 200 {
			t.Fatalf("GET snug-connection://exchange/accounts = %v", r)
		}
		if strings.Contains(r.URL, "api.e2e.test") {
			t.Errorf("the app's frame names the resolved host: %v", r)
		}
		code, out, errOut := s.ctl(t, "", "journal", "--json")
		if code != 0 || !strings.Contains(out, `"host": "snug-connection://exchange"`) || !strings.Contains(out, `"resolvedHost": "api.e2e.test"`) {
			t.Errorf("snugd ctl journal --json = %d, lacks the symbolic and resolved hosts\n%s%s", code, out, errOut)
		}
	})

	// conformance: P3-X14-24, P3-X14-25
	t.Run("POST confirmed through the API", func(t *testing.T) {
		mark := h.pub.mark()
		type result struct {
			r   netResponse
			err error
		}
		done := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := s.net(ctx, token, "post-allow", "POST", "https://api.e2e.test/orders/allow", `{"size":"1"}`)
			done <- result{r, err}
		}()
		id := s.pendingConfirm(t, token, "/orders/allow")
		// The administrator sees the same confirm through snugd ctl.
		if code, out, errOut := s.ctl(t, "", "confirms", "--json"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "https://api.e2e.test/orders/allow") {
			t.Errorf("snugd ctl confirms --json = %d\n%s%s; want the parked POST", code, out, errOut)
		}
		if code, out, errOut := s.ctl(t, "", "confirms"); code != 0 || !strings.Contains(out, "request  POST https://api.e2e.test/orders/allow") || !strings.Contains(out, "body     {\n") || !strings.Contains(out, `"size": "1"`) {
			t.Errorf("snugd ctl confirms = %d\n%s%s; want the request and its body indented", code, out, errOut)
		}
		if n := len(h.pub.requestsSince(mark)); n != 0 {
			t.Fatalf("upstream saw %d requests while the confirm was parked, want 0", n)
		}
		st, raw, err := s.call(t, http.MethodPost, "/v1/confirms/"+url.PathEscape(id), token, map[string]string{"decision": "allow", "remember": "once"}, nil)
		if err != nil || st/100 != 2 {
			t.Fatalf("POST /v1/confirms/%s = %d %s, %v", id, st, raw, err)
		}
		res := <-done
		if res.err != nil || !res.r.OK || res.r.Status != 200 {
			t.Fatalf("confirmed POST = %+v, %v", res.r, res.err)
		}
		reqs := h.pub.awaitRequests(mark, 1)
		if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Body != `{"size":"1"}` || !reqs[0].SigOK {
			t.Errorf("upstream saw %+v, want one signed POST with the body", reqs)
		}
	})

	// conformance: P3-X14-27
	t.Run("unconfirmed POST times out denied", func(t *testing.T) {
		mark := h.pub.mark()
		began := time.Now()
		r := s.mustNet(t, token, "post-timeout", "POST", "https://api.e2e.test/orders/timeout", `{"size":"2"}`)
		if r.OK || r.code() != "NET_CONFIRM_DENIED" {
			t.Errorf("unconfirmed POST = %+v, want NET_CONFIRM_DENIED", r)
		}
		if d := time.Since(began); d < 4*time.Second {
			t.Errorf("denied after %v, before the 5 s confirm timeout", d)
		}
		if n := len(h.pub.requestsSince(mark)); n != 0 {
			t.Errorf("upstream saw %d requests of a denied POST, want 0", n)
		}
	})

	// conformance: P3-X14-38
	t.Run("redirect blocked", func(t *testing.T) {
		mark := h.pub.mark()
		r := s.mustNet(t, token, "redirect", "GET", "https://api.e2e.test/redirect", "")
		if r.OK || r.code() != "NET_REDIRECT_BLOCKED" {
			t.Errorf("GET /redirect = %+v, want NET_REDIRECT_BLOCKED", r)
		}
		time.Sleep(200 * time.Millisecond) // a follow-up request, if any, would land now
		reqs := h.pub.awaitRequests(mark, 1)
		if len(reqs) != 1 || reqs[0].Path != "/redirect" {
			t.Errorf("upstream saw %+v, want only the one request to /redirect", reqs)
		}
	})

	// conformance: P3-X14-39
	t.Run("oversized body refused", func(t *testing.T) {
		r := s.mustNet(t, token, "big", "GET", "https://api.e2e.test/big", "")
		if r.OK || r.code() != "NET_SIZE_EXCEEDED" {
			t.Errorf("GET /big = status %d ok %v code %q, want NET_SIZE_EXCEEDED", r.Status, r.OK, r.code())
		}
	})

	// conformance: P3-X14-40, P3-X14-41
	t.Run("echoed credential scrubbed", func(t *testing.T) {
		r := s.mustNet(t, token, "echo", "GET", "https://api.e2e.test/echo", "")
		if !r.OK || r.Status != 200 {
			t.Fatalf("GET /echo = %+v", r)
		}
		frame, _ := json.Marshal(r)
		for _, secret := range []string{e2eKey, e2ePassphrase, url.PathEscape(e2ePassphrase), url.QueryEscape(e2ePassphrase)} {
			if strings.Contains(string(frame), secret) {
				t.Errorf("the net-response carries a credential (%d bytes of it): %s", len(secret), frame)
			}
		}
		if link := r.Headers["link"]; !strings.Contains(link, "rel=next") {
			t.Errorf("GET /echo link header = %q, want the (scrubbed) whitelisted Link", link)
		}
		if !strings.Contains(r.Body, `"key":`) {
			t.Errorf("GET /echo body = %q, want the echo with the values scrubbed", r.Body)
		}
	})

	// conformance: P3-X14-17
	t.Run("SSRF: a ceiling host resolving to a private address", func(t *testing.T) {
		before := h.priv.count("accept")
		r := s.mustNet(t, token, "ssrf", "GET", "https://private.e2e.test/anything", "")
		if r.OK || r.code() != "NET_SSRF_BLOCKED" {
			t.Errorf("GET private.e2e.test = %+v, want NET_SSRF_BLOCKED", r)
		}
		if r.Error != nil && strings.Contains(r.Error.Message, privNS().nsAddr) {
			t.Errorf("the refusal names the private address: %q", r.Error.Message)
		}
		time.Sleep(200 * time.Millisecond)
		if n := h.priv.count("accept") - before; n != 0 {
			t.Errorf("the private upstream accepted %d connections from snugd, want 0", n)
		}
	})

	t.Run("Host and Origin refusals", func(t *testing.T) {
		good := fmt.Sprintf("127.0.0.1:%d", s.port)
		tests := []struct {
			name   string
			method string
			path   string
			body   any
			header []string
			want   int
		}{
			{"bad Host", "GET", "/v1/health", nil, []string{"Host", "evil.example"}, 403},
			{"bad Host with the port", "GET", "/v1/health", nil, []string{"Host", "evil.example:" + fmt.Sprint(s.port)}, 403},
			{"Origin null", "GET", "/v1/status", nil, []string{"Origin", "null"}, 403},
			{"unpaired origin", "GET", "/v1/status", nil, []string{"Origin", "https://evil.example"}, 401}, // NOT_PAIRED, and nothing else
			{"no-cors", "GET", "/v1/status", nil, []string{"Sec-Fetch-Mode", "no-cors"}, 403},
			{"WebSocket upgrade", "GET", "/v1/events", nil, []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, 403},
			{"text/plain body", "POST", "/v1/hosts/pair", "name=x", []string{"Content-Type", "text/plain"}, 415},
			{"preflight from an unpaired origin asking for a header", "OPTIONS", "/v1/net", nil, []string{"Origin", "https://evil.example", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "x-api-key", "Access-Control-Request-Private-Network", "true"}, 403},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				hdr := append([]string{"Host", good}, tc.header...)
				st, raw, err := s.call(t, tc.method, tc.path, token, tc.body, nil, hdr...)
				if err != nil || st != tc.want {
					t.Errorf("%s %s with %q = %d %s, %v; want %d", tc.method, tc.path, tc.header, st, raw, err, tc.want)
				}
				if strings.Contains(string(raw), "evil.example") {
					t.Errorf("the refusal echoes the refused value: %s", raw)
				}
			})
		}
		// The same requests with the right Host and no Origin are served.
		if st, raw, _ := s.call(t, "GET", "/v1/status", token, nil, nil); st != 200 {
			t.Errorf("GET /v1/status = %d %s, want 200", st, raw)
		}
	})

	t.Run("ctl journal and status", func(t *testing.T) {
		code, out, errOut := s.ctl(t, "", "journal", "--json")
		for _, want := range []string{"NET_REDIRECT_BLOCKED", "NET_SSRF_BLOCKED", "NET_CONFIRM_DENIED"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("snugd ctl journal --json = %d, lacks %s\n%s%s", code, want, out, errOut)
			}
		}
		for _, secret := range []string{e2eKey, e2eSecret, e2ePassphrase, token} {
			if strings.Contains(out, secret) {
				t.Errorf("snugd ctl journal shows a credential")
			}
		}
		code, out, errOut = s.ctl(t, "", "journal")
		for _, want := range []string{"TIME", "OUTCOME", "api.e2e.test", "via snug-connection://exchange", "denied: nobody answered the confirm in time", "approved by the user"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("snugd ctl journal = %d, lacks %q\n%s%s", code, want, out, errOut)
			}
		}
		code, out, errOut = s.ctl(t, "", "status")
		if code != 0 || !strings.Contains(out, "connections  2: 2 approved") || !strings.Contains(out, "hosts        1 paired") {
			t.Errorf("snugd ctl status = %d\n%s%s", code, out, errOut)
		}
	})

	t.Run("ctl doctor", func(t *testing.T) {
		code, out, errOut := s.ctl(t, "", "doctor")
		if code != 0 {
			t.Errorf("snugd ctl doctor = %d\n%s%s", code, out, errOut)
		}
	})

	t.Run("SIGTERM drains an in-flight request", func(t *testing.T) {
		type result struct {
			r   netResponse
			err error
		}
		done := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := s.net(ctx, token, "slow", "GET", "https://api.e2e.test/slow", "")
			done <- result{r, err}
		}()
		if _, ok := h.pub.waitFor(10*time.Second, func(ev event) bool { return ev.Kind == "request" && ev.Path == "/slow" }); !ok {
			t.Fatal("the upstream never saw GET /slow")
		}
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res.err != nil || !res.r.OK || res.r.Body != `{"slow":true}` {
			t.Errorf("in-flight GET across SIGTERM = %+v, %v; want the upstream's answer", res.r, res.err)
		}
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			t.Fatal("snugd did not exit within 20 s of SIGTERM")
		}
		if s.err != nil {
			t.Errorf("snugd exited with %v, want status 0", s.err)
		}
	})

	t.Run("no credential in snugd's log", func(t *testing.T) {
		log := s.log.String()
		for _, secret := range []string{e2eKey, e2eSecret, e2ePassphrase, token} {
			if strings.Contains(log, secret) {
				t.Errorf("snugd's log carries a credential or the host token (%d bytes)", len(secret))
			}
		}
	})
	t.Logf("harness took %v", time.Since(start).Round(time.Millisecond))
}

func first(h map[string][]string, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}
