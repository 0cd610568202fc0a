//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/oauth/oauthtest"
)

// The OAuth scenario: the real snugd against zitadel's OpenID-certified
// OP (daemon/oauth/oauthtest) served over TLS in a namespace of its own,
// snugd-e2e-op, on a documentation address. The harness's /etc/hosts maps the
// shipped registry entries' hosts (Spotify's, Twitch's) onto it and the
// harness CA signed its certificate for them, so snugd reaches it exactly
// as it would reach the providers (no registry switch): the
// system resolver, the SSRF guard, TLS verification, the row's ceiling.
//
//	snugd-e2e-op   se2e-op1 203.0.113.30/24: the OP on 443 (se2e-op0 203.0.113.29/24
//	         in snugd-e2e-cli)
//
// The scripted user is an HTTP client in the client namespace that dials
// every name to the OP, logs in and consents on its real login form, and
// stops at the redirect to the callback: the test then plays the browser
// (GET snugd's loopback /oauth/callback) or the web host's callback page
// (POST /v1/oauth/callback with the code and state it was handed).

// opNS is the OP's namespace.
func opNS() netns {
	return netns{name: "snugd-e2e-op", cliLink: "se2e-op0", nsLink: "se2e-op1", cliAddr: "203.0.113.29", nsAddr: "203.0.113.30"}
}

// opEnv names the OP helper's configuration file (TestOAuthOPHelper).
const opEnv = "SNUGD_E2E_OAUTH_OP"

// opHosts are the shipped entries' hosts the OP answers for. The issuer
// is the first.
var opHosts = []string{"accounts.spotify.com", "api.spotify.com", "id.twitch.tv", "api.twitch.tv"}

// opConfig configures the OP helper.
type opConfig struct {
	Listen string `json:"listen"`
	Cert   string `json:"cert"`
	Key    string `json:"key"`
}

// TestOAuthOPHelper is not a test: it is the OP, run by TestOAuthE2E
// inside snugd-e2e-op as a re-executed test binary. It reports every request it
// receives as an event (its Host in Header["Host"], its form in Body) and,
// for token-endpoint answers, a "token" event whose Body is the answer,
// so the test knows the tokens it must find at the API and nowhere else.
// It serves until its stdin closes.
func TestOAuthOPHelper(t *testing.T) {
	var cfg opConfig
	ln, cert := helperStart(t, opEnv, "the OAuth OP helper runs only when TestOAuthE2E starts it", &cfg, func() (string, string, string) { return cfg.Listen, cfg.Cert, cfg.Key })
	out := &reporter{w: os.Stdout}
	op := oauthtest.NewOP("https://" + opHosts[0]).Handler()
	helperServe(ln, cert, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		r.Body = io.NopCloser(bytes.NewReader(body))
		hdr := r.Header.Clone()
		hdr.Set("Host", r.Host)
		out.report(event{Kind: "request", Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: hdr, Body: string(body)})
		if r.Method != http.MethodPost || !isTokenPath(r.URL.Path) {
			op.ServeHTTP(w, r)
			return
		}
		rec := &teeWriter{ResponseWriter: w}
		op.ServeHTTP(rec, r)
		out.report(event{Kind: "token", Path: r.URL.Path, Body: rec.buf.String()})
	}), out)
}

// isTokenPath says path is a shipped entry's token endpoint.
func isTokenPath(path string) bool {
	return path == "/api/token" || path == "/oauth2/token"
}

// teeWriter keeps a copy of what a handler writes.
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

// opView reads the OP helper's events.
type opView struct{ *upstream }

// until waits (10 s at most) for cond to hold, checking it again after
// each event the OP reports.
func (o opView) until(cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-o.notify:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// form is a request event's body as a form.
func form(ev event) url.Values {
	v, _ := url.ParseQuery(ev.Body)
	return v
}

// grants counts the token POSTs of grant type since mark.
func (o opView) grants(mark int, grant string) int {
	n := 0
	for _, ev := range o.requestsSince(mark) {
		if ev.Method == http.MethodPost && isTokenPath(ev.Path) && form(ev).Get("grant_type") == grant {
			n++
		}
	}
	return n
}

// bearers are the Authorization headers the providers' APIs received
// since mark, once there are n of them (or 10 s passed). The OP writes
// its events in the order requests arrive, and snugd posts any token
// request before the API request it is for: once the API requests are
// read, so is every token POST before them, and counts taken then are
// exact.
func (o opView) bearers(mark, n int) []string {
	var out []string
	o.until(func() bool {
		out = out[:0]
		for _, ev := range o.requestsSince(mark) {
			if strings.HasPrefix(first(ev.Header, "Host"), "api.") {
				out = append(out, first(ev.Header, "Authorization"))
			}
		}
		return len(out) >= n
	})
	return out
}

// tokenAnswer is a token endpoint's answer (RFC 6749 §5.1).
type tokenAnswer struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int    `json:"expires_in"`
	IDToken      string `json:"id_token"`
}

