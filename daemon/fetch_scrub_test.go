package daemon

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/scrub"
	"github.com/snug/snugd/daemon/wire"
)

// TestScrub: a provider that echoes the credential raw, percent-encoded
// (both spellings, either hex case) and in a Link header gets every echo
// scrubbed; a base64 re-encoding is not (the scrub's documented limit,
// §14.1); headers outside the whitelist never cross; content-length
// matches the delivered body.
//
// conformance: P3-X14-40, P3-X14-41, P3-X14-42, P3-X14.1-01, P1-SEC-01, P3-C12-09
func TestScrub(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	b64 := base64.StdEncoding.EncodeToString([]byte(secretKey))
	r.up.handle(func(w http.ResponseWriter, req *http.Request) {
		body := strings.Join([]string{
			"raw=" + secretKey,
			"query=" + url.QueryEscape(secretKey),
			"path=" + url.PathEscape(secretKey),
			"lower=" + lowerHex(url.QueryEscape(secretKey)),
			"uri=" + req.RequestURI,
			"b64=" + b64,
		}, "\n")
		w.Header().Set("Link", `<https://api.example.com/next?appid=`+url.QueryEscape(secretKey)+`>; rel="next"`)
		w.Header().Set("X-Debug", "key="+secretKey)
		w.Header().Set("Set-Cookie", "s=1")
		w.Header().Set("X-RateLimit-Remaining", "9 "+secretKey)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		io.WriteString(w, body)
	})
	res, resp := r.net(t, "app1", frame("GET", "https://api.example.com/v1?x=1", nil))
	if res.Code != "" {
		t.Fatalf("Net = %q", res.Code)
	}
	for _, spelling := range []string{secretKey, url.QueryEscape(secretKey), url.PathEscape(secretKey), lowerHex(url.QueryEscape(secretKey)), "Secret"} {
		if strings.Contains(string(res.Frame), spelling) {
			t.Errorf("frame carries %q: %s", spelling, res.Frame)
		}
	}
	if !strings.Contains(resp.Body, "b64="+b64) {
		t.Errorf("body lost the base64 spelling; the scrub is exact-substring only: %q", resp.Body)
	}
	if strings.Count(resp.Body, scrub.Mark) < 5 {
		t.Errorf("body = %q, want five scrubbed echoes", resp.Body)
	}
	if _, ok := resp.Headers["x-debug"]; ok {
		t.Errorf("x-debug crossed: %v", resp.Headers)
	}
	if _, ok := resp.Headers["set-cookie"]; ok {
		t.Errorf("set-cookie crossed: %v", resp.Headers)
	}
	if !strings.Contains(resp.Headers["link"], scrub.Mark) || !strings.Contains(resp.Headers["x-ratelimit-remaining"], scrub.Mark) {
		t.Errorf("whitelisted headers not scrubbed: %v", resp.Headers)
	}
	if got := resp.Headers["content-length"]; got != strconv.Itoa(len(resp.Body)) {
		t.Errorf("content-length = %q, want %d", got, len(resp.Body))
	}
}

// conformance: P3-X14.2-01, P3-L16-13, P3-L16-04, P1-SEC-02, P3-C12.9-07
func TestLLMDelivery(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	r.up.handle(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Link", "<http://192.168.1.20/x>")
		io.WriteString(w, `{"bridge":"192.168.1.20","nas":"10.1.2.3","other":"172.20.0.9","public":"198.51.100.7","key":"`+secretKey+`","uri":"`+req.RequestURI+`"}`)
	})
	f := frame("GET", "https://api.example.com/v1", nil)
	_, app := r.netCtx(t, t.Context(), "app1", f, fetch.DeliveryApp)
	_, llm := r.netCtx(t, t.Context(), "app1", f, fetch.DeliveryLLM)
	for _, lit := range []string{"192.168.1.20", "10.1.2.3", "172.20.0.9"} {
		if !strings.Contains(app.Body, lit) {
			t.Errorf("app-bound body lost %s: %s", lit, app.Body)
		}
		if strings.Contains(llm.Body, lit) || strings.Contains(llm.Headers["link"], lit) {
			t.Errorf("model-bound answer keeps %s: %s %v", lit, llm.Body, llm.Headers)
		}
	}
	if reqs := r.up.requests(); len(reqs) != 2 || reqs[0].Header.Get("X-Key") != secretKey || reqs[1].Header.Get("X-Key") != secretKey || reqs[0].URI != reqs[1].URI {
		t.Errorf("the model's request did not take the app's path: %+v", reqs)
	}
	if !strings.Contains(llm.Body, "198.51.100.7") {
		t.Errorf("model-bound body lost a public address: %s", llm.Body)
	}
	for _, body := range []string{app.Body, llm.Body} {
		if strings.Contains(body, "Secret") {
			t.Errorf("body carries the credential or the credentialed url: %s", body)
		}
	}
}

