//go:build e2e

package e2e

// The browser end-to-end test: the reference host (snugd webhost) in a real
// Chromium, driven over CDP (chromedp), against the real snugd and a TLS
// upstream standing in for OpenWeather. Everything runs in two network
// namespaces of its own, joined only to each other by a veth pair created
// inside them: nothing is added to the machine's own namespace.
//
//	sbr-cli-PID  lo: snugd (127.0.0.1:4747), snugd webhost (127.0.0.1:4780),
//	             chromium; sbr-c0 203.0.113.1/24
//	sbr-up-PID   sbr-u0 203.0.113.20/24: the upstream, https on 443
//
// TestBrowser sets the namespaces and the upstream up and runs
// TestBrowserInside, this same test binary, inside sbr-cli; snugd there
// resolves api.openweathermap.org to the upstream through a bind-mounted
// /etc/hosts (unshare -m) and trusts the test CA through SSL_CERT_FILE.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const (
	browserCliNS   = "sbr-cli"
	browserUpNS    = "sbr-up"
	browserCliLink = "sbr-c0"
	browserUpLink  = "sbr-u0"
	browserCliAddr = "203.0.113.1"
	browserUpAddr  = "203.0.113.20"

	browserInsideEnv   = "SNUGD_BROWSER_INSIDE"
	browserUpstreamEnv = "SNUGD_BROWSER_UPSTREAM"

	// browserCanary is the credential the person types into the form. It
	// must reach the upstream (snugd injects it) and nothing else.
	browserCanary = "canary-OWM-7f3c9a1e5b2d4f60"
)

// browserConfig is what TestBrowser hands to the two helpers it starts.
type browserConfig struct {
	Snugd       string `json:"snugd"`
	CA          string `json:"ca"`
	Hosts       string `json:"hosts"`
	Dir         string `json:"dir"`
	Cert        string `json:"cert"`
	Key         string `json:"key"`
	UpstreamLog string `json:"upstreamLog"`
	Shots       string `json:"shots"`
}

// upstreamRequest is one request the upstream saw, as it logs it.
type upstreamRequest struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	AppID  string `json:"appid"` // the query credential snugd injects
	Origin string `json:"origin"`
	Body   string `json:"body"`
}