// tokens are the token endpoint's answers since mark, waiting (bounded)
// for n of them: the OP reports an answer after sending it.
func (o opView) tokens(mark, n int) []tokenAnswer {
	var out []tokenAnswer
	o.until(func() bool {
		out = out[:0]
		for i, ev := range o.snapshot() {
			if i >= mark && ev.Kind == "token" {
				var a tokenAnswer
				json.Unmarshal([]byte(ev.Body), &a)
				out = append(out, a)
			}
		}
		return len(out) >= n
	})
	return out
}

// oauthBrowser is the scripted user's browser: in the client namespace,
// every name dialed to the OP, trusting the harness CA.
func oauthBrowser(h *harness) oauthtest.Browser {
	roots := x509.NewCertPool()
	roots.AddCert(h.pki.ca)
	return oauthtest.Browser{
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return cliDial(ctx, network, opNS().nsAddr+":443")
		},
		Roots: roots,
	}
}

// The requirements the apps propose. The provider names are the shipped
// entries', so the registry borrows their endpoints, ceilings and
// postures; the app declares nothing a person would have to trust.
func spotifyRequirement(slot string) string {
	return `{"slot": "` + slot + `", "provider": {"name": "Spotify"}, "kind": "oauth2_auth_code",
  "fields": [{"key": "client_id", "label": "Client ID", "type": "text"}],
  "endpoints": {"authorize": "https://accounts.spotify.com/authorize", "token": "https://accounts.spotify.com/api/token"},
  "declaredApiHosts": ["api.spotify.com"]}`
}

const twitchRequirement = `{"slot": "games", "provider": {"name": "Twitch"}, "kind": "oauth2_client_creds",
  "fields": [{"key": "client_id", "label": "Client ID", "type": "text"}, {"key": "client_secret", "label": "Client secret", "type": "secret"}],
  "endpoints": {"token": "https://id.twitch.tv/oauth2/token", "revoke": "https://id.twitch.tv/oauth2/revoke"},
  "declaredApiHosts": ["api.twitch.tv"]}`

// oauthFlow is the Flow object of GET /v1/flows/{id}.
type oauthFlow struct {
	FlowID  string `json:"flowId"`
	Kind    string `json:"kind"`
	State   string `json:"state"`
	Message string `json:"message"`
}

type oauthStart struct {
	FlowID       string    `json:"flowId"`
	AuthorizeURL string    `json:"authorizeUrl"`
	Flow         oauthFlow `json:"flow"`
}