// conformance: P3-X14.3-01, P3-X14.3-02, P3-X14.3-03, P3-X14.3-05, P3-X14.3-06
func TestProviderErrorInNet(t *testing.T) {
	html := "<html><head><style>body{}</style></head><body><h1>Bad</h1>" + strings.Repeat("<p>oops "+secretKey+"</p>", 200) + "</body></html>"
	escaped := ""
	for _, c := range secretKey {
		escaped += `\u` + strconv.FormatInt(int64(0x10000+c), 16)[1:]
	}
	cases := []struct {
		name, body string
		want       string
	}{
		{"html page", html, "Bad oops " + scrub.Mark},
		{"json error.message", `{"error":{"message":"bad key ` + secretKey + `","code":401}}`, "bad key " + scrub.Mark},
		{"escaped secret", `{"message":"bad key ` + escaped + `"}`, "bad key " + scrub.Mark},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, tc.body)
			})
			res, resp := r.net(t, "app1", frame("GET", "https://api.example.com/", nil))
			if res.Code != "" || resp.Status != 401 {
				t.Fatalf("Net = %q/%d, want a 401 response", res.Code, resp.Status)
			}
			pe := res.ProviderError
			if len([]rune(pe)) > scrub.MaxProviderErrorChars || strings.ContainsAny(pe, "<>") || strings.Contains(pe, "Secret") {
				t.Fatalf("ProviderError = %q: want ≤160 chars, no tags, no secret", pe)
			}
			if !strings.HasPrefix(pe, tc.want) {
				t.Errorf("ProviderError = %q, want prefix %q", pe, tc.want)
			}
			if strings.Contains(string(res.Frame), pe) && pe != "" && tc.name != "json error.message" {
				t.Errorf("the extract was put into the frame")
			}
		})
	}
}