func chromiumPath() string {
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// TestBrowser proves the whole path in a real browser.
func TestBrowser(t *testing.T) {
	if os.Getenv(browserInsideEnv) != "" || os.Getenv(browserUpstreamEnv) != "" {
		t.Skip("a helper process")
	}
	if os.Geteuid() != 0 {
		t.Skip("the browser test needs root for its network namespaces")
	}
	chromium := chromiumPath()
	if chromium == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (.ci/run installs Debian's chromium)")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	dir := t.TempDir()
	shots := os.Getenv("SNUGD_SCREENSHOTS")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "snugd-browser-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	p := newPKI(t, dir)
	cert, key := p.leaf(t, "owm", "api.openweathermap.org")
	bin := buildSnugd(t, dir)
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n::1 localhost\n"+browserUpAddr+" api.openweathermap.org\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := browserConfig{Snugd: bin, CA: p.caFile, Hosts: hosts, Dir: dir, Cert: cert, Key: key,
		UpstreamLog: filepath.Join(dir, "upstream.jsonl"), Shots: shots}

	// Names of this run's own: another developer's run on the machine
	// keeps its namespaces.
	cliNS, upNS := fmt.Sprintf("%s-%d", browserCliNS, os.Getpid()), fmt.Sprintf("%s-%d", browserUpNS, os.Getpid())
	setUpBrowserNet(t, cliNS, upNS)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(cfg)

	up := exec.Command("ip", "netns", "exec", upNS, self, "-test.run=^TestBrowserUpstream$", "-test.v")
	up.Env = append(cleanEnv(), browserUpstreamEnv+"="+string(raw))
	up.Stdout = &testWriter{t: t, prefix: "upstream: "}
	up.Stderr = up.Stdout
	up.SysProcAttr = dieWithParent()
	if err := up.Start(); err != nil {
		t.Fatalf("start the upstream: %v", err)
	}
	t.Cleanup(func() { up.Process.Kill(); up.Wait() })

	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	in := exec.CommandContext(ctx, "ip", "netns", "exec", cliNS, self, "-test.run=^TestBrowserInside$", "-test.v", "-test.timeout=6m")
	in.Env = append(cleanEnv(), browserInsideEnv+"="+string(raw))
	in.Stdout = &testWriter{t: t, prefix: "browser: "}
	in.Stderr = in.Stdout
	in.SysProcAttr = dieWithParent()
	if err := in.Run(); err != nil {
		t.Fatalf("the browser test inside %s failed: %v (its log is above)", cliNS, err)
	}
	t.Logf("screenshots are in %s", shots)
}

// setUpBrowserNet makes the two namespaces and the veth between them,
// created inside sbr-cli and moved straight into sbr-up: no link, address
// or route ever exists in the machine's own namespace.
func setUpBrowserNet(t *testing.T, cliNS, upNS string) {
	t.Helper()
	ctx := t.Context()
	tearDown := func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = ipCmd(c, "netns", "del", cliNS)
		_ = ipCmd(c, "netns", "del", upNS)
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(line, " ")
		if name == cliNS || name == upNS {
			t.Fatalf("the network namespace %s exists already: another run's, left alone", name)
		}
	}
	t.Cleanup(tearDown)
	for _, args := range [][]string{
		{"netns", "add", cliNS},
		{"netns", "add", upNS},
		{"-n", cliNS, "link", "add", browserCliLink, "type", "veth", "peer", "name", browserUpLink, "netns", upNS},
		{"-n", cliNS, "addr", "add", browserCliAddr + "/24", "dev", browserCliLink},
		{"-n", upNS, "addr", "add", browserUpAddr + "/24", "dev", browserUpLink},
		{"-n", cliNS, "link", "set", "lo", "up"},
		{"-n", upNS, "link", "set", "lo", "up"},
		{"-n", cliNS, "link", "set", browserCliLink, "up"},
		{"-n", upNS, "link", "set", browserUpLink, "up"},
	} {
		if err := ipCmd(ctx, args...); err != nil {
			t.Fatalf("set up the browser test's namespaces: %v", err)
		}
	}
}

// TestBrowserUpstream is the upstream, run inside sbr-up: OpenWeather's
// current-weather answer for a GET, a small JSON answer for a POST, and a
// line in the log file for every request.
func TestBrowserUpstream(t *testing.T) {
	raw := os.Getenv(browserUpstreamEnv)
	if raw == "" {
		t.Skip("run by TestBrowser")
	}
	var cfg browserConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(cfg.UpstreamLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 4096)
		n, _ := r.Body.Read(body)
		line, _ := json.Marshal(upstreamRequest{Method: r.Method, Path: r.URL.Path, AppID: r.URL.Query().Get("appid"),
			Origin: r.Header.Get("Origin"), Body: string(body[:n])})
		mu.Lock()
		logf.Write(append(line, '\n'))
		logf.Sync()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && r.URL.Path == "/data/2.5/weather" {
			if r.URL.Query().Get("appid") != browserCanary {
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"cod":401,"message":"Invalid API key."}`)
				return
			}
			fmt.Fprintf(w, `{"name":%q,"sys":{"country":"GB"},"main":{"temp":17.4,"feels_like":16.9,"humidity":71},"weather":[{"main":"Clouds","description":"broken clouds"}],"wind":{"speed":4.1}}`, r.URL.Query().Get("q"))
			return
		}
		fmt.Fprint(w, `{"saved":true}`)
	})
	srv := &http.Server{Addr: browserUpAddr + ":443", Handler: h, ReadHeaderTimeout: 10 * time.Second}
	t.Log("serving on", srv.Addr)
	if err := srv.ListenAndServeTLS(cfg.Cert, cfg.Key); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserInside runs inside sbr-cli: snugd, the reference host and
// Chromium, and every check.
func TestBrowserInside(t *testing.T) {
	raw := os.Getenv(browserInsideEnv)
	if raw == "" {
		t.Skip("run by TestBrowser")
	}
	var cfg browserConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	b := startBrowserStack(t, cfg)

	// 1. Pair the reference host; the administrator approves with snugd ctl.
	b.do(t, "open the reference host", chromedp.Navigate("http://127.0.0.1:4780/"), chromedp.WaitVisible(chromedp.ID("pairing")))
	b.shot(t, "01-pair")
	b.do(t, "ask to pair", chromedp.Click(chromedp.ID("pair-start")), chromedp.WaitVisible(chromedp.ID("pair-command")))
	command := b.value(t, "read the code", chromedp.Text(chromedp.ID("pair-command")))
	b.shot(t, "02-pair-code")
	code, ok := strings.CutPrefix(command, "snugd ctl hosts approve ")
	if !ok {
		t.Fatalf("the page shows %q, want the snugd ctl hosts approve command", command)
	}
	b.approvePairing(t, code)
	b.do(t, "see the apps", chromedp.WaitVisible(chromedp.CSS(`[data-testid="install-weather"]`)))
	b.shot(t, "03-apps")

	// 2. Install the weather starter, review and approve its connection.
	b.do(t, "install and review", chromedp.Click(chromedp.CSS(`[data-testid="install-weather"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="review-weather"]`)))
	hostsShown := b.value(t, "read the review", chromedp.Text(chromedp.CSS(`[data-testid="review-hosts"]`)))
	steps := b.eval(t, `String(document.querySelectorAll('[data-testid="instructions"] li').length)`)
	b.shot(t, "04-review")
	if hostsShown != "api.openweathermap.org" || steps == "0" {
		t.Fatalf("the review shows hosts %q and %s instructions, want api.openweathermap.org and the starter's steps", hostsShown, steps)
	}
	b.do(t, "approve", chromedp.Click(chromedp.CSS(`[data-testid="approve-weather"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="cred-form-weather"]`)))

	// 3. Store the credential through the form; the page keeps nothing of it.
	b.do(t, "store the credential",
		chromedp.SendKeys(chromedp.CSS(`[data-testid="cred-weather-api_key"]`), browserCanary),
		chromedp.Click(chromedp.CSS(`[data-testid="cred-save-weather"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="run-app"].primary`)))
	if left := b.value(t, "read the form", chromedp.Value(chromedp.CSS(`[data-testid="cred-weather-api_key"]`))); left != "" {
		t.Fatalf("the credential input still holds %d characters after saving", len(left))
	}
	b.shot(t, "05-connected")

	// 4. Run the starter: it fetches through snugd and renders the answer.
	b.do(t, "run the app", chromedp.Click(chromedp.CSS(`[data-testid="run-app"]`)), chromedp.WaitVisible(chromedp.CSS(`#runner iframe`)))
	frame := b.appFrame(t)
	shown := b.waitInFrame(t, frame, `document.querySelector(".place") && document.querySelector(".place").textContent + " " + document.querySelector(".temp").textContent`)
	if shown != "London, GB 17°C" {
		t.Fatalf("the weather app shows %q, want London, GB 17°C", shown)
	}
	b.shot(t, "06-app")
	if got := b.upstream(t); len(got) != 1 || got[0].Method != "GET" || got[0].AppID != browserCanary || got[0].Origin != "" {
		t.Fatalf("the upstream saw %+v, want one GET with the injected key and no Origin (sent by snugd, not the browser)", got)
	}

	// 5. A mutating request asks the person in the host's own dialog, and
	// goes out only after the click.
	instance := b.evalInFrame(t, frame, `window.__snugFrames.map(JSON.parse).filter(f => f.type === "snug:host-ready").pop().instanceId`)
	post := func(id string) string {
		return fmt.Sprintf(`parent.postMessage({type: "snug:net-request", v: 1, requestId: %q, instanceId: %q, url: "snug-connection://weather/data/2.5/notes", method: "POST", headers: {"content-type": "application/json"}, body: "{\"note\":\"umbrella\"}"}, "*"), "sent"`, id, instance)
	}
	b.evalInFrame(t, frame, post("post-allow"))
	b.do(t, "the confirm dialog", chromedp.WaitVisible(chromedp.CSS(`#confirm-dialog[open]`)))
	method := b.value(t, "read the confirm", chromedp.Text(chromedp.ID("confirm-method")))
	fullURL := b.value(t, "read the confirm", chromedp.Text(chromedp.ID("confirm-url")))
	b.shot(t, "07-confirm")
	if method != "POST" || fullURL != "https://api.openweathermap.org/data/2.5/notes" {
		t.Fatalf("the confirm dialog shows %s %s, want POST https://api.openweathermap.org/data/2.5/notes", method, fullURL)
	}
	if n := countMethod(b.upstream(t), "POST"); n != 0 {
		t.Fatalf("the upstream saw %d POSTs before the person clicked", n)
	}
	b.do(t, "allow", chromedp.Click(chromedp.ID("confirm-allow")))
	resp := b.waitInFrame(t, frame, `(window.__snugFrames.map(JSON.parse).find(f => f.type === "snug:net-response" && f.requestId === "post-allow") || {}).ok === true ? "ok" : ""`)
	if resp != "ok" || countMethod(b.upstream(t), "POST") != 1 {
		t.Fatalf("after allow: frame %q, upstream POSTs %d; want ok and one", resp, countMethod(b.upstream(t), "POST"))
	}

	// A denied one answers the app NET_CONFIRM_DENIED and sends nothing.
	b.evalInFrame(t, frame, post("post-deny"))
	b.do(t, "deny", chromedp.WaitVisible(chromedp.CSS(`#confirm-dialog[open]`)), chromedp.Click(chromedp.ID("confirm-deny")))
	denied := b.waitInFrame(t, frame, `((window.__snugFrames.map(JSON.parse).find(f => f.type === "snug:net-response" && f.requestId === "post-deny") || {}).error || {}).code || ""`)
	if denied != "NET_CONFIRM_DENIED" || countMethod(b.upstream(t), "POST") != 1 {
		t.Fatalf("after deny: the app got %q and the upstream %d POSTs; want NET_CONFIRM_DENIED and still one", denied, countMethod(b.upstream(t), "POST"))
	}

	// 6. The app iframe itself reaches neither snugd nor the upstream: the
	// sandbox and the runner CSP hold.
	for _, target := range []string{"http://127.0.0.1:4747/v1/health", "https://api.openweathermap.org/data/2.5/weather?q=x", "http://127.0.0.1:4780/starters.json"} {
		res := b.awaitInFrame(t, frame, fmt.Sprintf(`fetch(%q).then(r => "reached " + r.status, e => "blocked")`, target))
		if res != "blocked" {
			t.Errorf("the app iframe fetched %s: %s", target, res)
		}
	}
	if got := b.evalInFrame(t, frame, `String(window.__snugViolations.length > 0)`); got != "true" {
		t.Errorf("no CSP violation was reported in the app iframe for its fetches")
	}
	if got := b.evalInFrame(t, frame, `(() => { try { return String(window.parent.document.body !== null) } catch (e) { return "denied" } })()`); got != "denied" {
		t.Errorf("the app iframe reached the host page's document: %s", got)
	}
	if got := b.upstream(t); len(got) != 2 {
		t.Errorf("the upstream saw %d requests, want 2 (the app's own fetches must not reach it): %+v", len(got), got)
	}

	// 7. An unpaired page on another origin reads nothing from any route
	// but the refusal that says it is not paired, with a token too.
	b.do(t, "an unpaired origin", chromedp.Navigate("http://localhost:4780/starters.json"))
	for _, path := range []string{"/v1/health", "/v1/status", "/v1/apps/starter-weather/connections", "/v1/confirms", "/v1/journal", "/v1/registry", "/v1/events", "/v1/standing", "/v1/apps/starter-weather/facts"} {
		for _, auth := range []string{"", "Bearer snugh_" + strings.Repeat("A", 43)} {
			res := b.await(t, fmt.Sprintf(`fetch("http://127.0.0.1:4747%s", {headers: %q ? {Authorization: %q} : {}}).then(r => r.text().then(t => "read " + r.status + " " + t), e => "blocked")`, path, auth, auth))
			if want := unpairedRead(path); res != want {
				t.Errorf("an unpaired origin (token %t) read %s: %q, want %q", auth != "", path, res, want)
			}
		}
	}

	// 8. The credential is nowhere in the browser: not in the host page's
	// DOM or storage, not in any frame posted to the app, not in the console.
	b.do(t, "back to the host", chromedp.Navigate("http://127.0.0.1:4780/"), chromedp.WaitVisible(chromedp.ID("apps")))
	dom := b.eval(t, `document.documentElement.outerHTML + JSON.stringify(Object.assign({}, localStorage)) + JSON.stringify(Object.assign({}, sessionStorage))`)
	if strings.Contains(dom, browserCanary) {
		t.Error("the credential is in the host page's DOM or storage")
	}
	if strings.Contains(b.seenFrames(), browserCanary) {
		t.Error("the credential was posted into the app iframe")
	}
	if strings.Contains(b.consoleText(), browserCanary) {
		t.Error("the credential reached the browser console")
	}
	if strings.Contains(b.snugdLog.String(), browserCanary) {
		t.Error("the credential is in snugd's log")
	}

	// 9. The first hour of a host's author (browser_host_test.go).
	b.checkGuideApp(t)
	b.checkRevoked(t)
	b.checkSmallestHost(t)
	if strings.Contains(b.seenFrames(), browserCanary) || strings.Contains(b.consoleText(), browserCanary) || strings.Contains(b.snugdLog.String(), browserCanary) {
		t.Error("the credential reached an app frame, the console or snugd's log")
	}
}

func countMethod(rs []upstreamRequest, m string) int {
	n := 0
	for _, r := range rs {
		if r.Method == m {
			n++
		}
	}
	return n
}

// browserStack is snugd, the reference host and Chromium, inside sbr-cli.
type browserStack struct {
	cfg      browserConfig
	dataDir  string
	ctx      context.Context
	snugdLog *lockedBuffer

	mu       sync.Mutex
	console  []string
	contexts map[cdp.FrameID]runtime.ExecutionContextID
	frames   string // the longest record of the frames the app iframe received
}

// recorder runs in every document before its own scripts: it keeps every
// message the document receives and every CSP violation it reports.
const recorder = `(() => {
  window.__snugFrames = [];
  window.__snugViolations = [];
  addEventListener("message", (e) => { try { window.__snugFrames.push(JSON.stringify(e.data)); } catch (err) {} }, true);
  addEventListener("securitypolicyviolation", (e) => { window.__snugViolations.push(e.violatedDirective + " " + e.blockedURI); }, true);
})();`

func startBrowserStack(t *testing.T, cfg browserConfig) *browserStack {
	t.Helper()
	b := &browserStack{cfg: cfg, dataDir: filepath.Join(cfg.Dir, "data"), snugdLog: &lockedBuffer{}, contexts: map[cdp.FrameID]runtime.ExecutionContextID{}}
	if err := os.Mkdir(b.dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dataDir, "config.json"), []byte(`{"port": 4747, "logLevel": "debug"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	noCerts := filepath.Join(cfg.Dir, "no-cert-dir")
	if err := os.Mkdir(noCerts, 0o700); err != nil {
		t.Fatal(err)
	}
	snugd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" /etc/hosts && exec "$2" run --data-dir "$3"`, "sh", cfg.Hosts, cfg.Snugd, b.dataDir)
	snugd.Env = append(cleanEnv(), "SSL_CERT_FILE="+cfg.CA, "SSL_CERT_DIR="+noCerts)
	snugd.Stdout = b.snugdLog
	snugd.Stderr = b.snugdLog
	snugd.SysProcAttr = dieWithParent()
	if err := snugd.Start(); err != nil {
		t.Fatalf("start snugd: %v", err)
	}
	t.Cleanup(func() {
		snugd.Process.Signal(syscall.SIGTERM)
		snugd.Wait()
		if t.Failed() {
			t.Logf("snugd's log:\n%s", b.snugdLog.String())
		}
	})
	web := exec.Command(cfg.Snugd, "webhost", "--port", "4780", "--app", writeGuideApp(t, cfg.Dir))
	web.Stdout = &testWriter{t: t, prefix: "webhost: "}
	web.Stderr = web.Stdout
	web.SysProcAttr = dieWithParent()
	if err := web.Start(); err != nil {
		t.Fatalf("start snugd webhost: %v", err)
	}
	t.Cleanup(func() { web.Process.Signal(syscall.SIGTERM); web.Wait() })
	waitHTTP(t, "http://127.0.0.1:4747/v1/health")
	waitHTTP(t, "http://127.0.0.1:4780/starters.json")

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath()),
		chromedp.NoSandbox, // root in CI; Blink's iframe sandbox and CSP are not this
		chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(cfg.Dir, "chromium")),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		// One renderer for the page and its app iframe, so that the test
		// can evaluate inside the iframe. The iframe's sandbox and CSP are
		// enforced by Blink either way; the pages are the test's own.
		chromedp.Flag("disable-site-isolation-trials", true),
		chromedp.Flag("disable-features", "SitePerProcess,IsolateOrigins,IsolateSandboxedIframes"),
		chromedp.WindowSize(1100, 900),
	)
	actx, acancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(acancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	if err := chromedp.Listen(ctx, b.observe); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recorder}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	b.ctx = ctx
	return b
}

