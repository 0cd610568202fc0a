//go:build linux

package linkdevice

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// confinedHarness runs a supervisor over this test binary as helper
// "sim" in mode, in a data directory laid out as snugd's is, through the
// test binary's own confining command unless confine is false.
type confinedHarness struct {
	*execHarness
	data string
}

func startConfinedHelper(t *testing.T, mode string, confine bool, env ...string) *confinedHarness {
	t.Helper()
	return startHelperWith(t, mode, func(cfg *Config) {
		if !confine {
			cfg.Confine = nil
		}
	}, env...)
}

// startHelperWith is startConfinedHelper with cfg adjusted by edit.
func startHelperWith(t *testing.T, mode string, edit func(*Config), env ...string) *confinedHarness {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	install := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(install, "helper")); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	for name, body := range map[string]string{"secrets.key": "master key", "snugd.db": "SQLite format 3", "config.json": "{}"} {
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(data, "helpers")
	other := filepath.Join(state, "sim", "other-session")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "session.json"), []byte(`{"tokenHash":"…"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Helpers:  map[string]Spec{"sim": {Executable: "helper"}},
		Dir:      install,
		StateDir: state,
		Env:      append([]string{helperModeEnv + "=" + mode, "PATH=/usr/bin:/bin"}, env...),
		Logger:   slog.New(slog.DiscardHandler),
		Confine:  []string{exe, "helper", ConfineCommand},
	}
	edit(&cfg)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	h := &execHarness{s: s, logs: &syncBuffer{}}
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("Run did not return 30 s after its ctx ended")
			}
		})
	}
	t.Cleanup(h.stop)
	return &confinedHarness{execHarness: h, data: data}
}

// needLandlock skips the test on a kernel without Landlock, saying so.
func needLandlock(t *testing.T, abi int) {
	t.Helper()
	if got := Probe().Landlock; got < abi {
		t.Skipf("this kernel offers Landlock ABI %d, the test needs %d (landlock_create_ruleset reports it; /sys/kernel/security/lsm lists landlock when enabled)", got, abi)
	}
}

// runProber starts the prober and returns what it could do.
func runProber(t *testing.T, confine bool) (map[string]string, *confinedHarness) {
	t.Helper()
	return runProberWith(t, func(c *Config) {
		if !confine {
			c.Confine = nil
		}
	}, nil)
}

// runProberWith starts the prober with cfg adjusted by edit, given the
// loopback port it will try.
func runProberWith(t *testing.T, edit func(*Config), declare func(*Config, uint16)) (map[string]string, *confinedHarness) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // accepts the prober's connection when it gets through; ends with ln
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	portNum := ln.Addr().(*net.TCPAddr).Port
	port := strconv.Itoa(portNum)
	h := startHelperWith(t, "prober", func(c *Config) {
		edit(c)
		if declare != nil {
			declare(c, uint16(portNum))
		}
	}, probePortEnv+"="+port, probePIDEnv+"="+strconv.Itoa(os.Getpid()))
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	h.s.Verify(ctx, simKey, testToken) // starts the session; the prober never answers

	var got map[string]string
	waitFor(t, probeFile, func() bool {
		b, err := os.ReadFile(filepath.Join(h.s.SessionDir(simKey), probeFile))
		return err == nil && json.Unmarshal(b, &got) == nil
	})
	return got, h
}

// hostile are the prober's attempts a confined helper must fail.
var hostile = []string{
	"read secrets.key", "read snugd.db", "read config.json", "list the data directory",
	"read another session", "write the data directory", "write another session",
	"write outside", "read /etc/passwd",
}

// TestConfinedHelperReachesOnlyItsSession: a helper started through the
// confining command can read and write its session directory and run the
// system's programs, and fails to read snugd's master key, database or
// configuration, to list the data directory, to read or write another
// session's directory, to write anywhere else, to connect out (it
// declares no port) and to signal snugd. The same helper unconfined does
// all of it, so the test fails if confinement is off.
func TestConfinedHelperReachesOnlyItsSession(t *testing.T) {
	needLandlock(t, 1)
	abi := Probe().Landlock
	// A descriptor snugd inherited without close-on-exec (from its own
	// parent) would pass Landlock by: open the master key so, here.
	leak := func(c *Config) {
		f, err := os.Open(filepath.Join(filepath.Dir(c.StateDir), "secrets.key"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0); err != nil {
			t.Fatal(err)
		}
	}
	got, h := runProberWith(t, leak, nil)
	for _, name := range hostile {
		if got[name] == "ok" {
			t.Errorf("confined helper: %s succeeded, want it refused", name)
		} else if !strings.Contains(got[name], "permission denied") {
			t.Errorf("confined helper: %s = %q, want permission denied", name, got[name])
		}
	}
	if fds := got["descriptors beyond 0-2"]; fds != "" {
		t.Errorf("confined helper holds descriptors %s beyond its three streams (an inherited one, the lifeline or the report leaked)", fds)
	}
	for _, name := range []string{"write own directory", "read own directory", "run a system program"} {
		if got[name] != "ok" {
			t.Errorf("confined helper: %s = %q, want ok", name, got[name])
		}
	}
	if abi >= 4 && got["connect"] == "ok" {
		t.Errorf("confined helper (ABI %d): connect succeeded, want it refused", abi)
	}
	if abi >= 6 && got["signal snugd"] == "ok" {
		t.Errorf("confined helper (ABI %d): signalling snugd succeeded, want it refused", abi)
	}
	for _, f := range []string{filepath.Join(h.data, "pwned"), filepath.Join(h.data, "helpers", "sim", "other-session", "pwned"), filepath.Join(filepath.Dir(h.data), "pwned")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("confined helper wrote %s", f)
		}
	}
	st := statusOf(t, h.s, simKey)
	if want := fromABI(abi); st.Confinement != want || h.s.Confinement() != want {
		t.Errorf("Status.Confinement = %+v, Supervisor.Confinement = %+v, want %+v", st.Confinement, h.s.Confinement(), want)
	}

	// The control: unconfined, the same helper reaches everything.
	open, h2 := runProber(t, false)
	for _, name := range append(hostile, "connect", "signal snugd") {
		if open[name] != "ok" {
			t.Errorf("unconfined helper: %s = %q, want ok (the probe itself is broken)", name, open[name])
		}
	}
	if c := h2.s.Confinement(); c.Confined() || c.Descendants {
		t.Errorf("unconfined Supervisor.Confinement = %+v, want none", c)
	}
}

// readPID reads a pid file the escaper's descendants write.
func readPID(t *testing.T, dir, name string) int {
	t.Helper()
	var pid int
	waitFor(t, name, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// alive reports whether pid runs (a zombie counts as gone).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(string(b[i+1:]), " Z")
}

// TestDescendantsEndWithTheSession: a helper that double-forks a child
// and starts another in its own session (setsid) leaves neither behind,
// whether its session ends by revoke (Unlink), by the helper's own exit,
// or by snugd's stop; each time within the stop budget.
func TestDescendantsEndWithTheSession(t *testing.T) {
	const budget = 12 * time.Second // exitGrace, killGrace and the subreaper's rounds
	for _, tc := range []struct {
		name, mode string
		end        func(h *confinedHarness)
	}{
		{"revoke", "escaper", func(h *confinedHarness) { h.s.Unlink(context.Background(), simKey) }},
		{"helper exits", "escaper-exits", func(*confinedHarness) {}},
		{"snugd stops", "escaper", func(h *confinedHarness) { h.stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startConfinedHelper(t, tc.mode, true)
			dir := h.s.SessionDir(simKey)
			go h.s.Verify(context.Background(), simKey, testToken) // starts the session
			pids := []int{readPID(t, dir, "double.pid"), readPID(t, dir, "setsid.pid")}
			t.Cleanup(func() {
				for _, p := range pids {
					syscall.Kill(p, syscall.SIGKILL)
				}
			})
			for _, p := range pids {
				if !alive(p) {
					t.Fatalf("descendant %d is not running before the session ends", p)
				}
			}
			start := time.Now()
			tc.end(h)
			for deadline := start.Add(budget); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if !alive(pids[0]) && !alive(pids[1]) {
					t.Logf("descendants gone %v after the session's end", time.Since(start).Round(time.Millisecond))
					return
				}
			}
			t.Errorf("descendants still running %v after the session's end: double-forked %v, setsid %v", budget, alive(pids[0]), alive(pids[1]))
		})
	}
}

// TestOrphansReparentedToSnugdEnd: with ReapOrphans the supervisor's
// process is the subreaper of its helpers' descendants, and what reaches
// it ends: an unconfined helper (no per-session subreaper) that exits
// leaving a double-forked and a setsid child, and a confined helper whose
// own subreaper is killed outright, leave nothing running. Without
// ReapOrphans, the first would leave both behind (the test of the
// mechanism is that they are gone).
func TestOrphansReparentedToSnugdEnd(t *testing.T) {
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) }) // process-wide: undo it
	for _, tc := range []struct {
		name, mode string
		confine    bool
		end        func(t *testing.T, h *confinedHarness)
	}{
		{"unconfined helper exits", "escaper-exits", false, func(*testing.T, *confinedHarness) {}},
		{"confined helper's subreaper killed", "escaper", true, func(t *testing.T, h *confinedHarness) {
			for _, p := range childrenOf(os.Getpid()) {
				if _, ok := h.s.pids.Load(p); ok {
					syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHelperWith(t, tc.mode, func(c *Config) {
				c.ReapOrphans = true
				if !tc.confine {
					c.Confine = nil
				}
			})
			dir := h.s.SessionDir(simKey)
			go h.s.Verify(context.Background(), simKey, testToken) // starts the session
			pids := []int{readPID(t, dir, "double.pid"), readPID(t, dir, "setsid.pid")}
			t.Cleanup(func() {
				for _, p := range pids {
					syscall.Kill(p, syscall.SIGKILL)
				}
			})
			start := time.Now()
			tc.end(t, h)
			for deadline := start.Add(12 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if !alive(pids[0]) && !alive(pids[1]) {
					return
				}
			}
			t.Errorf("orphans still running 12 s on: double-forked %v, setsid %v", alive(pids[0]), alive(pids[1]))
		})
	}
}

// TestConfinedHelperConnectsOnlyToDeclaredPorts: a helper whose Spec
// declares a TCP port may connect to it (and still reaches no file
// outside its session); one that declares none may not (the test above).
func TestConfinedHelperConnectsOnlyToDeclaredPorts(t *testing.T) {
	needLandlock(t, 4)
	got, _ := runProberWith(t, func(*Config) {}, func(c *Config, port uint16) {
		c.Helpers = map[string]Spec{"sim": {Executable: "helper", ConnectTCP: []uint16{port}}}
	})
	if got["connect"] != "ok" {
		t.Errorf("confined helper declaring the port: connect = %q, want ok", got["connect"])
	}
	for _, name := range hostile {
		if got[name] == "ok" {
			t.Errorf("confined helper declaring a port: %s succeeded, want it refused", name)
		}
	}
}