// TestCoinbaseHMAC: an upstream recomputes the signature from the
// timestamp, method, path and body it actually received.
//
// conformance: P3-C12.8.1-03, P3-C12.8.1-05, P3-X14-35
func TestCoinbaseHMAC(t *testing.T) {
	secret := base64.StdEncoding.EncodeToString([]byte("coinbase-hmac-secret-32-bytes!!!"))
	cb := map[string]any{
		"slot":     "coinbase",
		"provider": map[string]any{"name": "Exchange Example"},
		"kind":     "api_key",
		"fields": []any{
			map[string]any{"key": "api_key", "label": "Key", "type": "secret"},
			map[string]any{"key": "api_secret", "label": "Secret", "type": "secret"},
			map[string]any{"key": "passphrase", "label": "Passphrase", "type": "password"},
		},
		"request": map[string]any{"headerTemplate": map[string]any{
			"CB-ACCESS-KEY":        "{{api_key}}",
			"CB-ACCESS-PASSPHRASE": "{{passphrase}}",
			"CB-ACCESS-TIMESTAMP":  "{{request.timestamp}}",
			"CB-ACCESS-SIGN":       "{{hmac_sha256_b64(api_secret, request.timestamp, request.method, request.pathAndQuery, request.body)}}",
		}},
		"declaredApiHosts": []any{"exchange.example.com"},
	}
	r := newRig(t)
	r.connect(t, "app1", cb, map[string]string{"api_key": "cbkey", "api_secret": secret, "passphrase": "pass phrase"})
	r.autoDecide(t, true, fetch.RememberOnce)
	body := `{"size":"0.01","side":"buy"}`
	res, _ := r.net(t, "app1", frame("POST", "https://exchange.example.com/orders?client=1", map[string]any{
		"body": body, "headers": map[string]any{"CB-ACCESS-TIMESTAMP": "1", "cb_access_sign": "forged", "Content-Type": "application/json"}}))
	if res.Code != "" {
		t.Fatalf("Net = %q", res.Code)
	}
	got := r.up.last(t)
	ts := got.Header.Get("CB-ACCESS-TIMESTAMP")
	if ts == "1" || ts == "" {
		t.Fatalf("timestamp = %q: want the render pass's, never the app's", ts)
	}
	key, _ := base64.StdEncoding.DecodeString(secret)
	m := hmac.New(sha256.New, key)
	io.WriteString(m, ts+got.Method+got.URI+got.Body)
	want := base64.StdEncoding.EncodeToString(m.Sum(nil))
	if sign := got.Header.Get("CB-ACCESS-SIGN"); sign != want {
		t.Errorf("CB-ACCESS-SIGN = %q, recomputed from what was received = %q", sign, want)
	}
	if vs := got.Header.Values("CB-ACCESS-SIGN"); len(vs) != 1 || got.Header.Get("Cb_Access_Sign") != "" {
		t.Errorf("an app header shadows the injected signature: %v", got.Header)
	}
	if got.Body != body || got.Header.Get("CB-ACCESS-PASSPHRASE") != "pass phrase" {
		t.Errorf("upstream got body %q, passphrase %q", got.Body, got.Header.Get("CB-ACCESS-PASSPHRASE"))
	}
}

// TestStripBelt bypasses gate 1 (whose parser refuses these headers) and
// proves gate 7 still strips every credential-shaped, hop-by-hop and
// encoding header before anything is sent.
//
// conformance: P3-X14-34, P1-SEC-04, P3-C12-01
func TestStripBelt(t *testing.T) {
	r := newRig(t)
	r.connect(t, "app1", noneReq("open", apiHost), nil)
	headers := map[string]string{
		"Authorization": "Bearer app", "cookie": "a=b", "X_Api_Key": "k", "SET-COOKIE": "c", "Proxy-Authorization": "p",
		"Accept-Encoding": "gzip", "Connection": "close", "Te": "trailers", "Proxy-Foo": "x", "Upgrade": "h2c",
		"X-Keep": "yes",
	}
	// Method overrides: a GET is never confirmed, so a server that takes
	// X-HTTP-Method-Override: DELETE must never see one.
	overrides := map[string]string{"X-HTTP-Method-Override": "DELETE", "x_http_method": "PUT", "X-Method-Override": "PATCH"}
	sent := map[string]string{}
	for _, m := range []map[string]string{headers, overrides} {
		for k, v := range m {
			sent[k] = v
		}
	}
	f := &fetch.Fetch{Call: fetch.NetCall{AppID: "app1", Delivery: fetch.DeliveryApp}, Start: r.d.now(), Index: r.d.grants.Snapshot(),
		Req: wire.NetRequest{RequestID: "r1", InstanceID: "i1", URL: "https://api.example.com/x", Method: "GET", Headers: sent}}
	res := r.d.exec.Run(t.Context(), f, fetch.Gates()[1:]) // every gate but the shape gate
	if res.Code != "" {
		t.Fatalf("Net = %q", res.Code)
	}
	got := r.up.last(t).Header
	for name := range sent {
		if name == "X-Keep" {
			continue
		}
		if v := got.Get(name); v != "" {
			t.Errorf("upstream got %s: %q", name, v)
		}
	}
	if got.Get("X-Api-Key") != "" || got.Get("X-Keep") != "yes" {
		t.Errorf("upstream headers = %v", got)
	}

	// The same overrides through the whole executor, gate 1 included: the
	// GET is sent as a GET, unconfirmed, without them.
	res, _ = r.net(t, "app1", frame("GET", "https://api.example.com/x", map[string]any{"headers": map[string]any{
		"X-HTTP-Method-Override": "DELETE", "X-HTTP-Method": "DELETE", "X-Method-Override": "DELETE"}}))
	if res.Code != "" {
		t.Fatalf("Net(GET with overrides) = %q", res.Code)
	}
	last := r.up.last(t)
	for name := range last.Header {
		if strings.Contains(strings.ToLower(name), "method") {
			t.Errorf("upstream got %s: %q", name, last.Header.Get(name))
		}
	}
	if last.Method != "GET" {
		t.Errorf("upstream method = %s, want GET", last.Method)
	}
}