// observe keeps the console and the frames' execution contexts. It runs in
// chromedp's event loop: it only records.
func (b *browserStack) observe(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		for _, a := range e.Args {
			b.console = append(b.console, string(a.Value)+" "+a.Description)
		}
	case *runtime.EventExceptionThrown:
		b.console = append(b.console, e.ExceptionDetails.Text)
	case *runtime.EventExecutionContextCreated:
		var aux struct {
			FrameID   cdp.FrameID `json:"frameId"`
			IsDefault bool        `json:"isDefault"`
		}
		if len(e.Context.AuxData) > 0 && json.Unmarshal(e.Context.AuxData, &aux) == nil && aux.IsDefault {
			b.contexts[aux.FrameID] = e.Context.ID
		}
	}
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	for i := 0; i < 100; i++ { // 10 seconds at most
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer within 10 seconds", url)
}

// do runs steps, bounded, and fails the test with a screenshot.
func (b *browserStack) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.shot(t, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v\nconsole: %s", what, err, b.consoleText())
	}
}

// value runs one action that returns a string.
func (b *browserStack) value(t *testing.T, what string, a chromedp.Action[string]) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.shot(t, "failed-"+strings.ReplaceAll(what, " ", "-"))
		t.Fatalf("%s: %v\nconsole: %s", what, err, b.consoleText())
	}
	return v
}

