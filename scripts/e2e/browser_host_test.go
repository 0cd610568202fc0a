//go:build e2e

package e2e

// The browser checks of a host's first hour, run by TestBrowserInside
// after the reference host's own: a micro-app of the author's own run by
// `snugd webhost --app`, a page whose pairing is revoked, and the SDK
// guide's smallest host loaded, exactly as api/sdk/README.md writes it,
// from another origin. The app and the page are taken from the guide
// itself, so the guide cannot drift from what works.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// guidePath is the SDK guide, from this package's directory (where go
// test runs the binary, inside the namespace too).
const guidePath = "../../api/sdk/README.md"

// smallestHostOrigin is the origin the guide's smallest host is served
// from: not the reference host's.
const smallestHostOrigin = "http://localhost:4781"

// notPairedBody is the whole of what a page that is not paired reads.
const notPairedBody = `{"error":{"code":"NOT_PAIRED","message":"this origin is not paired with snugd: pair again","retryable":false}}` + "\n"

// guideBlock returns the fenced block of the guide that follows the first
// line after `after` which starts with the fence ```lang.
func guideBlock(t *testing.T, after, lang string) string {
	t.Helper()
	raw, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatalf("read the SDK guide: %v", err)
	}
	s := string(raw)
	i := strings.Index(s, after)
	if i < 0 {
		t.Fatalf("the SDK guide has no %q", after)
	}
	s = s[i:]
	open := "```" + lang + "\n"
	j := strings.Index(s, open)
	if j < 0 {
		t.Fatalf("the SDK guide has no %s block after %q", lang, after)
	}
	s = s[j+len(open):]
	end := strings.Index(s, "\n```")
	if end < 0 {
		t.Fatalf("the SDK guide's %s block after %q is not closed", lang, after)
	}
	return s[:end+1]
}

