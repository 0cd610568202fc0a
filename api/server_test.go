package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/errcode"

	"github.com/snug/snugd/internal/testutil"
)

// TestListenTCPLoopbackOnly: an address beyond loopback is refused before
// anything listens.
func TestListenTCPLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0", "192.168.1.10:0", "10.0.0.1:4747", "localhost:0", ":0", "127.0.0.2:0", "[::ffff:127.0.0.1]:0", "[fe80::1%lo]:0", "example.com:4747"} {
		if l, err := ListenTCP(addr); err == nil {
			l.Close()
			t.Errorf("ListenTCP(%q) = nil, want a refusal", addr)
		}
	}
	l, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatalf("ListenTCP(127.0.0.1:0) = %v", err)
	}
	defer l.Close()
	_, err = ListenTCP(l.Addr().String())
	port := l.Addr().(*net.TCPAddr).Port
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d", port)) || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("ListenTCP(in use) = %v, want an error naming port %d", err, port)
	}
}

// fakeListener claims a non-loopback address; nothing is ever dialled.
type fakeListener struct{ addr net.Addr }

func (f fakeListener) Accept() (net.Conn, error) { return nil, errors.New("fake") }
func (f fakeListener) Close() error              { return nil }
func (f fakeListener) Addr() net.Addr            { return f.addr }

// TestServeRefusesNonLoopback: Serve checks the listener again.
func TestServeRefusesNonLoopback(t *testing.T) {
	d, err := daemon.New(t.Context(), daemon.Config{DataDir: filepath.Join(t.TempDir(), "d")})
	if err != nil {
		t.Fatal(err)
	}
	runDaemon(t, d)
	defer d.Close()
	s := New(DepsOf(d), Options{})
	for _, a := range []net.Addr{
		&net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 4747},
		&net.TCPAddr{IP: net.IPv4zero, Port: 4747},
		&net.UnixAddr{Name: "/tmp/x", Net: "unix"},
	} {
		if err := s.Serve(t.Context(), fakeListener{a}, nil); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("Serve(%v) = %v, want a loopback refusal", a, err)
		}
	}
}

// TestCtlSocket: mode 0600, the routes without a token, and no Origin.
func TestCtlSocket(t *testing.T) {
	e := newEnv(t)
	fi, err := os.Stat(filepath.Join(e.dir, CtlSocket))
	if err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("ctl socket = %v, %v, want a 0600 socket", fi.Mode(), err)
	}
	if _, err := e.ctl.Status(t.Context()); err != nil {
		t.Errorf("Status over ctl without a token = %v", err)
	}
	withOrigin := DialCtl(e.dir, ClientOptions{})
	withOrigin.origin = webOrigin
	_, err = withOrigin.Status(t.Context())
	wantAPIError(t, err, 403, errcode.Forbidden)
}

// TestCtlStaleSocket: a dead daemon's socket is replaced; a live one, or a
// file that is not a socket, is left alone and refused.
func TestCtlStaleSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "snugd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, CtlSocket)

	// A live listener answers: refused.
	live, err := ListenCtl(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := live.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if l, err := ListenCtl(dir, nil); err == nil || !strings.Contains(err.Error(), "already answers") {
		if l != nil {
			l.Close()
		}
		t.Errorf("ListenCtl over a live socket = %v, want a refusal", err)
	}
	// The daemon died without unlinking it: replaced.
	live.(*peerListener).Listener.(*net.UnixListener).SetUnlinkOnClose(false)
	live.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale socket gone before the test: %v", err)
	}
	l, err := ListenCtl(dir, nil)
	if err != nil {
		t.Fatalf("ListenCtl over a stale socket = %v", err)
	}
	l.Close()
	// Not a socket: refused, never removed.
	if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := ListenCtl(dir, nil); err == nil {
		l.Close()
		t.Errorf("ListenCtl over a regular file = nil, want a refusal")
	}
	if b, _ := os.ReadFile(path); string(b) != "keep me" {
		t.Errorf("the regular file was touched")
	}
	// A directory others may enter is refused.
	os.Remove(path)
	os.Chmod(dir, 0o755)
	if l, err := ListenCtl(dir, nil); err == nil {
		l.Close()
		t.Errorf("ListenCtl in a 0755 directory = nil, want a refusal")
	}
}

// TestCtlPeerCredentials: a peer running as another user is closed
// unanswered, even when the file system would let it connect. Needs root
// (to run the peer as nobody) and Linux.
func TestCtlPeerCredentials(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs root on Linux")
	}
	if os.Getenv("SNUGD_TEST_PEER") != "" {
		return
	}
	e := newEnv(t)
	// Open the file system gate on purpose: only the peer check is left.
	os.Chmod(filepath.Dir(e.dir), 0o755)
	os.Chmod(e.dir, 0o711)
	os.Chmod(filepath.Join(e.dir, CtlSocket), 0o666)
	// Run a copy of this test binary as nobody (the build directory is
	// private).
	bin := filepath.Join(filepath.Dir(e.dir), "peer.test")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "-test.run=^TestCtlPeerHelper$")
	cmd.Env = append(os.Environ(), "SNUGD_TEST_PEER="+filepath.Join(e.dir, CtlSocket))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Run(); err != nil {
		t.Fatalf("peer as nobody: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "peer: refused") {
		t.Errorf("peer as nobody was not refused:\n%s", logs.String())
	}
	if !strings.Contains(e.logs.String(), "ctl connection refused") {
		t.Errorf("no refusal logged:\n%s", e.logs.String())
	}
	// The daemon's own user still gets in.
	if _, err := e.ctl.Status(t.Context()); err != nil {
		t.Errorf("Status as root = %v", err)
	}
}

