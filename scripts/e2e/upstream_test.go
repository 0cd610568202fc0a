//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// upstreamEnv names the helper's configuration file. It is read only by
// this test binary's TestUpstreamHelper, never by snugd.
const upstreamEnv = "SNUGD_E2E_UPSTREAM"

// eventPrefix marks the helper's event lines on its stdout, which the test
// framework shares.
const eventPrefix = "E2E-EVENT "

// upstreamConfig configures one upstream helper.
type upstreamConfig struct {
	Role   string `json:"role"`   // "pub" or "priv"
	Listen string `json:"listen"` // "198.51.100.10:443"
	Cert   string `json:"cert"`
	Key    string `json:"key"`
	// Secret is the base64 HMAC secret the pub upstream verifies
	// CB-ACCESS-SIGN with, as Coinbase Exchange does.
	Secret string `json:"secret"`
}

// An event is what an upstream reports: it is ready, it accepted a TCP
// connection, or it received a request.
type event struct {
	Kind   string              `json:"kind"` // ready | accept | request
	Method string              `json:"method,omitempty"`
	Path   string              `json:"path,omitempty"`
	Query  string              `json:"query,omitempty"`
	Header map[string][]string `json:"header,omitempty"`
	Body   string              `json:"body,omitempty"`
	// SigOK says CB-ACCESS-SIGN equals the HMAC the upstream recomputed
	// from the CB-ACCESS-TIMESTAMP it received.
	SigOK bool `json:"sigOK,omitempty"`
}

// TestUpstreamHelper is not a test: it is the upstream server, run by the
// harness inside a network namespace as a re-executed test binary. It
// serves until its stdin closes.
func TestUpstreamHelper(t *testing.T) {
	var cfg upstreamConfig
	ln, cert := helperStart(t, upstreamEnv, "the upstream helper runs only when the harness starts it", &cfg, func() (string, string, string) { return cfg.Listen, cfg.Cert, cfg.Key })
	out := &reporter{w: os.Stdout}
	helperServe(&countingListener{Listener: ln, out: out}, cert, upstreamHandler(cfg, out), out)
}

// helperStart is the start of a server helper re-executed by a test: it
// reads the JSON config (into cfg) from the file named by env, skipping
// with why when env is unset, loads the TLS key pair and listens on the
// address addrs names.
func helperStart(t *testing.T, env, why string, cfg any, addrs func() (listen, cert, key string)) (net.Listener, tls.Certificate) {
	name := os.Getenv(env)
	if name == "" {
		t.Skip(why)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, cfg); err != nil {
		t.Fatal(err)
	}
	listen, certFile, keyFile := addrs()
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	return ln, cert
}

// helperServe serves h over TLS on ln, reports ready, and exits when the
// harness closes stdin.
func helperServe(ln net.Listener, cert tls.Certificate, h http.Handler, out *reporter) {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}},
	}
	go func() {
		io.Copy(io.Discard, os.Stdin) // the harness closes stdin to stop us
		os.Exit(0)
	}()
	out.report(event{Kind: "ready"})
	srv.Serve(tls.NewListener(ln, srv.TLSConfig))
}

// reporter writes events as prefixed JSON lines, one at a time.
type reporter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *reporter) report(ev event) {
	b, _ := json.Marshal(ev)
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, "%s%s\n", eventPrefix, b)
}

// countingListener reports every TCP connection it accepts, before TLS.
type countingListener struct {
	net.Listener
	out *reporter
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.out.report(event{Kind: "accept"})
	}
	return c, err
}

// upstreamHandler is the upstream's behaviour, by path:
//
//	/redirect  302 to /accounts (snugd must not follow it)
//	/big       a 1 MiB + 1 byte body (NET_SIZE_EXCEEDED, never truncated)
//	/echo      echoes the CB-ACCESS-KEY and passphrase it received, raw and
//	           percent-encoded, in the body and in a Link header (gate 10's scrub)
//	/slow      holds the answer for a second (the SIGTERM drain)
//	else       200 {"ok":true}
//
// Requests for Host bridge.simplefin.org go to the SimpleFIN Bridge
// simulator instead (simplefin_test.go).
func upstreamHandler(cfg upstreamConfig, out *reporter) http.Handler {
	simplefin := newSimpleFINUpstream(out) // simplefin_test.go
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == simplefinHost {
			simplefin.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		ev := event{Kind: "request", Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header, Body: string(body)}
		if cfg.Secret != "" {
			ev.SigOK = checkSignature(cfg.Secret, r, string(body))
		}
		out.report(ev)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Debug", "upstream-internal")
		switch r.URL.Path {
		case "/redirect":
			w.Header().Set("Location", "https://api.e2e.test/accounts")
			w.WriteHeader(http.StatusFound)
		case "/big":
			w.Write([]byte(strings.Repeat("x", 1<<20+1)))
		case "/echo":
			key, pass := r.Header.Get("CB-ACCESS-KEY"), r.Header.Get("CB-ACCESS-PASSPHRASE")
			w.Header().Set("Link", "<https://api.e2e.test/next?key="+url.QueryEscape(key)+"&p="+url.PathEscape(pass)+">; rel=next")
			fmt.Fprintf(w, `{"key":%q,"keyEncoded":%q,"passphrase":%q,"passEncoded":%q}`, key, url.QueryEscape(key), pass, url.PathEscape(pass))
		case "/slow":
			time.Sleep(time.Second)
			w.Write([]byte(`{"slow":true}`))
		default:
			w.Write([]byte(`{"ok":true}`))
		}
	})
}