// TestOAuthE2E: the OAuth kinds through the real binary against a real
// authorization server.
//
// conformance: P3-C13-17, P3-C13-18, P3-C13-20, P3-C13-22, P3-C13-23
func TestOAuthE2E(t *testing.T) {
	start := time.Now()
	h := setUpHarness(t, opNS())
	cert, key := h.pki.leaf(t, "op", opHosts...)
	op := opView{startHelper(t, opNS(), "TestOAuthOPHelper", opEnv, "op", opConfig{Listen: opNS().nsAddr + ":443", Cert: cert, Key: key}, h.dir)}
	for _, name := range opHosts {
		h.hosts = append(h.hosts, opNS().nsAddr+" "+name)
	}
	bin := buildSnugd(t, h.dir)
	s := startSnugd(t, h, bin)
	desk := s.pairHost(t, "E2E Desktop")
	web := s.pairWebHost(t, "E2E Web", oauthtest.WebOrigin)
	browser := oauthBrowser(h)
	t.Logf("set up in %v", time.Since(start).Round(time.Millisecond))

	// The positive control: the OP answers from where snugd is.
	if got := h.direct(t, opNS().nsAddr+":443", opHosts[0], "/.well-known/openid-configuration"); got != 200 {
		t.Fatalf("direct GET of the OP's discovery document = %d, want 200", got)
	}

	// Every secret of the run, for the leak checks at the end: the
	// client secret, the codes, the tokens.
	var leaksMu sync.Mutex
	leaks := []string{oauthtest.ServiceKey}
	leak := func(vs ...string) {
		leaksMu.Lock()
		defer leaksMu.Unlock()
		for _, v := range vs {
			if v != "" {
				leaks = append(leaks, v)
			}
		}
	}
	// propose puts a row as the host holding token (the app's owner from
	// then on), approves it and stores values via snugd ctl.
	propose := func(t *testing.T, token, origin, appID, slot, requirement string, values map[string]string) {
		t.Helper()
		var header []string
		if origin != "" {
			header = []string{"Origin", origin}
		}
		st, raw, err := s.call(t, http.MethodPut, "/v1/apps/"+appID+"/connections/"+slot, token, map[string]json.RawMessage{"requirement": json.RawMessage(requirement)}, nil, header...)
		if err != nil || st/100 != 2 {
			t.Fatalf("PUT %s/%s = %d %s, %v", appID, slot, st, raw, err)
		}
		if code, out, errOut := s.ctl(t, "", "approve", appID, slot, "--yes"); code != 0 {
			t.Fatalf("snugd ctl approve %s %s = %d\n%s%s", appID, slot, code, out, errOut)
		}
		b, _ := json.Marshal(values)
		if code, out, errOut := s.ctl(t, string(b), "credentials", "set", appID, slot); code != 0 {
			t.Fatalf("snugd ctl credentials set %s %s = %d\n%s%s", appID, slot, code, out, errOut)
		}
	}

	// The desktop surface through the host API: RFC 8252's loopback
	// redirect to snugd's own port, PKCE S256, a tampered state and a
	// replay refused with the plain page and nothing exchanged.
	t.Run("desktop code+PKCE flow", func(t *testing.T) {
		propose(t, desk, "", app, "music", spotifyRequirement("music"), map[string]string{"client_id": oauthtest.NativeClient})
		var st oauthStart
		if code, raw, err := s.call(t, http.MethodPost, "/v1/oauth/start", desk, map[string]string{"appId": app, "slot": "music"}, &st); err != nil || code != 200 || st.FlowID == "" {
			t.Fatalf("POST /v1/oauth/start = %d %s, %v", code, raw, err)
		}
		u, err := url.Parse(st.AuthorizeURL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		if u.Scheme != "https" || u.Host != "accounts.spotify.com" || u.Path != "/authorize" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
			q.Get("redirect_uri") != fmt.Sprintf("http://127.0.0.1:%d/oauth/callback", s.port) || q.Get("client_id") != oauthtest.NativeClient || q.Get("code_verifier") != "" {
			t.Fatalf("authorize URL = %s", st.AuthorizeURL)
		}
		mark := op.mark()
		flowMark := mark
		cb := browser.SignIn(t.Context(), t, st.AuthorizeURL)
		if cb.Scheme != "http" || cb.Host != fmt.Sprintf("127.0.0.1:%d", s.port) {
			t.Fatalf("the OP redirected to %s", cb.Redacted())
		}
		code, state := cb.Query().Get("code"), cb.Query().Get("state")
		leak(code)

		// A tampered state: the plain page, the flow still pending, nothing exchanged.
		tq := cb.Query()
		tq.Set("state", tamper(state))
		st2, page, err := s.call(t, http.MethodGet, "/oauth/callback?"+tq.Encode(), "", nil, nil)
		if err != nil || st2 != http.StatusBadRequest || !strings.Contains(string(page), "did not complete") || strings.Contains(string(page), code) {
			t.Fatalf("callback with a tampered state = %d %s, %v", st2, page, err)
		}
		if f := s.flow(t, desk, st.FlowID); f.State != "pending" {
			t.Fatalf("a tampered callback moved the flow: %+v", f)
		}
		if n := op.grants(mark, "authorization_code"); n != 0 {
			t.Fatalf("a tampered callback's code was exchanged (%d POSTs)", n)
		}

		// The browser follows the redirect.
		st2, page, err = s.call(t, http.MethodGet, "/oauth/callback?"+cb.RawQuery, "", nil, nil)
		if err != nil || st2 != http.StatusOK || !strings.Contains(string(page), "Connected.") ||
			strings.Contains(string(page), code) || strings.Contains(string(page), "spotify") {
			t.Fatalf("callback = %d %s, %v", st2, page, err)
		}
		if f := s.flow(t, desk, st.FlowID); f.State != "connected" || f.Kind != "oauth" {
			t.Fatalf("GET /v1/flows/%s = %+v, want oauth connected", st.FlowID, f)
		}
		toks := op.tokens(mark, 1)
		if len(toks) != 1 || toks[0].AccessToken == "" || toks[0].RefreshToken == "" {
			t.Fatalf("the OP answered %+v, want one access and refresh token", toks)
		}
		leak(toks[0].AccessToken, toks[0].RefreshToken, toks[0].IDToken)
		ex := op.requestsSince(mark)
		for _, ev := range ex {
			if ev.Method == http.MethodPost && isTokenPath(ev.Path) {
				f := form(ev)
				if f.Get("code") != code || f.Get("code_verifier") == "" || f.Get("redirect_uri") != q.Get("redirect_uri") || f.Get("client_secret") != "" {
					t.Errorf("the code exchange posted %v; want the code, the verifier, the same redirect and no secret", f)
				}
				s256 := sha256.Sum256([]byte(f.Get("code_verifier")))
				if base64.RawURLEncoding.EncodeToString(s256[:]) != q.Get("code_challenge") {
					t.Error("the verifier posted does not match the challenge sent")
				}
				leak(f.Get("code_verifier"))
			}
		}

		// The same answer again (a replay): refused, nothing exchanged.
		before := op.grants(0, "authorization_code")
		st2, page, err = s.call(t, http.MethodGet, "/oauth/callback?"+cb.RawQuery, "", nil, nil)
		if err != nil || st2 != http.StatusBadRequest || strings.Contains(string(page), code) {
			t.Fatalf("replayed callback = %d %s, %v", st2, page, err)
		}
		if f := s.flow(t, desk, st.FlowID); f.State != "connected" {
			t.Errorf("a replay moved the flow: %+v", f)
		}
		if n := op.grants(0, "authorization_code"); n != before {
			t.Errorf("a replayed code was exchanged again (%d → %d)", before, n)
		}

		// The token is injected: the API sees it, the app never does.
		mark = op.mark()
		r := s.mustNetAs(t, desk, "", app, "sp-1", "GET", "https://api.spotify.com/v1/me")
		if !r.OK || r.Status != 200 {
			t.Fatalf("GET api.spotify.com/v1/me = %v", r)
		}
		if b := op.bearers(mark, 1); len(b) != 1 || b[0] != "Bearer "+toks[0].AccessToken {
			t.Fatalf("the API saw %q, want the OP's access token", b)
		}
		if frame, _ := json.Marshal(r); strings.Contains(string(frame), toks[0].AccessToken) {
			t.Error("the app's frame carries the access token")
		}
		if n := op.grants(mark, "refresh_token"); n != 0 {
			t.Errorf("a fresh token was refreshed (%d POSTs)", n)
		}
		// Counted after the API request: the tampered and replayed
		// answers exchanged nothing.
		if n := op.grants(flowMark, "authorization_code"); n != 1 {
			t.Errorf("the flow made %d code exchanges, want 1", n)
		}
		code2, out, _ := s.ctl(t, "", "connections", app, "--json")
		if code2 != 0 || !strings.Contains(out, `"connected"`) || !strings.Contains(out, `"expiresIn"`) || !strings.Contains(out, `"obtainedAt"`) {
			t.Errorf("snugd ctl connections --json = %d\n%s", code2, out)
		}
	})

	// The desktop surface through snugd ctl connect, with a client whose
	// first access token the OP says expires within the refresh skew: 32
	// concurrent requests then make exactly one refresh POST, all of them
	// carry the refreshed token, and the rotated refresh token replaced
	// the old one (the next refresh would post the new one).
	t.Run("ctl connect, then one refresh for 32 requests", func(t *testing.T) {
		const radio = "e2e-radio"
		propose(t, desk, "", radio, "music", spotifyRequirement("music"), map[string]string{"client_id": oauthtest.ShortClient})
		mark := op.mark()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := inCli(ctx, s.bin, "ctl", "--data-dir", s.dataDir, "connect", radio, "music")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var printed strings.Builder
		var authorize string
		sc := bufio.NewScanner(stdout)
		for authorize == "" && sc.Scan() {
			line := sc.Text()
			printed.WriteString(line + "\n")
			if l := strings.TrimSpace(line); strings.HasPrefix(l, "https://") {
				authorize = l
			}
		}
		if authorize == "" {
			cmd.Wait()
			t.Fatalf("snugd ctl connect printed no authorize URL:\n%s%s", printed.String(), errOut.String())
		}
		cb := browser.SignIn(ctx, t, authorize)
		leak(cb.Query().Get("code"))
		if cb.Host != fmt.Sprintf("127.0.0.1:%d", s.port) {
			t.Fatalf("the OP redirected to %s", cb.Redacted())
		}
		if st, page, err := s.call(t, http.MethodGet, "/oauth/callback?"+cb.RawQuery, "", nil, nil); err != nil || st != 200 {
			t.Fatalf("callback = %d %s, %v", st, page, err)
		}
		rest, _ := io.ReadAll(stdout)
		printed.Write(rest)
		if err := cmd.Wait(); err != nil || !strings.Contains(printed.String(), radio+"/music: ") {
			t.Fatalf("snugd ctl connect = %v\n%s%s", err, printed.String(), errOut.String())
		}
		if strings.Contains(printed.String(), cb.Query().Get("code")) || strings.Contains(printed.String(), "code_verifier") {
			t.Errorf("snugd ctl connect printed the code or the verifier:\n%s", printed.String())
		}
		toks := op.tokens(mark, 1)
		if len(toks) != 1 || toks[0].ExpiresIn <= 0 || toks[0].ExpiresIn > 60 {
			t.Fatalf("the OP answered %+v, want one token expiring within the skew", toks)
		}
		leak(toks[0].AccessToken, toks[0].RefreshToken, toks[0].IDToken)

		mark = op.mark()
		var wg sync.WaitGroup
		results := make([]netResponse, 32)
		errs := make([]error, 32)
		for i := range results {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				results[i], errs[i] = s.netAs(ctx, desk, "", radio, fmt.Sprintf("radio-%d", i), "GET", "https://api.spotify.com/v1/me")
			})
		}
		wg.Wait()
		for i, r := range results {
			if errs[i] != nil || !r.OK || r.Status != 200 {
				t.Fatalf("request %d of 32 = %v, %v", i, r, errs[i])
			}
		}
		b := op.bearers(mark, 32)
		if len(b) != 32 {
			t.Fatalf("the API saw %d requests, want 32", len(b))
		}
		if n := op.grants(mark, "refresh_token"); n != 1 {
			t.Fatalf("32 concurrent requests made %d refresh POSTs, want exactly 1", n)
		}
		for _, ev := range op.requestsSince(mark) {
			if ev.Method == http.MethodPost && isTokenPath(ev.Path) {
				if f := form(ev); f.Get("refresh_token") != toks[0].RefreshToken {
					t.Errorf("the refresh posted another refresh token than the one stored")
				}
			}
		}
		fresh := op.tokens(mark, 1)
		if len(fresh) != 1 || fresh[0].AccessToken == "" || fresh[0].RefreshToken == "" || fresh[0].RefreshToken == toks[0].RefreshToken {
			t.Fatalf("the refresh answered %+v, want a new access token and a rotated refresh token", fresh)
		}
		leak(fresh[0].AccessToken, fresh[0].RefreshToken, fresh[0].IDToken)
		for _, v := range b {
			if v != "Bearer "+fresh[0].AccessToken {
				t.Fatalf("a request carried %q, not the refreshed token", v)
			}
		}
		// The refreshed token is outside the skew: the next request sends it as is.
		mark = op.mark()
		if r := s.mustNetAs(t, desk, "", radio, "radio-after", "GET", "https://api.spotify.com/v1/me"); !r.OK {
			t.Fatalf("GET after the refresh = %v", r)
		}
		op.bearers(mark, 1)
		if n := op.grants(mark, "refresh_token"); n != 0 {
			t.Errorf("a refreshed token was refreshed again (%d POSTs)", n)
		}
	})

	// The web surface: a paired web host starts the flow; the OP
	// redirects to the host's https://<origin>/oauth/callback page, which
	// the test plays: it takes code and state from the redirect and hands
	// them to snugd under the host's token and Origin. Another host
	// handing the same answer first is refused and changes nothing.
	t.Run("web origin-callback sign-in", func(t *testing.T) {
		const webApp = "e2e-webapp"
		propose(t, web, oauthtest.WebOrigin, webApp, "music", spotifyRequirement("music"), map[string]string{"client_id": oauthtest.NativeClient})
		var st oauthStart
		if code, raw, err := s.call(t, http.MethodPost, "/v1/oauth/start", web, map[string]string{"appId": webApp, "slot": "music"}, &st, "Origin", oauthtest.WebOrigin); err != nil || code != 200 {
			t.Fatalf("POST /v1/oauth/start (web) = %d %s, %v", code, raw, err)
		}
		u, _ := url.Parse(st.AuthorizeURL)
		if got := u.Query().Get("redirect_uri"); got != oauthtest.WebOrigin+"/oauth/callback" || u.Query().Get("code_challenge_method") != "S256" {
			t.Fatalf("web authorize URL = %s", st.AuthorizeURL)
		}
		mark := op.mark()
		cb := browser.SignIn(t.Context(), t, st.AuthorizeURL)
		if cb.Scheme+"://"+cb.Host != oauthtest.WebOrigin {
			t.Fatalf("the OP redirected to %s", cb.Redacted())
		}
		answer := map[string]string{"code": cb.Query().Get("code"), "state": cb.Query().Get("state")}
		leak(answer["code"])

		// The desktop host hands it: refused, nothing exchanged, the flow pending.
		if code, raw, err := s.call(t, http.MethodPost, "/v1/oauth/callback", desk, answer, nil); err != nil || code != http.StatusBadRequest || strings.Contains(string(raw), answer["code"]) {
			t.Fatalf("another host's POST /v1/oauth/callback = %d %s, %v", code, raw, err)
		}
		// The web host with a tampered state: refused.
		bad := map[string]string{"code": answer["code"], "state": tamper(answer["state"])}
		if code, raw, err := s.call(t, http.MethodPost, "/v1/oauth/callback", web, bad, nil, "Origin", oauthtest.WebOrigin); err != nil || code != http.StatusBadRequest {
			t.Fatalf("tampered web callback = %d %s, %v", code, raw, err)
		}
		if n := op.grants(mark, "authorization_code"); n != 0 {
			t.Fatalf("a refused callback's code was exchanged (%d)", n)
		}
		if f := s.flow(t, web, st.FlowID, "Origin", oauthtest.WebOrigin); f.State != "pending" {
			t.Fatalf("a refused callback moved the flow: %+v", f)
		}

		var f oauthFlow
		if code, raw, err := s.call(t, http.MethodPost, "/v1/oauth/callback", web, answer, &f, "Origin", oauthtest.WebOrigin); err != nil || code != 200 || f.State != "connected" {
			t.Fatalf("the web host's POST /v1/oauth/callback = %d %s, %v", code, raw, err)
		}
		if g := s.flow(t, web, st.FlowID, "Origin", oauthtest.WebOrigin); g.State != "connected" {
			t.Errorf("GET /v1/flows/%s = %+v", st.FlowID, g)
		}
		// Replayed by the rightful host: refused.
		if code, _, _ := s.call(t, http.MethodPost, "/v1/oauth/callback", web, answer, nil, "Origin", oauthtest.WebOrigin); code != http.StatusBadRequest {
			t.Errorf("replayed web callback = %d, want 400", code)
		}
		toks := op.tokens(mark, 1)
		if len(toks) != 1 {
			t.Fatalf("the OP answered %d token requests, want 1", len(toks))
		}
		leak(toks[0].AccessToken, toks[0].RefreshToken, toks[0].IDToken)
		mark = op.mark()
		r := s.mustNetAs(t, web, oauthtest.WebOrigin, webApp, "web-1", "GET", "https://api.spotify.com/v1/me")
		if !r.OK || r.Status != 200 {
			t.Fatalf("GET from the web host = %v", r)
		}
		if b := op.bearers(mark, 1); len(b) != 1 || b[0] != "Bearer "+toks[0].AccessToken {
			t.Fatalf("the API saw %q, want the web flow's token", b)
		}
	})

	// Client credentials: the token is fetched at the first request and
	// reused; revoking the connection POSTs RFC 7009 to the OP.
	t.Run("client credentials, then revocation", func(t *testing.T) {
		mark := op.mark()
		propose(t, desk, "", app, "games", twitchRequirement, map[string]string{"client_id": oauthtest.ServiceID, "client_secret": oauthtest.ServiceKey})
		if n := op.grants(mark, "client_credentials"); n != 0 {
			t.Fatalf("a token was fetched before the first request (%d)", n)
		}
		r := s.mustNetAs(t, desk, "", app, "tw-1", "GET", "https://api.twitch.tv/helix/games/top?first=1")
		if !r.OK || r.Status != 200 {
			t.Fatalf("GET api.twitch.tv = %v", r)
		}
		op.bearers(mark, 1)
		if n := op.grants(mark, "client_credentials"); n != 1 {
			t.Fatalf("the first request made %d client-credentials POSTs, want 1", n)
		}
		toks := op.tokens(mark, 1)
		if len(toks) != 1 || toks[0].AccessToken == "" {
			t.Fatalf("the OP answered %+v", toks)
		}
		leak(toks[0].AccessToken)
		if r := s.mustNetAs(t, desk, "", app, "tw-2", "GET", "https://api.twitch.tv/helix/games/top?first=1"); !r.OK {
			t.Fatalf("second GET = %v", r)
		}
		op.bearers(mark, 2)
		if n := op.grants(mark, "client_credentials"); n != 1 {
			t.Errorf("the second request fetched another token (%d POSTs in all)", n)
		}
		var apiReqs []event
		for _, ev := range op.requestsSince(mark) {
			if first(ev.Header, "Host") == "api.twitch.tv" {
				apiReqs = append(apiReqs, ev)
			}
		}
		if len(apiReqs) != 2 {
			t.Fatalf("the API saw %d requests, want 2", len(apiReqs))
		}
		for _, ev := range apiReqs {
			if first(ev.Header, "Authorization") != "Bearer "+toks[0].AccessToken || first(ev.Header, "Client-Id") != oauthtest.ServiceID {
				t.Errorf("the API saw Authorization %q Client-Id %q", first(ev.Header, "Authorization"), first(ev.Header, "Client-Id"))
			}
		}

		// Twitch's revocation is its own (client_id and token, no
		// client authentication); the OP confirms it, and snugd says so
		// beside the wipe.
		mark = op.mark()
		code, out, errOut := s.ctl(t, "", "revoke", app, "games")
		if code != 0 || strings.Contains(out+errOut, toks[0].AccessToken) || !strings.Contains(out, "revoked; its credentials are wiped") ||
			!strings.Contains(out, "the provider confirmed the revocation") {
			t.Fatalf("snugd ctl revoke = %d\n%s%s; want the wipe and the confirmed remote revocation", code, out, errOut)
		}
		var revokes []url.Values
		for _, ev := range op.awaitRequests(mark, 1) {
			if ev.Method == http.MethodPost && ev.Path == "/oauth2/revoke" {
				revokes = append(revokes, form(ev))
			}
		}
		// Twitch's own revocation takes client_id and token, and nothing
		// else: no secret, no token_type_hint.
		if len(revokes) != 1 || revokes[0].Get("token") != toks[0].AccessToken || revokes[0].Get("client_id") != oauthtest.ServiceID ||
			revokes[0].Has("client_secret") || revokes[0].Has("token_type_hint") {
			t.Fatalf("the OP saw revocations %v; want one POST of the access token and client_id only", revokes)
		}
		if r := s.mustNetAs(t, desk, "", app, "tw-3", "GET", "https://api.twitch.tv/helix/games/top?first=1"); r.OK || r.code() == "" {
			t.Errorf("GET after revoke = %v, want a refusal", r)
		}
	})

	t.Run("no secret in snugd's output", func(t *testing.T) {
		logs := s.log.String()
		_, status, _ := s.ctl(t, "", "status", "--json")
		_, journal, _ := s.ctl(t, "", "journal", "--json")
		_, conns, _ := s.ctl(t, "", "connections", app, "--json")
		leaksMu.Lock()
		defer leaksMu.Unlock()
		for _, l := range append(leaks, desk, web) {
			if strings.Contains(logs, l) {
				t.Errorf("snugd's log carries a secret (%d bytes)", len(l))
			}
			if strings.Contains(status+journal+conns, l) {
				t.Errorf("snugd ctl status, journal or connections carries a secret (%d bytes)", len(l))
			}
		}
	})
	t.Logf("the OAuth scenario took %v", time.Since(start).Round(time.Millisecond))
}