func (b *browserStack) shot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		err = os.WriteFile(filepath.Join(b.cfg.Shots, name+".png"), png, 0o644)
	}
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
	}
}

func (b *browserStack) consoleText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.console, "\n")
}

func (b *browserStack) seenFrames() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.frames
}

// approvePairing approves the code the page shows, as the administrator
// would, through the real snugd ctl.
func (b *browserStack) approvePairing(t *testing.T, code string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.cfg.Snugd, "ctl", "--data-dir", b.dataDir, "hosts", "approve", "--yes", code).CombinedOutput()
	if err != nil {
		t.Fatalf("snugd ctl hosts approve: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "http://127.0.0.1:4780") {
		t.Fatalf("snugd ctl hosts approve printed %q, want the origin it approved", out)
	}
}

// appFrame returns the frame id of the app iframe, once its document has
// an execution context.
func (b *browserStack) appFrame(t *testing.T) cdp.FrameID {
	t.Helper()
	for i := 0; i < 100; i++ { // 10 seconds at most
		res, err := chromedp.Call(b.ctx, page.GetFrameTree, cdp.Empty{})
		if err != nil {
			t.Fatalf("read the frame tree: %v", err)
		}
		for _, child := range res.FrameTree.ChildFrames {
			if strings.Contains(child.Frame.URL, "/run/weather") {
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
	t.Fatal("the app iframe did not appear within 10 seconds")
	return ""
}

// evalIn evaluates expr (a string-valued expression) in the frame's main
// world ("" for the page), awaiting a promise when asked. After each
// evaluation in the app's frame it keeps the record of the frames the app
// received, for the final leak check.
func (b *browserStack) evalIn(t *testing.T, frame cdp.FrameID, expr string, await bool) string {
	t.Helper()
	opt := func(p *runtime.EvaluateParams) {
		if frame != "" {
			b.mu.Lock()
			p.ContextID = b.contexts[frame]
			b.mu.Unlock()
		}
		if await {
			p.AwaitPromise = new(true)
		}
	}
	res := b.value(t, "evaluate "+firstLine(expr), chromedp.Evaluate[string](expr, opt))
	if frame != "" {
		seen, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`JSON.stringify(window.__snugFrames)`, opt))
		b.mu.Lock()
		if err == nil && len(seen) > len(b.frames) {
			b.frames = seen
		}
		b.mu.Unlock()
	}
	return res
}

func (b *browserStack) eval(t *testing.T, expr string) string {
	t.Helper()
	return b.evalIn(t, "", expr, false)
}
func (b *browserStack) await(t *testing.T, expr string) string {
	t.Helper()
	return b.evalIn(t, "", expr, true)
}

func (b *browserStack) evalInFrame(t *testing.T, f cdp.FrameID, expr string) string {
	t.Helper()
	return b.evalIn(t, f, expr, false)
}

func (b *browserStack) awaitInFrame(t *testing.T, f cdp.FrameID, expr string) string {
	t.Helper()
	return b.evalIn(t, f, expr, true)
}

// waitInFrame evaluates expr in the frame until it is a non-empty string.
func (b *browserStack) waitInFrame(t *testing.T, f cdp.FrameID, expr string) string {
	t.Helper()
	wrapped := `(() => { try { const v = (` + expr + `); return v ? String(v) : ""; } catch (e) { return ""; } })()`
	for i := 0; i < 150; i++ { // 15 seconds at most
		if v := b.evalIn(t, f, wrapped, false); v != "" {
			return v
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("waited 15 s for %s", firstLine(expr))
	return ""
}

// upstream reads what the upstream has seen so far.
func (b *browserStack) upstream(t *testing.T) []upstreamRequest {
	t.Helper()
	f, err := os.Open(b.cfg.UpstreamLog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []upstreamRequest
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r upstreamRequest
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
