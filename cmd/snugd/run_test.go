package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snug/snugd/internal/testutil"
)

// freePort returns a loopback port nothing listens on (at the moment it
// is asked).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// shortDir returns a fresh directory with a short path (a unix socket
// path is limited to about 100 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "snugd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "d")
}

func health(port int) (*http.Response, error) {
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/v1/health", port), nil)
	return http.DefaultClient.Do(req)
}

// TestRunInProcess: snugd --data-dir D --port N starts, says where it is,
// writes config.json, answers health and the ctl socket, and returns 0
// when its context ends.
func TestRunInProcess(t *testing.T) {
	dir, port := shortDir(t), freePort(t)
	var stdout, stderr testutil.LogBuffer
	e := env{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() { done <- dispatch(ctx, e, []string{"--data-dir", dir, "--port", strconv.Itoa(port)}) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String(), "API on") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no start line; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	line := stdout.String()
	for _, want := range []string{"data in " + dir, fmt.Sprintf("http://127.0.0.1:%d", port), filepath.Join(dir, "snugd.sock")} {
		if !strings.Contains(line, want) {
			t.Errorf("start line %q lacks %q", line, want)
		}
	}
	resp, err := health(port)
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Snugd-Version") == "" {
		t.Fatalf("health = %v, %v", resp, err)
	}
	resp.Body.Close()
	if _, err := os.Stat(filepath.Join(dir, configFile)); err != nil {
		t.Errorf("config.json not written: %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "snugd.sock"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("ctl socket = %v, %v, want mode 0600", fi, err)
	}
	// A second daemon on the same directory is refused, naming why.
	var stderr2 testutil.LogBuffer
	if code := dispatch(t.Context(), env{stdout: io.Discard, stderr: &stderr2, getenv: e.getenv}, []string{"run", "--data-dir", dir, "--port", strconv.Itoa(freePort(t))}); code != exitNo {
		t.Errorf("second snugd run = %d, want %d", code, exitNo)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("snugd run after cancel = %d, want 0; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(shutdownBound):
		t.Fatal("snugd run did not stop")
	}
	if _, err := os.Stat(filepath.Join(dir, "snugd.sock")); !os.IsNotExist(err) {
		t.Errorf("ctl socket left behind: %v", err)
	}
}

// TestRunPortInUse: a clear error naming the port, exit 1.
func TestRunPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	var stderr testutil.LogBuffer
	code := cmdRun(t.Context(), env{stdout: io.Discard, stderr: &stderr, getenv: func(string) string { return "" }}, []string{"--data-dir", shortDir(t), "--port", strconv.Itoa(port)})
	if code != exitNo || !strings.Contains(stderr.String(), fmt.Sprintf("port %d", port)) || !strings.Contains(stderr.String(), "in use") {
		t.Errorf("snugd run on a busy port = %d, %q, want 1 and a message naming port %d", code, stderr.String(), port)
	}
}

// TestRunUsage: a usage error exits 2 and creates nothing, neither the
// data directory it names nor the default one (as root that is
// /var/lib/snugd, which the packaging test then refuses to purge).
func TestRunUsage(t *testing.T) {
	var stderr bytes.Buffer
	home := t.TempDir()
	e := env{stdout: io.Discard, stderr: &stderr, getenv: func(k string) string {
		if k == "HOME" || k == "XDG_DATA_HOME" {
			return home
		}
		return ""
	}}
	dir := filepath.Join(t.TempDir(), "never")
	for _, args := range [][]string{{"--nope"}, {"extra"}, {"--port", "80"}, {"--port", "70000"}} {
		for _, withDir := range []bool{false, true} {
			if withDir {
				args = append([]string{"--data-dir", dir}, args...)
			}
			stderr.Reset()
			if code := cmdRun(t.Context(), e, args); code != exitUsage {
				t.Errorf("snugd run %q = %d, want %d", args, code, exitUsage)
			}
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a usage error created %s: %v", dir, err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("a usage error created %v in the per-user data location", entries)
	}
}

// TestRunBinarySIGTERM builds snugd, runs it, and stops it with SIGTERM:
// it answers health, then exits 0 and removes its socket.
func TestRunBinarySIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "snugd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir, port := shortDir(t), freePort(t)
	cmd := exec.Command(bin, "run", "--data-dir", dir, "--port", strconv.Itoa(port))
	stdout, _ := cmd.StdoutPipe()
	var stderr testutil.LogBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "API on") {
		t.Fatalf("start line %q, %v; stderr:\n%s", line, err, stderr.String())
	}
	resp, err := health(port)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health = %v, %v", resp, err)
	}
	resp.Body.Close()
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("snugd after SIGTERM: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(shutdownBound):
		t.Fatalf("snugd did not exit within %v of SIGTERM", shutdownBound)
	}
	t.Logf("stopped %v after SIGTERM", time.Since(start))
	if _, err := os.Stat(filepath.Join(dir, "snugd.sock")); !os.IsNotExist(err) {
		t.Errorf("ctl socket left behind: %v", err)
	}
	if !strings.Contains(stderr.String(), "snugd stopped") {
		t.Errorf("no shutdown log line:\n%s", stderr.String())
	}
}
