package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the master (the test's side, what
// a terminal emulator holds) and the slave (the command's stdin or stdout).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	// Non-blocking, so the runtime polls it and a read deadline ends drain.
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	m := os.NewFile(uintptr(fd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open the slave: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// drain collects what the command side writes to the terminal, until
// stop, which writes a last line to the slave and returns everything
// before it.
func drain(m *os.File, s *os.File) (stop func() string) {
	var mu sync.Mutex
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := m.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	const end = "--su-drain-end--"
	return func() string {
		s.WriteString(end + "\n")
		for range 500 { // 5 s at most
			mu.Lock()
			got := strings.Contains(buf.String(), end)
			mu.Unlock()
			if got {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		m.SetReadDeadline(time.Now())
		<-done
		mu.Lock()
		defer mu.Unlock()
		out, _, _ := strings.Cut(buf.String(), end)
		return out
	}
}

// echoOff waits (bounded) until the terminal no longer echoes: the prompt
// has turned echo off and waits for a line.
func echoOff(t *testing.T, s *os.File) {
	t.Helper()
	for range 500 { // 5 s at most
		tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatalf("tcgetattr: %v", err)
		}
		if tio.Lflag&unix.ECHO == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the prompt never turned echo off")
}

// TestCredentialPromptPTY: on a terminal, credentials set prompts for each
// field (on stderr) and what is typed is not echoed.
func TestCredentialPromptPTY(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	td.ctl(t, "", "approve", "trader", "coinbase-exchange", "--yes")
	m, s := openPTY(t)
	stop := drain(m, s)
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runEnv(t, s, nil, "ctl", "--data-dir", td.dir, "credentials", "set", "trader", "coinbase-exchange")
		done <- result{code, out, errOut}
	}()
	typed := []string{"typed-key-4f1", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "typed-pass-9c2"}
	for _, v := range typed {
		echoOff(t, s)
		if _, err := m.WriteString(v + "\r"); err != nil {
			t.Fatal(err)
		}
		// Wait until the line is read. Typed then, the next line is read
		// with echo off either way: still off from this read, or turned
		// off by the next prompt, which echoOff waits for.
		for range 500 {
			if n, err := unix.IoctlGetInt(int(s.Fd()), unix.TIOCINQ); err != nil || n == 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("credentials set did not finish")
	}
	screen := stop()
	if r.code != exitOK || !strings.Contains(r.out, "stored 3 values") || strings.Contains(r.out, "not connected") {
		t.Errorf("credentials set on a terminal = %d, %q, %q", r.code, r.out, r.errOut)
	}
	for _, want := range []string{"typing is not shown", "API key (api_key): ", "Passphrase (passphrase): "} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("the prompt lacks %q: %q", want, r.errOut)
		}
	}
	for _, v := range typed {
		if strings.Contains(screen+r.out+r.errOut, v) {
			t.Errorf("a typed value was echoed or printed: screen %q", screen)
		}
	}
}

// TestCtlOutputOnPTY: ctl's output on a terminal. export - refuses to pour
// a database onto one; the import report and apps read as text.
func TestCtlOutputOnPTY(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	m, s := openPTY(t)
	stop := drain(m, s)
	var errb bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: s, stderr: &errb, getenv: func(string) string { return "" }}
	if code := dispatch(t.Context(), e, []string{"ctl", "--data-dir", td.dir, "export", "-"}); code != exitUsage || !strings.Contains(errb.String(), "standard output is a terminal") {
		t.Errorf("export - to a terminal = %d, %q; want a refusal", code, errb.String())
	}
	backup := t.TempDir() + "/backup.db"
	if code, _, errOut := td.ctl(t, "", "export", backup); code != exitOK {
		t.Fatalf("export = %d, %q", code, errOut)
	}
	errb.Reset()
	if code := dispatch(t.Context(), e, []string{"ctl", "--data-dir", td.dir, "import", backup}); code != exitOK {
		t.Errorf("import = %d, %q", code, errb.String())
	}
	if code := dispatch(t.Context(), e, []string{"ctl", "--data-dir", td.dir, "apps"}); code != exitOK {
		t.Errorf("apps = %d, %q", code, errb.String())
	}
	screen := stop()
	for _, want := range []string{"imported backup.db:", "APP", "trader"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal shows no %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "SQLite format 3") {
		t.Error("a database reached the terminal")
	}
	for _, r := range screen {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			t.Errorf("the terminal got control character %U", r)
			break
		}
	}
}
