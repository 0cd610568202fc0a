//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildSnugd builds the real binary, exactly as shipped: no tag, no test
// switch.
func buildSnugd(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "snugd")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/snugd")
	cmd.Dir = "../.." // the module root, from scripts/e2e
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/snugd: %v\n%s", err, out)
	}
	return bin
}

// A snugd is the daemon running in the client namespace under unshare -m
// with the harness's /etc/hosts bind-mounted over the real one, trusting
// the test CA through SSL_CERT_FILE. Nothing else about it is for tests.
type snugd struct {
	bin     string
	dataDir string
	port    int
	base    string // http://127.0.0.1:port

	cmd  *exec.Cmd
	log  *lockedBuffer // everything snugd wrote to stderr, for the leak check
	done chan struct{} // closed when the process has exited
	err  error         // its exit, after done
}

// startSnugd writes config.json (the port, and the shortest confirm
// timeout so an unanswered confirm is denied in five seconds) and starts
// snugd run, waiting until GET /v1/health answers.
func startSnugd(t *testing.T, h *harness, bin string) *snugd {
	t.Helper()
	// The client namespace is the harness's own: the documented default
	// port is free there.
	port := 4747
	s := &snugd{bin: bin, dataDir: filepath.Join(h.dir, "data"), port: port, base: fmt.Sprintf("http://127.0.0.1:%d", port), log: &lockedBuffer{}, done: make(chan struct{})}
	if err := os.Mkdir(s.dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{"port": %d, "confirmTimeoutSeconds": 5, "logLevel": "debug"}`, port)
	if err := os.WriteFile(filepath.Join(s.dataDir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(h.dir, "hosts")
	hostsFile := "127.0.0.1 localhost\n::1 localhost\n" +
		pubNS().nsAddr + " api.e2e.test\n" +
		pubNS().nsAddr + " " + simplefinHost + "\n" +
		privNS().nsAddr + " private.e2e.test\n"
	for _, line := range h.hosts {
		hostsFile += line + "\n"
	}
	if err := os.WriteFile(hosts, []byte(hostsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	noCerts := filepath.Join(h.dir, "no-cert-dir")
	if err := os.Mkdir(noCerts, 0o700); err != nil {
		t.Fatal(err)
	}
	// ip netns exec joins the client namespace and execs unshare, which
	// execs sh in a new mount namespace (private propagation, so the bind
	// mount never reaches the host), and sh execs snugd: one process,
	// whose pid is cmd's.
	s.cmd = exec.Command("ip", "netns", "exec", cliNSName, "unshare", "-m", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" /etc/hosts && exec "$2" run --data-dir "$3"`, "sh", hosts, bin, s.dataDir)
	s.cmd.Env = append(cleanEnv(), "SSL_CERT_FILE="+h.pki.caFile, "SSL_CERT_DIR="+noCerts)
	s.cmd.SysProcAttr = dieWithParent()
	s.cmd.Stdout = io.MultiWriter(s.log, &testWriter{t: t, prefix: "snugd: "})
	s.cmd.Stderr = s.cmd.Stdout
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start snugd: %v", err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.stop(t) })
	for i := 0; i < 100; i++ { // 10 seconds at most
		select {
		case <-s.done:
			t.Fatalf("snugd exited at start: %v", s.err)
		case <-time.After(100 * time.Millisecond):
		}
		if st, _, err := s.call(t, http.MethodGet, "/v1/health", "", nil, nil); err == nil && st == http.StatusOK {
			return s
		}
	}
	t.Fatal("snugd did not answer GET /v1/health within 10 seconds")
	return nil
}

// stop ends snugd if it still runs: SIGTERM, then SIGKILL after 10 s.
func (s *snugd) stop(t *testing.T) {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Errorf("snugd ignored SIGTERM for 10 s; killing it")
		s.cmd.Process.Kill()
		<-s.done
	}
}

// cleanEnv is the environment without proxy variables (snugd ignores them
// anyway) and without the upstream helper's variable.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToLower(k) {
		case "http_proxy", "https_proxy", "all_proxy", "no_proxy", strings.ToLower(upstreamEnv), "ssl_cert_file", "ssl_cert_dir":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// ctl runs the real snugd ctl --data-dir against the daemon, inside the
// client namespace (doctor checks the TCP port there), with stdin, and
// returns its exit status and output.
func (s *snugd) ctl(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := inCli(ctx, s.bin, append([]string{"ctl", "--data-dir", s.dataDir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("snugd ctl %q: %v (%s)", args, err, errb.String())
	}
	return code, out.String(), errb.String()
}

// call sends one request to the host API over TCP. body is sent as JSON
// unless it is a string; header adds or overrides headers ("Host" sets the
// Host header). It returns the status and the decoded JSON answer in out.
func (s *snugd) call(t *testing.T, method, path, token string, body any, out any, header ...string) (int, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.callCtx(ctx, method, path, token, body, out, header...)
}

func (s *snugd) callCtx(ctx context.Context, method, path, token string, body any, out any, header ...string) (int, []byte, error) {
	var r io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	if r != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	// snugd listens on loopback inside the client namespace; the
	// connection is made from there.
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: cliDial}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, data, fmt.Errorf("decode %s %s answer %q: %w", method, path, data, err)
		}
	}
	return resp.StatusCode, data, nil
}

// pairHost pairs a desktop host: pair, snugd ctl hosts approve CODE,
// redeem with the verifier. It returns the host token.
func (s *snugd) pairHost(t *testing.T, name string) string {
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
		"name": name, "surface": "desktop", "challenge": base64.RawURLEncoding.EncodeToString(sum[:]),
	}, &p)
	if err != nil || st != http.StatusOK || p.Code == "" {
		t.Fatalf("POST /v1/hosts/pair = %d %s, %v", st, raw, err)
	}
	var r struct {
		State string `json:"state"`
		Token string `json:"token"`
	}
	// Before approval the pairing is pending and releases nothing.
	if st, raw, err := s.call(t, http.MethodPost, "/v1/hosts/pair/"+p.PairingID+"/redeem", "", map[string]string{"verifier": verifier}, &r); err != nil || st != http.StatusOK || r.State != "pending" || r.Token != "" {
		t.Fatalf("redeem before approval = %d %s, %v; want pending without a token", st, raw, err)
	}
	if code, out, errOut := s.ctl(t, "", "hosts", "approve", p.Code, "--yes"); code != 0 {
		t.Fatalf("snugd ctl hosts approve = %d\n%s%s", code, out, errOut)
	}
	st, raw, err = s.call(t, http.MethodPost, "/v1/hosts/pair/"+p.PairingID+"/redeem", "", map[string]string{"verifier": verifier}, &r)
	if err != nil || st != http.StatusOK || r.State != "approved" || r.Token == "" {
		t.Fatalf("redeem = %d %s, %v; want approved with a token", st, raw, err)
	}
	return r.Token
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes and reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// dieWithParent makes a child killed when the test binary dies, even by
// go test's timeout, which runs no cleanup. (The kernel sends the signal
// when the thread that started the child exits; Go keeps that thread
// unless a goroutine locked to it ends, which this package never does.)
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