// tamper changes the last characters of a state.
func tamper(state string) string {
	if strings.HasSuffix(state, "AA") {
		return state[:len(state)-2] + "BB"
	}
	return state[:len(state)-2] + "AA"
}

// flow is GET /v1/flows/{id} under token.
func (s *snugd) flow(t *testing.T, token, id string, header ...string) oauthFlow {
	t.Helper()
	var f oauthFlow
	if st, raw, err := s.call(t, http.MethodGet, "/v1/flows/"+url.PathEscape(id), token, nil, &f, header...); err != nil || st != 200 {
		t.Fatalf("GET /v1/flows/%s = %d %s, %v", id, st, raw, err)
	}
	return f
}

// netAs sends one snug:net-request for appID under token, from origin
// when it is not empty (a web host).
func (s *snugd) netAs(ctx context.Context, token, origin, appID, id, method, rawURL string) (netResponse, error) {
	frame := map[string]any{"type": "snug:net-request", "v": 1, "requestId": id, "instanceId": "e2e-instance", "url": rawURL, "method": method}
	var header []string
	if origin != "" {
		header = []string{"Origin", origin}
	}
	var r netResponse
	st, raw, err := s.callCtx(ctx, http.MethodPost, "/v1/net", token, map[string]any{"appId": appID, "frame": frame, "delivery": "app"}, &r, header...)
	if err != nil {
		return r, err
	}
	if st != http.StatusOK || r.Type != "snug:net-response" {
		return r, fmt.Errorf("POST /v1/net = %d %s", st, raw)
	}
	return r, nil
}