type fakeTokens struct {
	tok string
	err error
}

func (f fakeTokens) AccessToken(ctx context.Context, _ fetch.TokenRequest) (string, error) {
	return f.tok, f.err
}

// conformance: P3-X14-35
func TestOAuthBearer(t *testing.T) {
	oauth := map[string]any{
		"slot": "gh", "provider": map[string]any{"name": "Example OAuth"}, "kind": "oauth2_auth_code",
		"fields":           []any{map[string]any{"key": "client_id", "label": "Client", "type": "text"}},
		"endpoints":        map[string]any{"authorize": "https://auth.example.com/authorize", "token": "https://auth.example.com/token"},
		"declaredApiHosts": []any{apiHost},
	}
	cases := []struct {
		name   string
		tokens fetch.TokenSource
		want   errcode.Code
	}{
		{"no token source", nil, errcode.NetAuthFailed},
		{"refresh failed", fakeTokens{err: errors.New("refresh token rejected: " + secretKey)}, errcode.NetAuthFailed},
		{"token", fakeTokens{tok: "gho_token_value"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *Config) { c.Tokens = tc.tokens })
			r.connect(t, "app1", oauth, nil)
			r.up.handle(func(w http.ResponseWriter, req *http.Request) {
				io.WriteString(w, "echo "+req.Header.Get("Authorization"))
			})
			res, resp := r.net(t, "app1", frame("GET", "https://api.example.com/user", nil))
			if res.Code != tc.want {
				t.Fatalf("Net = %q, want %q", res.Code, tc.want)
			}
			if strings.Contains(r.logs.String(), secretKey) {
				t.Errorf("the log carries a credential: %s", r.logs.String())
			}
			if tc.want != "" {
				if strings.Contains(string(res.Frame), "Secret") || len(r.up.requests()) != 0 {
					t.Errorf("refusal leaks or sent: %s", res.Frame)
				}
				return
			}
			if got := r.up.last(t).Header.Get("Authorization"); got != "Bearer gho_token_value" {
				t.Errorf("upstream Authorization = %q", got)
			}
			if strings.Contains(resp.Body, "gho_token_value") {
				t.Errorf("echoed token not scrubbed: %q", resp.Body)
			}
		})
	}
}

// TestLANPin: a LAN request over https verifies the device against the
// slot's pin; a different certificate fails closed with nothing sent, and
// the refusal names no address.
//
// conformance: P3-C12.11-14, P3-C12.11-15, P3-X14-22
func TestLANPin(t *testing.T) {
	for _, tc := range []struct {
		name string
		pin  func(r *rig) string
		want errcode.Code
	}{
		{"pinned", func(r *rig) string { return r.lanPin() }, ""},
		{"mismatch", func(*rig) string { return strings.Repeat("ab", 32) }, errcode.NetFetchFailed},
		{"no pin", func(*rig) string { return "" }, errcode.NetFetchFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
			if pin := tc.pin(r); pin != "" {
				r.setPin(t, "app1", "hue", pin)
			}
			res, resp := r.net(t, "app1", frame("GET", "https://192.168.1.20/clip/v2/resource", nil))
			if res.Code != tc.want {
				t.Fatalf("Net = %q, want %q", res.Code, tc.want)
			}
			if tc.want == "" {
				if got := r.lanUp.last(t).Header.Get("Hue-Application-Key"); got != secretKey {
					t.Errorf("device got key %q", got)
				}
				return
			}
			if len(r.lanUp.requests()) != 0 || strings.Contains(resp.Error.Message, "192.168") {
				t.Errorf("mismatch sent %d requests, message %q", len(r.lanUp.requests()), resp.Error.Message)
			}
		})
	}
}