// writeGuideApp writes the guide's my-app directory under dir and returns
// its path, for `snugd webhost --app`.
func writeGuideApp(t *testing.T, dir string) string {
	t.Helper()
	app := filepath.Join(dir, "my-app")
	if err := os.Mkdir(app, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, lang := range map[string]string{"index.html": "html", "connections.json": "json"} {
		body := guideBlock(t, "`my-app/"+name+"`:", lang)
		if err := os.WriteFile(filepath.Join(app, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return app
}

// checkGuideApp runs the author's app with snugd webhost --app: its
// connection is proposed from connections.json, reviewed, approved and
// given the key in the page, and the app's one request comes back through
// snugd, which added the key.
func (b *browserStack) checkGuideApp(t *testing.T) {
	t.Helper()
	before := len(b.upstream(t))
	b.do(t, "open your app", chromedp.WaitVisible(chromedp.CSS(`[data-testid="open-dev"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="open-dev"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="review-weather"]`)))
	if title := b.value(t, "read the title", chromedp.Text(chromedp.ID("detail-title"))); title != "dev-my-app" {
		t.Fatalf("the detail shows %q, want the app id dev-my-app", title)
	}
	b.shot(t, "20-dev-review")
	b.do(t, "approve your app's connection", chromedp.Click(chromedp.CSS(`[data-testid="approve-weather"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="cred-form-weather"]`)))
	b.do(t, "store its key",
		chromedp.SendKeys(chromedp.CSS(`[data-testid="cred-weather-api_key"]`), browserCanary),
		chromedp.Click(chromedp.CSS(`[data-testid="cred-save-weather"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-app"].primary`)))
	b.do(t, "run your app", chromedp.Click(chromedp.CSS(`[data-testid="run-app"]`)), chromedp.WaitVisible(chromedp.CSS(`#runner iframe`)))
	frame := b.frameAt(t, "/dev/run")
	shown := b.waitInFrame(t, frame, `(document.getElementById("out").textContent.match(/: |Failed/) || [""])[0] && document.getElementById("out").textContent`)
	b.shot(t, "21-dev-app")
	if shown != "Paris: 17°C" {
		t.Fatalf("your app shows %q, want Paris: 17°C", shown)
	}
	got := b.upstream(t)[before:]
	if len(got) != 1 || got[0].Method != "GET" || got[0].AppID != browserCanary || got[0].Origin != "" {
		t.Fatalf("the upstream saw %+v for your app, want one GET with the injected key, sent by snugd", got)
	}
}

// checkRevoked revokes the reference host's pairing while its page is
// open: the page says so within seconds, and the SDK reports NOT_PAIRED
// for the old token, where a snugd that does not answer is NETWORK_ERROR.
func (b *browserStack) checkRevoked(t *testing.T) {
	t.Helper()
	token := b.eval(t, `localStorage.getItem("snugd-reference-host/token") || ""`)
	if token == "" {
		t.Fatal("the reference host keeps no token")
	}
	b.revokeOrigin(t, "http://127.0.0.1:4780")
	revoked := time.Now()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.ID("pairing"))); err != nil {
		b.shot(t, "failed-revoked")
		t.Fatalf("5 s after the revoke the page does not ask to pair: %v\nconsole: %s", err, b.consoleText())
	}
	note := b.value(t, "read the note", chromedp.Text(chromedp.ID("pair-error")))
	b.shot(t, "22-revoked")
	if note != "This page's pairing is no longer valid: pair again." {
		t.Fatalf("after the revoke the page says %q, want the pair-again sentence", note)
	}
	t.Logf("the page asked to pair again %v after the revoke", time.Since(revoked).Round(10*time.Millisecond))
	if left := b.eval(t, `localStorage.getItem("snugd-reference-host/token") || ""`); left != "" {
		t.Error("the page kept the refused token")
	}
	sdk := func(base string) string {
		return b.await(t, fmt.Sprintf(`import("/snugd-host.js").then((m) => new m.Snugd({base: %q, token: %q}).status().then(() => "served", (e) => e.code + " " + e.status + " " + e.retryable))`, base, token))
	}
	if got := sdk("http://127.0.0.1:4747"); got != "NOT_PAIRED 401 false" {
		t.Errorf("the SDK with the revoked token reports %q, want NOT_PAIRED 401 false", got)
	}
	if got := sdk("http://127.0.0.1:4799"); got != "NETWORK_ERROR 0 true" {
		t.Errorf("the SDK with no snugd at the address reports %q, want NETWORK_ERROR 0 true", got)
	}
	// The hint stream ended on NOT_PAIRED: it does not retry.
	if state := b.eval(t, `document.body.getAttribute("data-events") || ""`); state != "closed" {
		t.Errorf("the hint stream is %q after the revoke, want closed", state)
	}
}

// checkSmallestHost serves the guide's smallest host, as written, from
// another origin: it imports the SDK cross-origin from snugd webhost,
// pairs, mounts the author's app from snugd webhost --app, and the app's
// request is answered by snugd itself (the host proposed no connection, so
// its slot names none).
func (b *browserStack) checkSmallestHost(t *testing.T) {
	t.Helper()
	html := guideBlock(t, "## The smallest working host", "html")
	ln, err := net.Listen("tcp", "127.0.0.1:4781")
	if err != nil {
		t.Fatalf("listen for the smallest host: %v", err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, html)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	b.do(t, "open the smallest host", chromedp.Navigate(smallestHostOrigin+"/"), chromedp.WaitVisible(chromedp.ID("go")))
	b.do(t, "pair it", chromedp.Click(chromedp.ID("go")), chromedp.WaitVisible(chromedp.ID("code")))
	var command string
	for i := 0; i < 100 && !strings.HasPrefix(command, "Run: "); i++ { // 10 seconds at most
		command = b.eval(t, `document.getElementById("code").textContent`)
		time.Sleep(100 * time.Millisecond)
	}
	b.shot(t, "23-smallest-code")
	code, ok := strings.CutPrefix(command, "Run: snugd ctl hosts approve ")
	if !ok {
		t.Fatalf("the smallest host shows %q, want Run: snugd ctl hosts approve CODE (did the cross-origin import work?)\nconsole: %s", command, b.consoleText())
	}
	b.approve(t, code, smallestHostOrigin)
	b.do(t, "its app runs", chromedp.WaitVisible(chromedp.CSS(`#apps iframe`)))
	frame := b.frameAt(t, "/dev/run")
	shown := b.waitInFrame(t, frame, `document.getElementById("out").textContent.startsWith("Failed: ") && document.getElementById("out").textContent`)
	b.shot(t, "24-smallest-app")
	// snugd's own answer, through the SDK: the host proposed no connection.
	msg := b.evalInFrame(t, frame, `((window.__snugFrames.map(JSON.parse).find(f => f.type === "snug:net-response") || {}).error || {}).message || ""`)
	if shown != "Failed: NET_INVALID_REQUEST" || msg != "the app has no connection in that slot" {
		t.Errorf("the app in the smallest host shows %q (%q), want Failed: NET_INVALID_REQUEST from snugd: the app has no connection in that slot", shown, msg)
	}
	if tok := b.eval(t, `localStorage.getItem("snugd-token") || ""`); !strings.HasPrefix(tok, "snugh_") {
		t.Errorf("the smallest host keeps %d characters as its token, want a snugh_ token", len(tok))
	}
}

// approve approves a pairing code through the real snugd ctl and checks
// that it was origin's.
func (b *browserStack) approve(t *testing.T, code, origin string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.cfg.Snugd, "ctl", "--data-dir", b.dataDir, "hosts", "approve", "--yes", code).CombinedOutput()
	if err != nil {
		t.Fatalf("snugd ctl hosts approve: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), origin) {
		t.Fatalf("snugd ctl hosts approve printed %q, want the origin %s", out, origin)
	}
}

// revokeOrigin revokes every host paired for origin with snugd ctl hosts
// revoke, as the administrator would.
func (b *browserStack) revokeOrigin(t *testing.T, origin string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.cfg.Snugd, "ctl", "--data-dir", b.dataDir, "hosts", "--json").Output()
	if err != nil {
		t.Fatalf("snugd ctl hosts --json: %v", err)
	}
	var hs struct {
		Hosts []struct {
			HostID string `json:"hostId"`
			Origin string `json:"origin"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal(out, &hs); err != nil {
		t.Fatalf("snugd ctl hosts --json: %v", err)
	}
	n := 0
	for _, h := range hs.Hosts {
		if h.Origin != origin {
			continue
		}
		n++
		if out, err := exec.CommandContext(ctx, b.cfg.Snugd, "ctl", "--data-dir", b.dataDir, "hosts", "revoke", h.HostID).CombinedOutput(); err != nil {
			t.Fatalf("snugd ctl hosts revoke: %v\n%s", err, out)
		}
	}
	if n == 0 {
		t.Fatalf("no host is paired for %s", origin)
	}
}

// frameAt returns the id of the child frame whose URL contains path, once
// its document has an execution context.
func (b *browserStack) frameAt(t *testing.T, path string) cdp.FrameID {
	t.Helper()
	for i := 0; i < 100; i++ { // 10 seconds at most
		res, err := chromedp.Call(b.ctx, page.GetFrameTree, cdp.Empty{})
		if err != nil {
			t.Fatalf("read the frame tree: %v", err)
		}
		for _, child := range res.FrameTree.ChildFrames {
			if strings.Contains(child.Frame.URL, path) {
				b.mu.Lock()
				_, ok := b.contexts[child.Frame.ID]
				b.mu.Unlock()
				if ok {
					return child.Frame.ID
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no frame at %s appeared within 10 seconds", path)
	return ""
}

// unpairedRead is what a page that is not paired reads from path: the
// NOT_PAIRED refusal from an authenticated route, nothing (a network
// error) from the open health route.
func unpairedRead(path string) string {
	if path == "/v1/health" {
		return "blocked"
	}
	return "read 401 " + notPairedBody
}
