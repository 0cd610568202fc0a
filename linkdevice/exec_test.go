package linkdevice

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/scrub"
)

// syncBuffer is a log sink safe for the supervisor's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type execHarness struct {
	s    *Supervisor
	logs *syncBuffer
	stop func()
}

// startExec runs a supervisor over real processes: helper "sim" is the
// file exe (linked into a fresh install directory as "helper") with args
// and env.
func startExec(t *testing.T, exe string, args, env []string, scrub func(string) string) *execHarness {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(dir, "helper")); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	s, err := New(Config{
		Helpers:  map[string]Spec{"sim": {Executable: "helper", Args: args}},
		Dir:      dir,
		StateDir: filepath.Join(t.TempDir(), "helpers"),
		Env:      env,
		Logger:   slog.New(slog.NewTextHandler(logs, nil)),
		Scrub:    scrub,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	h := &execHarness{s: s, logs: logs}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("Run did not return 30 s after its ctx ended")
			}
		})
	}
	t.Cleanup(h.stop)
	return h
}

// testHelper runs this test binary as the helper of mode.
func testHelper(t *testing.T, mode string, args ...string) *execHarness {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return startExec(t, exe, args, []string{helperModeEnv + "=" + mode}, func(s string) string { return strings.ReplaceAll(s, "hunter2", "[SCRUBBED]") })
}

// waitFor polls cond for up to 20 s (real processes, real time).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// scan plays the phone: it writes the current payload into the session's
// scan file and waits for the simulator's verdict.
func scan(t *testing.T, dir, payload string) string {
	t.Helper()
	os.Remove(filepath.Join(dir, simResultFile))
	writeScan(t, dir, payload)
	var got []byte
	waitFor(t, "scan.result", func() bool {
		var err error
		got, err = os.ReadFile(filepath.Join(dir, simResultFile))
		return err == nil && len(got) > 0
	})
	return strings.TrimSpace(string(got))
}

// linkSim links the session k through the supervisor and returns the
// released token.
func linkSim(t *testing.T, s *Supervisor, k SessionKey) Token {
	t.Helper()
	ctx := t.Context()
	if err := s.StartLink(ctx, k); err != nil {
		t.Fatalf("StartLink = %v", err)
	}
	p, err := s.PollLink(ctx, k)
	if err != nil || p.State != LinkQR || p.QR == nil {
		t.Fatalf("PollLink = %+v, %v; want a code", p, err)
	}
	if got := scan(t, s.SessionDir(k), p.QR.Payload); got != "linked" {
		t.Fatalf("scan = %q, want linked", got)
	}
	p, err = s.PollLink(ctx, k)
	if err != nil || p.State != LinkLinked || p.Token.IsZero() {
		t.Fatalf("PollLink after the scan = %+v, %v; want linked with the token", p, err)
	}
	return p.Token
}

// The simulator through the supervisor, as real processes: link, the
// token released once, verify, the messaging API, a crash restarts it
// with the link kept, unlink forgets it.
// conformance: P3-C12.12-17
func TestSimThroughSupervisor(t *testing.T) {
	h := testHelper(t, "sim", "--rotate=2s")
	s, k, ctx := h.s, simKey, t.Context()
	tok := linkSim(t, s, k)
	if p, err := s.PollLink(ctx, k); err != nil || p.State != LinkLinked || !p.Token.IsZero() || p.Label != "Simulated phone" {
		t.Errorf("second PollLink = %+v, %v; want linked without the token", p, err)
	}
	if v, err := s.Verify(ctx, k, tok); err != nil || !v.Alive || v.Label != "Simulated phone" {
		t.Errorf("Verify = %+v, %v", v, err)
	}
	resp, err := s.Do(ctx, k, Request{Method: "POST", PathAndQuery: "/v1/threads/t-bob/messages", Body: []byte(`{"threadId":"t-bob","text":"hi"}`), Token: tok})
	if err != nil || resp.Status != 201 {
		t.Fatalf("send = %d %s, %v", resp.Status, resp.Body, err)
	}
	if _, err := s.Do(ctx, k, Request{Method: "GET", PathAndQuery: "/v1/threads", Token: Token{strings.Repeat("A", 43)}}); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Do(wrong token) = %v, want ErrUnauthorized", err)
	}
	raw, _ := os.ReadFile(filepath.Join(s.SessionDir(k), simStateFile))
	if bytes.Contains(raw, []byte(tok.Reveal())) {
		t.Error("session.json holds the token")
	}

	// Kill the helper: it comes back after 1 s with the link.
	killHelper(t, s.SessionDir(k))
	waitFor(t, "the restart", func() bool { st := statusOf(t, s, k); return st.State == StateRunning && st.Restarts == 1 })
	resp, err = s.Do(ctx, k, Request{Method: "GET", PathAndQuery: "/v1/threads/t-bob/messages", Token: tok})
	if err != nil || resp.Status != 200 || !bytes.Contains(resp.Body, []byte(`"text":"hi"`)) {
		t.Errorf("after restart = %d %s, %v; want the sent message", resp.Status, resp.Body, err)
	}

	if err := s.Unlink(ctx, k); err != nil {
		t.Fatalf("Unlink = %v", err)
	}
	if _, err := os.Stat(s.SessionDir(k)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("session dir after Unlink: %v, want gone", err)
	}
	if _, err := s.Do(ctx, k, Request{Method: "GET", PathAndQuery: "/v1/threads", Token: tok}); !errors.Is(err, ErrNotLinked) {
		t.Errorf("Do after Unlink = %v, want ErrNotLinked", err)
	}
	if strings.Contains(h.logs.String(), tok.Reveal()) {
		t.Error("the token reached the log")
	}
}