// TestLANRowUnchangedByProfile: a LAN row is approved and kept as it is
// under the browser profile too; only the request is refused. Nothing about
// the surface is written into the row.
//
// conformance: P3-C12.11-11
func TestLANRowUnchangedByProfile(t *testing.T) {
	rows := map[fetch.TransportPolicy]grants.Connection{}
	for _, policy := range []fetch.TransportPolicy{fetch.PolicyDesktop, fetch.PolicyBrowser} {
		r := newRig(t, func(c *Config) { c.TransportPolicy = policy })
		r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
		before, err := r.d.grants.Connection(t.Context(), "app1", "hue")
		if err != nil {
			t.Fatal(err)
		}
		res, _ := r.net(t, "app1", frame("GET", "http://192.168.1.20/api/config", nil))
		if policy == fetch.PolicyBrowser && res.Code == "" {
			t.Fatal("the browser profile admitted a LAN request")
		}
		after, _ := r.d.grants.Connection(t.Context(), "app1", "hue")
		if after.RequirementJSON != before.RequirementJSON || strings.Join(after.AllowedHosts, ",") != "192.168.1.20" || after.Status != grants.StatusApproved {
			t.Fatalf("%s: the LAN row changed: %+v", policy, after)
		}
		rows[policy] = after
	}
	if rows[fetch.PolicyDesktop].RequirementJSON != rows[fetch.PolicyBrowser].RequirementJSON {
		t.Fatal("the stored requirement depends on the transport policy")
	}
}

// TestEncodedBodyRefused: gate 7 never forwards Accept-Encoding, so an
// upstream (or helper) that compresses anyway answers in a coding the
// scrub cannot read: the credential it echoes would cross inside the
// compressed bytes. Such a body is refused; identity and an empty body
// pass.
//
// conformance: P3-X14-40
func TestEncodedBodyRefused(t *testing.T) {
	gz := func(s string) []byte {
		var b bytes.Buffer
		z := gzip.NewWriter(&b)
		io.WriteString(z, s)
		z.Close()
		return b.Bytes()
	}
	cases := []struct {
		name     string
		encoding []string
		body     []byte
		want     errcode.Code
	}{
		{"gzip", []string{"gzip"}, gz("key=" + secretKey), errcode.NetFetchFailed},
		{"uppercase, listed after identity", []string{"identity, GZIP"}, gz("key=" + secretKey), errcode.NetFetchFailed},
		{"second header line", []string{"identity", "br"}, []byte("\x1b\x00key"), errcode.NetFetchFailed},
		{"identity", []string{"identity"}, []byte("plain"), ""},
		{"encoded but empty", []string{"gzip"}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
				w.Header()["Content-Encoding"] = tc.encoding
				w.Write(tc.body)
			})
			res, _ := r.net(t, "app1", frame("GET", "https://api.example.com/", nil))
			if res.Code != tc.want {
				t.Fatalf("Net = %q, want %q", res.Code, tc.want)
			}
			if got := r.up.last(t).Header.Get("Accept-Encoding"); got != "" {
				t.Errorf("upstream was offered Accept-Encoding %q", got)
			}
		})
	}
	t.Run("helper", func(t *testing.T) {
		h := &fakeHelper{status: 200, header: http.Header{"Content-Encoding": {"gzip"}}, body: string(gz("tok"))}
		r := newRig(t, func(c *Config) { c.Helpers = helpersOf(map[string]*fakeHelper{"sim": h}) })
		r.connectSim(t, "app1", "wa", map[string]string{"helper_token": "gzip-test-token-0123456789abcdef0123456789abcdef"})
		if res, _ := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/x", nil)); res.Code != errcode.NetFetchFailed {
			t.Fatalf("Net = %q, want NET_FETCH_FAILED", res.Code)
		}
	})
}