func (s *snugd) mustNetAs(t *testing.T, token, origin, appID, id, method, rawURL string) netResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r, err := s.netAs(ctx, token, origin, appID, id, method, rawURL)
	if err != nil {
		t.Fatalf("net %s %s for %s: %v", method, rawURL, appID, err)
	}
	return r
}

// pairWebHost pairs a web host for origin (pair and redeem from that
// origin, approved via snugd ctl) and returns its token, which snugd
// takes only with that Origin.
func (s *snugd) pairWebHost(t *testing.T, name, origin string) string {
	t.Helper()
	vb := make([]byte, 32)
	rand.Read(vb)
	verifier := base64.RawURLEncoding.EncodeToString(vb)
	sum := sha256.Sum256([]byte(verifier))
	var p struct {
		PairingID string `json:"pairingId"`
		Code      string `json:"code"`
	}
	st, raw, err := s.call(t, http.MethodPost, "/v1/hosts/pair", "", map[string]string{
		"name": name, "surface": "web", "origin": origin, "challenge": base64.RawURLEncoding.EncodeToString(sum[:]),
	}, &p, "Origin", origin)
	if err != nil || st != http.StatusOK || p.Code == "" {
		t.Fatalf("POST /v1/hosts/pair (web) = %d %s, %v", st, raw, err)
	}
	if code, out, errOut := s.ctl(t, "", "hosts", "approve", p.Code, "--yes"); code != 0 {
		t.Fatalf("snugd ctl hosts approve = %d\n%s%s", code, out, errOut)
	}
	var r struct {
		State string `json:"state"`
		Token string `json:"token"`
	}
	st, raw, err = s.call(t, http.MethodPost, "/v1/hosts/pair/"+p.PairingID+"/redeem", "", map[string]string{"verifier": verifier}, &r, "Origin", origin)
	if err != nil || st != http.StatusOK || r.State != "approved" || r.Token == "" {
		t.Fatalf("redeem (web) = %d %s, %v", st, raw, err)
	}
	return r.Token
}