// TestCtlPeerHelper is the peer of TestCtlPeerCredentials, run as nobody.
func TestCtlPeerHelper(t *testing.T) {
	path := os.Getenv("SNUGD_TEST_PEER")
	if path == "" {
		t.Skip("run by TestCtlPeerCredentials")
	}
	c := DialCtl(filepath.Dir(path), ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Status(ctx)
	switch {
	case errors.Is(err, ErrUnreachable):
		fmt.Println("peer: refused")
	case err == nil:
		fmt.Println("peer: answered")
	default:
		fmt.Println("peer: error", err)
	}
}

// TestGetNeverChangesState: every GET route of both channels leaves the
// database files byte for byte as they were.
func TestGetNeverChangesState(t *testing.T) {
	e := newEnv(t, seed{app: "app1", slot: "mail", status: "approved", hosts: []string{"api.mail.example"}})
	tok := e.pair("desktop", "")
	if _, err := e.host(tok, "").Status(t.Context()); err != nil { // the one last_seen_at write
		t.Fatal(err)
	}
	snapshot := func() map[string][]byte {
		m := map[string][]byte{}
		for _, n := range []string{"snugd.db", "snugd.db-wal"} {
			m[n], _ = os.ReadFile(filepath.Join(e.dir, n))
		}
		return m
	}
	before := snapshot()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	for _, rt := range routes() {
		if rt.method != http.MethodGet {
			continue
		}
		path := concrete(rt.path)
		for _, ch := range []*Client{e.host(tok, ""), e.ctl} {
			if rt.access == ctlOnly && ch != e.ctl {
				continue
			}
			rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			resp, err := ch.send(rctx, http.MethodGet, path, nil, "")
			if err == nil {
				resp.Body.Close()
			}
			rcancel()
		}
	}
	after := snapshot()
	for n := range before {
		if !bytes.Equal(before[n], after[n]) {
			t.Errorf("%s changed during GET requests", n)
		}
	}
}

// TestShutdownDrains: a request in flight when shutdown begins completes;
// Serve returns nil.
func TestShutdownDrains(t *testing.T) {
	dir, err := os.MkdirTemp("", "snugd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := daemon.New(t.Context(), daemon.Config{DataDir: filepath.Join(dir, "d")})
	if err != nil {
		t.Fatal(err)
	}
	runDaemon(t, d)
	defer d.Close()
	s := New(DepsOf(d), Options{Logger: slog.New(slog.DiscardHandler), DrainTimeout: 5 * time.Second})
	tcp, err := ListenTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := tcp.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, tcp, nil) }()
	// Send the request's headers and half its body, shut down, then finish.
	conn, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"name":"slow","surface":"desktop","challenge":"` + testutil.ChallengeOf(verifier) + `"}`
	fmt.Fprintf(conn, "POST /v1/hosts/pair HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", port, len(body), body[:10])
	time.Sleep(50 * time.Millisecond) // the server has read the headers
	cancel()
	<-s.stop // shutdown has begun
	fmt.Fprint(conn, body[10:])
	buf := make([]byte, 4096)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := conn.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Errorf("in-flight request during shutdown = %q, want 200", buf[:n])
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	if _, err := net.Dial("tcp", tcp.Addr().String()); err == nil {
		t.Errorf("the listener still accepts after shutdown")
	}
}

// TestClientVersionMismatch: the hook fires once when the daemon's
// version differs.
func TestClientVersionMismatch(t *testing.T) {
	e := newEnv(t)
	var calls []string
	c := DialCtl(e.dir, ClientOptions{Version: "test-2", OnVersionMismatch: func(d, c string) { calls = append(calls, d+" "+c) }})
	for range 3 {
		if _, err := c.Health(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if len(calls) != 1 || calls[0] != testVersion+" test-2" {
		t.Errorf("OnVersionMismatch calls = %q, want one (%s test-2)", calls, testVersion)
	}
	same := DialCtl(e.dir, ClientOptions{Version: testVersion, OnVersionMismatch: func(string, string) { t.Error("called for the same version") }})
	same.Health(t.Context())
}

func TestClientUnreachable(t *testing.T) {
	c := DialCtl(t.TempDir(), ClientOptions{})
	if _, err := c.Status(t.Context()); !errors.Is(err, ErrUnreachable) {
		t.Errorf("Status without a daemon = %v, want ErrUnreachable", err)
	}
}