// checkSignature recomputes Coinbase Exchange's CB-ACCESS-SIGN from the
// timestamp, method, path and body the upstream actually received.
func checkSignature(secret string, r *http.Request, body string) bool {
	key, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(r.Header.Get("CB-ACCESS-TIMESTAMP") + r.Method + r.URL.RequestURI() + body))
	want := base64.StdEncoding.EncodeToString(m.Sum(nil))
	got := r.Header.Get("CB-ACCESS-SIGN")
	return got != "" && hmac.Equal([]byte(got), []byte(want))
}

// An upstream is a running helper and the events it reported.
type upstream struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu     sync.Mutex
	events []event
	notify chan struct{} // receives (non-blocking) after each event
}

// startUpstream runs the helper inside ns and waits until it listens.
// t.Cleanup stops it.
func startUpstream(t *testing.T, ns netns, cfg upstreamConfig, dir string) *upstream {
	t.Helper()
	return startHelper(t, ns, "TestUpstreamHelper", upstreamEnv, cfg.Role, cfg, dir)
}

// startHelper runs the helper test named run inside ns, handing it cfg as
// a JSON file named by the environment variable env, and waits until it
// reports ready on stdout as an event line. t.Cleanup stops it. Any
// helper that reports events the way TestUpstreamHelper does is an
// upstream (oauth_test.go's OP is another).
func startHelper(t *testing.T, ns netns, run, env, role string, cfg any, dir string) *upstream {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := dir + "/upstream-" + role + ".json"
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns.name, self, "-test.run=^"+run+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+cfgFile)
	cmd.SysProcAttr = dieWithParent()
	cmd.Stderr = &testWriter{t: t, prefix: "upstream " + role + ": "}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	u := &upstream{cmd: cmd, stdin: stdin, notify: make(chan struct{}, 1)}
	t.Cleanup(u.stop)
	go u.read(stdout) // ends when the helper's stdout closes
	if _, ok := u.waitFor(10*time.Second, func(ev event) bool { return ev.Kind == "ready" }); !ok {
		t.Fatalf("upstream %s did not start", role)
	}
	return u
}

func (u *upstream) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), eventPrefix)
		if !ok {
			continue
		}
		var ev event
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		u.mu.Lock()
		u.events = append(u.events, ev)
		u.mu.Unlock()
		select {
		case u.notify <- struct{}{}:
		default:
		}
	}
}

// stop closes the helper's stdin, which ends it, and kills it if it is
// still there after two seconds.
func (u *upstream) stop() {
	u.stdin.Close()
	done := make(chan struct{})
	go func() { u.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		u.cmd.Process.Kill()
		<-done
	}
}

// snapshot returns a copy of the events so far.
func (u *upstream) snapshot() []event {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]event(nil), u.events...)
}

// count returns how many events of kind were reported.
func (u *upstream) count(kind string) int {
	n := 0
	for _, ev := range u.snapshot() {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

// requests returns the requests reported after the first skip events.
func (u *upstream) requestsSince(mark int) []event {
	var out []event
	for i, ev := range u.snapshot() {
		if i >= mark && ev.Kind == "request" {
			out = append(out, ev)
		}
	}
	return out
}

// awaitRequests waits (up to 10 s) until at least n requests were reported
// after mark and returns them all. The upstream reports a request before it
// answers, but its report travels through a pipe that a goroutine here
// reads: when snugd's answer arrives first, the report may still be in the
// pipe, and a count taken then would miss it (and the next check, with a
// later mark, would find it).
func (u *upstream) awaitRequests(mark, n int) []event {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		reqs := u.requestsSince(mark)
		if len(reqs) >= n {
			return reqs
		}
		select {
		case <-u.notify:
		case <-ctx.Done():
			return reqs
		}
	}
}

// mark returns the number of events so far, for requestsSince.
func (u *upstream) mark() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.events)
}

// waitFor waits up to timeout for an event matching pred and returns it.
func (u *upstream) waitFor(timeout time.Duration, pred func(event) bool) (event, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		for _, ev := range u.snapshot() {
			if pred(ev) {
				return ev, true
			}
		}
		select {
		case <-u.notify:
		case <-ctx.Done():
			return event{}, false
		}
	}
}

// testWriter sends a child's output to the test log, line by line.
type testWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	buf    []byte
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		w.t.Log(w.prefix + string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}