// killHelper SIGKILLs the helper process whose working directory is dir.
func killHelper(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			if err := exec.Command("kill", "-9", e.Name()).Run(); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Skip("no /proc to find the helper by (not Linux)")
}

// Hostile and broken helpers: each call fails (never hangs), the helper is
// killed and restarted, the status says why in a fixed sentence.
func TestHostileHelpers(t *testing.T) {
	for _, tc := range []struct {
		mode, lastError string
		want            error
	}{
		{"garbage", "the helper broke the protocol: a line is not a JSON-RPC message", ErrSessionClosed},
		{"oversized", "the helper broke the protocol: a line exceeds the size limit", ErrSessionClosed},
		{"crash", "the helper exited", ErrSessionClosed},
		{"flood", "the helper broke the protocol: the helper flooded notifications", ErrSessionClosed},
		{"badversion", "the helper broke the protocol: the helper chose a version snugd did not offer", nil},
		{"exit", "the helper exited", nil},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			h := testHelper(t, tc.mode)
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			_, err := h.s.Do(ctx, simKey, Request{Method: "GET", PathAndQuery: "/v1/threads", Token: testToken})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("Do = %v, want %v", err, tc.want)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Error("the hostile helper wedged the call")
			}
			waitFor(t, "the restart bookkeeping", func() bool {
				st := statusOf(t, h.s, simKey)
				return st.Restarts >= 1 && st.LastError == tc.lastError
			})
			h.stop() // and shutdown still completes
		})
	}
}

// A helper that refuses the token: the error reaches the caller with the
// token scrubbed from the helper's message, and the helper's stderr is
// logged with the token and the caller's secrets removed, control
// characters neutralised and long lines cut.
func TestHelperStderrScrubbed(t *testing.T) {
	h := testHelper(t, "wrongtoken")
	sum := sha256.Sum256([]byte("a token of random bytes"))
	tok := Token{base64.RawURLEncoding.EncodeToString(sum[:])}
	_, err := h.s.Verify(t.Context(), simKey, tok)
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Verify = %v, want ErrUnauthorized", err)
	}
	if strings.Contains(err.Error(), tok.Reveal()) {
		t.Errorf("error %q carries the token", err)
	}
	waitFor(t, "the helper's stderr", func() bool { return strings.Contains(h.logs.String(), "got token") })
	waitFor(t, "the token's other forms", func() bool { return strings.Contains(h.logs.String(), "token forms") })
	waitFor(t, "the long line", func() bool { return strings.Contains(h.logs.String(), "xxxxxxxxxx") })
	logs := h.logs.String()
	forms := []string{
		tok.Reveal(),
		base64.StdEncoding.EncodeToString([]byte(tok.Reveal())), // the base64 of its text
		hex.EncodeToString([]byte(tok.Reveal())),                // the hex of its text
		base64.StdEncoding.EncodeToString(sum[:]),               // its bytes, standard base64
		hex.EncodeToString(sum[:]),                              // its bytes, hex
		strings.ToUpper(hex.EncodeToString(sum[:])),
	}
	for _, bad := range append(forms, "hunter2", "\x1b", strings.Repeat("x", 1001)) {
		if strings.Contains(logs, bad) {
			t.Errorf("log holds %q:\n%s", bad[:min(len(bad), 40)], logs)
		}
	}
	if !strings.Contains(logs, scrub.Mark) || !strings.Contains(logs, "[SCRUBBED]") {
		t.Errorf("log lacks the redaction marks:\n%s", logs)
	}
}