// TestLANPinnedRefusesHTTP: once a LAN device's pin is recorded, every
// later request verifies against it. Plain http cannot, so it is
// refused before anything is dialed: otherwise an app could take the
// credential around the pin, in clear text, to whatever answers at the
// address. A device never paired over TLS still takes http.
//
// conformance: P3-C12.11-14, P3-X14-14
func TestLANPinnedRefusesHTTP(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state func(t *testing.T, r *rig)
		url   string
		want  errcode.Code
	}{
		{"unpinned http", nil, "http://192.168.1.20/api", ""},
		{"pinned http", func(t *testing.T, r *rig) { r.setPin(t, "app1", "hue", r.lanPin()) }, "http://192.168.1.20/api", errcode.NetSchemeBlocked},
		{"pinned http, another port", func(t *testing.T, r *rig) { r.setPin(t, "app1", "hue", r.lanPin()) }, "http://192.168.1.20:8080/api", errcode.NetSchemeBlocked},
		{"pinned https", func(t *testing.T, r *rig) { r.setPin(t, "app1", "hue", r.lanPin()) }, "https://192.168.1.20/api", ""},
		{"unreadable state, http", func(t *testing.T, r *rig) {
			err := r.d.store.Update(t.Context(), func(tx *store.Tx) error {
				return tx.PutSecret(store.ConnectionStateKey("app1", "hue"), store.Secret("{not json"))
			})
			if err != nil {
				t.Fatal(err)
			}
			r.d.grants.ForgetCache()
		}, "http://192.168.1.20/api", errcode.NetSchemeBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
			if tc.state != nil {
				tc.state(t, r)
			}
			res, _ := r.net(t, "app1", frame("GET", tc.url, nil))
			if res.Code != tc.want {
				t.Fatalf("Net(%s) = %q, want %q", tc.url, res.Code, tc.want)
			}
			if tc.want != "" && len(r.lanDial.Dials()) != 0 {
				t.Errorf("refused request dialed the device %d times", len(r.lanDial.Dials()))
			}
		})
	}
}

// TestProviderErrorCutAfterScrub: the §15 and §14.2 scrubs of the
// provider-error extract run before it is cut to 160 characters, so a
// resolved host or a private address the cut goes through does not
// survive as its head.
//
// conformance: P3-U15-19, P3-X14.2-01, P3-X14.3-01
func TestProviderErrorCutAfterScrub(t *testing.T) {
	pad := strings.Repeat("x", 150)
	for _, tc := range []struct {
		name, url, msg, leak string
		del                  fetch.Delivery
	}{
		{"resolved host", "snug-connection://ex/v1", pad + " " + apiHost + " refused", "api.exam", fetch.DeliveryApp},
		{"private address, model-bound", "https://api.example.com/v1", pad + " 192.168.100.200 refused", "192.168.1", fetch.DeliveryLLM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `{"message":"`+tc.msg+`"}`)
			})
			res, _ := r.netCtx(t, t.Context(), "app1", frame("GET", tc.url, nil), tc.del)
			if res.Status != 403 {
				t.Fatalf("Net = %q/%d, want a 403 response", res.Code, res.Status)
			}
			if pe := res.ProviderError; strings.Contains(pe, tc.leak) || !strings.HasPrefix(pe, pad) {
				t.Errorf("ProviderError = %q, want the extract without %q", pe, tc.leak)
			}
		})
	}
}

// lowerHex rewrites the hex digits of every %XX escape in s in lowercase:
// the spelling of a provider that re-encodes with lowercase hex.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			copy(b[i+1:i+3], bytes.ToLower(b[i+1:i+3]))
		}
	}
	return string(b)
}