// The protocol against a helper written in Python from PROTOCOL.md alone.
func TestPythonHelperFromTheDocument(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed; the outsider's helper needs it")
	}
	src, err := filepath.Abs("testdata/pyhelper.py")
	if err != nil {
		t.Fatal(err)
	}
	h := startExec(t, src, nil, []string{"PATH=" + filepath.Dir(py) + ":/usr/bin:/bin", "PYHELPER_ROTATE=0.4"}, nil)
	s, k, ctx := h.s, simKey, t.Context()

	var mu sync.Mutex
	var codes []string
	s.cfg.OnEvent = func(e Event) {
		if e.Kind == EventQR {
			mu.Lock()
			codes = append(codes, e.QR.Payload)
			mu.Unlock()
		}
	}
	if err := s.StartLink(ctx, k); err != nil {
		t.Fatalf("StartLink = %v", err)
	}
	waitFor(t, "a rotated code", func() bool { mu.Lock(); defer mu.Unlock(); return len(codes) >= 2 })
	mu.Lock()
	if codes[0] == codes[1] {
		t.Errorf("codes did not rotate: %q", codes)
	}
	mu.Unlock()
	p, err := s.PollLink(ctx, k)
	if err != nil || p.State != LinkQR {
		t.Fatalf("PollLink = %+v, %v", p, err)
	}
	writeScan(t, s.SessionDir(k), p.QR.Payload)
	waitFor(t, "the link", func() bool { p, err = s.PollLink(ctx, k); return err != nil || p.State != LinkQR })
	if err != nil || p.State != LinkLinked || p.Token.IsZero() {
		t.Fatalf("PollLink after the scan = %+v, %v; want linked with a token", p, err)
	}
	tok := p.Token
	if p2, err := s.PollLink(ctx, k); err != nil || !p2.Token.IsZero() {
		t.Errorf("second PollLink = %+v, %v; want no token", p2, err)
	}
	if v, err := s.Verify(ctx, k, tok); err != nil || !v.Alive || v.Label != "Py Device" {
		t.Errorf("Verify = %+v, %v", v, err)
	}
	resp, err := s.Do(ctx, k, Request{Method: "POST", PathAndQuery: "/echo?x=1", Header: map[string][]string{"X-A": {"1"}}, Body: []byte("héllo"), Token: tok})
	var echo struct{ Method, PathAndQuery, Body string }
	if err != nil || resp.Status != 200 || json.Unmarshal(resp.Body, &echo) != nil || echo.Body != "héllo" || echo.PathAndQuery != "/echo?x=1" {
		t.Errorf("Do = %d %s, %v", resp.Status, resp.Body, err)
	}
	if _, err := s.Do(ctx, k, Request{Method: "GET", PathAndQuery: "/echo", Token: testToken}); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Do(wrong token) = %v, want ErrUnauthorized", err)
	}
	if err := s.StartLink(ctx, k); !errors.Is(err, ErrAlreadyLinked) {
		t.Errorf("StartLink while linked = %v, want ErrAlreadyLinked", err)
	}
	if st := statusOf(t, s, k); st.Restarts != 0 || st.State != StateRunning {
		t.Errorf("status = %+v, want running with no restarts", st)
	}
	if err := s.Unlink(ctx, k); err != nil {
		t.Errorf("Unlink = %v", err)
	}
}

// writeScan writes the scan file the way PROTOCOL.md asks: whole, by
// rename, so the helper never reads half of it.
func writeScan(t *testing.T, dir, payload string) {
	t.Helper()
	tmp := filepath.Join(dir, "scan.tmp")
	if err := os.WriteFile(tmp, []byte(payload+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, simScanFile)); err != nil {
		t.Fatal(err)
	}
}

// A helper's own children die with it: a child that holds the helper's
// stdout open neither survives the kill nor wedges the session's reader.
func TestHelperChildrenKilled(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep(1) to fork")
	}
	h := testHelper(t, "forker", "--test.run=^$")
	h.s.cfg.Env = append(h.s.cfg.Env, "PATH=/usr/bin:/bin")
	_, err := h.s.Do(t.Context(), simKey, Request{Method: "GET", PathAndQuery: "/", Token: testToken})
	if !errors.Is(err, ErrSessionClosed) {
		t.Fatalf("Do = %v, want ErrSessionClosed", err)
	}
	raw, err := os.ReadFile(filepath.Join(h.s.SessionDir(simKey), "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the child to die", func() bool {
		st, err := os.ReadFile("/proc/" + string(raw) + "/stat")
		return err != nil || strings.Contains(string(st), ") Z ")
	})
	waitFor(t, "the restart bookkeeping", func() bool { return statusOf(t, h.s, simKey).Restarts >= 1 })

	// And after an orderly exit: the restarted helper answers shutdown and
	// exits, and its child goes with it.
	waitFor(t, "the restart", func() bool { return statusOf(t, h.s, simKey).State == StateRunning })
	raw, err = os.ReadFile(filepath.Join(h.s.SessionDir(simKey), "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	h.stop()
	waitFor(t, "the second child to die", func() bool {
		st, err := os.ReadFile("/proc/" + string(raw) + "/stat")
		return err != nil || strings.Contains(string(st), ") Z ")
	})
}

// Kill ends the helper's whole process group at once, before anyone
// reaps the helper: a child it started dies with it, not only when Wait
// later sweeps the group.
func TestKillEndsTheGroupBeforeWait(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to watch the child in")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh(1) to fork")
	}
	p, err := ExecStarter{}.Start(t.Context(), Command{
		Path: sh,
		Args: []string{"-c", "sleep 300 & echo $!; wait"},
		Dir:  t.TempDir(),
		Env:  []string{"PATH=/usr/bin:/bin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil {
		p.Kill()
		p.Wait()
		t.Fatalf("reading the child's pid: %v", err)
	}
	child := strings.TrimSpace(line)
	p.Kill()
	waitFor(t, "the child to die before Wait", func() bool {
		st, err := os.ReadFile("/proc/" + child + "/stat")
		return err != nil || strings.Contains(string(st), ") Z ")
	})
	p.Wait()
}
