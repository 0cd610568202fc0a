package linkdevice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

var simKey = SessionKey{HelperID: "sim", AppID: "app-1", Slot: "chat"}

// newFakeSupervisor builds a supervisor over a fakeStarter with one
// registered helper "sim" whose executable exists in a temp dir.
func newFakeSupervisor(t *testing.T, f *fakeStarter, log *slog.Logger) *Supervisor {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "snugd-helper-sim"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{
		Helpers:  map[string]Spec{"sim": {Executable: "snugd-helper-sim", Args: []string{"--x"}}},
		Dir:      dir,
		StateDir: filepath.Join(t.TempDir(), "helpers"),
		Logger:   log,
		Starter:  f,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runSupervisor runs s until the test's bubble ends it; stop cancels Run
// and waits for it.
func runSupervisor(t *testing.T, s *Supervisor) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	synctest.Wait()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil", err)
		}
	}
}

func statusOf(t *testing.T, s *Supervisor, k SessionKey) Status {
	t.Helper()
	for _, st := range s.Status() {
		if st.SessionKey == k {
			return st
		}
	}
	t.Fatalf("no status for %v", k)
	return Status{}
}

// offsets returns each time as its distance from the first.
func offsets(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(ts[0])
	}
	return out
}

// The restart backoff: 1, 2, 4, 8, 16 s, then failed; a failed helper
// refuses at once and a new StartLink (a user's gesture) restarts it.
func TestSupervisorBackoffAndBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{behave: func(int) behavior { return crashing(0) }}
		s := newFakeSupervisor(t, f, nil)
		stop := runSupervisor(t, s)
		defer stop()

		_, err := s.PollLink(context.Background(), simKey)
		if err == nil {
			t.Fatal("PollLink on a helper that exits at once succeeded")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		want := []time.Duration{0, 1 * time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 31 * time.Second}
		if got := offsets(f.startTimes()); !slices.Equal(got, want) {
			t.Errorf("start offsets = %v, want %v", got, want)
		}
		st := statusOf(t, s, simKey)
		if st.State != StateFailed || st.Restarts != 5 || st.LastError != "the helper exited" {
			t.Errorf("status = %+v, want failed after 5 restarts, \"the helper exited\"", st)
		}
		wantSum := []HelperSummary{{HelperID: "sim", State: StateFailed, Sessions: 1, Restarts: 5, LastError: "the helper exited"}}
		if got := s.HelperStatus(); !slices.Equal(got, wantSum) {
			t.Errorf("HelperStatus = %+v, want %+v", got, wantSum)
		}
		if _, err := s.PollLink(context.Background(), simKey); !errors.Is(err, ErrHelperFailed) {
			t.Errorf("PollLink on a failed helper = %v, want ErrHelperFailed", err)
		}
		f.behave = func(int) behavior { return serving(basicHandler(linkHandler)) }
		if err := s.StartLink(context.Background(), simKey); err != nil {
			t.Errorf("StartLink after failure = %v, want a fresh start", err)
		}
		if st := statusOf(t, s, simKey); st.State != StateRunning || st.Restarts != 0 {
			t.Errorf("status after StartLink = %+v, want running with a new budget", st)
		}
	})
}

// 60 s of healthy running earns the whole budget back.
func TestSupervisorBudgetResetsAfterHealthyRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{behave: func(n int) behavior {
			if n == 3 {
				return crashing(61 * time.Second)
			}
			return crashing(0)
		}}
		s := newFakeSupervisor(t, f, nil)
		stop := runSupervisor(t, s)
		defer stop()
		s.PollLink(context.Background(), simKey)
		time.Sleep(time.Hour)
		synctest.Wait()
		// #1 0 crash, #2 1 crash, #3 3 runs 61 s → healthy: wait 1, not 4.
		want := []time.Duration{0, 1, 3, 65, 67, 71, 79, 95}
		for i := range want {
			want[i] *= time.Second
		}
		if got := offsets(f.startTimes()); !slices.Equal(got, want) {
			t.Errorf("start offsets = %v, want %v", got, want)
		}
		if st := statusOf(t, s, simKey); st.State != StateFailed || st.Restarts != 7 {
			t.Errorf("status = %+v, want failed after 7 restarts", st)
		}
	})
}

// Shutdown: the helper gets shutdown, exits, and is never restarted, even
// when it exits without answering; later calls are refused.
func TestSupervisorNoRestartDuringShutdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    behavior
	}{
		{"answers shutdown", serving(basicHandler(linkHandler))},
		{"exits on shutdown without answering", serving(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			if method == MethodShutdown {
				<-ctx.Done() // never answers; the kill ends it
				return nil, ctx.Err()
			}
			return basicHandler(linkHandler)(ctx, method, params)
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeStarter{behave: func(int) behavior { return tc.b }}
				s := newFakeSupervisor(t, f, nil)
				stop := runSupervisor(t, s)
				if _, err := s.PollLink(context.Background(), simKey); err != nil {
					t.Fatalf("PollLink = %v", err)
				}
				stop()
				time.Sleep(time.Minute)
				if n := len(f.startTimes()); n != 1 {
					t.Errorf("starts = %d, want 1: restarted during shutdown", n)
				}
				if st := statusOf(t, s, simKey); st.State != StateStopped {
					t.Errorf("state = %s, want stopped", st.State)
				}
				if _, err := s.PollLink(context.Background(), simKey); !errors.Is(err, ErrStopped) {
					t.Errorf("PollLink after shutdown = %v, want ErrStopped", err)
				}
			})
		})
	}
}

// A helper that never answers a request: the call ends at the method's
// timeout, the helper is killed and restarted after 1 s.
func TestSupervisorHungHelper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{behave: func(n int) behavior {
			return serving(basicHandler(func(ctx context.Context, method string, _ json.RawMessage) (any, error) {
				<-ctx.Done() // silence until the session ends
				return nil, ctx.Err()
			}))
		}}
		s := newFakeSupervisor(t, f, nil)
		stop := runSupervisor(t, s)
		defer stop()
		start := time.Now()
		_, err := s.Do(context.Background(), simKey, Request{Method: "GET", PathAndQuery: "/v1/threads", Token: testToken})
		if !errors.Is(err, ErrSessionClosed) || !errors.Is(err, ErrHung) {
			t.Errorf("Do on a silent helper = %v, want ErrSessionClosed wrapping ErrHung", err)
		}
		if d := time.Since(start); d != Timeout(MethodRequest) {
			t.Errorf("Do returned after %v, want the request timeout %v", d, Timeout(MethodRequest))
		}
		synctest.Wait()
		if st := statusOf(t, s, simKey); st.State != StateBackoff || st.LastError != "the helper did not answer in time" {
			t.Errorf("status = %+v, want backoff, \"the helper did not answer in time\"", st)
		}
		// While it waits to restart, calls are refused at once.
		if _, err := s.Do(context.Background(), simKey, Request{Method: "GET", PathAndQuery: "/", Token: testToken}); !errors.Is(err, ErrHelperDown) {
			t.Errorf("Do during backoff = %v, want ErrHelperDown", err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(f.startTimes()); n != 2 {
			t.Errorf("starts = %d, want 2", n)
		}
	})
}

// A helper that dies in the middle of a request fails that request, not
// the caller; it is restarted.
func TestSupervisorCrashMidRequestFake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{behave: func(n int) behavior {
			return func(stdin io.Reader, stdout, stderr io.Writer) {
				lines := newLineReader(stdin, MaxLine)
				for {
					line, err := lines.next()
					if err != nil {
						return
					}
					var m rpcMessage
					json.Unmarshal(line, &m)
					if m.Method == MethodRequest {
						return // "exit" while the request is in flight
					}
					io.WriteString(stdout, `{"jsonrpc":"2.0","id":`+string(*m.ID)+`,"result":{"protocolVersion":1}}`+"\n")
				}
			}
		}}
		s := newFakeSupervisor(t, f, nil)
		stop := runSupervisor(t, s)
		defer stop()
		_, err := s.Do(context.Background(), simKey, Request{Method: "POST", PathAndQuery: "/v1/threads/t-bob/messages", Token: testToken})
		if !errors.Is(err, ErrSessionClosed) {
			t.Errorf("Do on a helper that dies mid-request = %v, want ErrSessionClosed", err)
		}
	})
}

// Unknown helpers, a supervisor not running, and the session directory.
func TestSupervisorRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{behave: func(int) behavior { return serving(basicHandler(linkHandler)) }}
		s := newFakeSupervisor(t, f, nil)
		stop := runSupervisor(t, s)
		defer stop()
		if got := s.HelperStatus(); len(got) != 1 || got[0].State != StateIdle || got[0].Sessions != 0 {
			t.Errorf("HelperStatus before any session = %+v, want sim idle", got)
		}
		if _, err := s.PollLink(context.Background(), SessionKey{HelperID: "whatsapp", AppID: "a", Slot: "s"}); !errors.Is(err, ErrUnknownHelper) {
			t.Errorf("PollLink of an unregistered helper = %v, want ErrUnknownHelper", err)
		}
		if _, err := s.PollLink(context.Background(), simKey); err != nil {
			t.Fatal(err)
		}
		cmd := f.cmds[0]
		if cmd.Dir != s.SessionDir(simKey) || !slices.Equal(cmd.Args, []string{"--x"}) || filepath.Base(cmd.Path) != "snugd-helper-sim" || len(cmd.Env) != 0 {
			t.Errorf("command = %+v, want the table's executable in the session dir with an empty environment", cmd)
		}
		fi, err := os.Stat(cmd.Dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("session dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
		}
		if strings.Contains(cmd.Dir, simKey.AppID) {
			t.Errorf("session dir %s names the app id", cmd.Dir)
		}
	})
}

func TestNewRefusesPaths(t *testing.T) {
	for _, exe := range []string{"../sim", "/usr/bin/sim", `..\sim`, "a/b", "", ".", "..", "-sim", "c:sim"} {
		_, err := New(Config{Helpers: map[string]Spec{"sim": {Executable: exe}}, Dir: "/opt/snugd", StateDir: "/var/lib/snugd/helpers"})
		if err == nil {
			t.Errorf("New(executable %q) = nil, want an error", exe)
		}
	}
	for _, id := range []string{"Sim", "sim.x", "", "-sim", "sim_1"} {
		_, err := New(Config{Helpers: map[string]Spec{id: {Executable: "sim"}}, Dir: "/opt/snugd", StateDir: "/var/lib/snugd/helpers"})
		if err == nil {
			t.Errorf("New(helper id %q) = nil, want an error", id)
		}
	}
	if _, err := New(Config{Helpers: map[string]Spec{"sim": {Executable: "sim"}}, Dir: "opt", StateDir: "/x"}); err == nil {
		t.Error("New with a relative Dir = nil, want an error")
	}
}

// A helper executable that is missing, or writable by others, never runs.
func TestSupervisorResolve(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Config{Helpers: map[string]Spec{"sim": {Executable: "h"}}, Dir: dir, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, why := s.resolve(Spec{Executable: "h"}); why != "the helper executable is missing" {
		t.Errorf("resolve(missing) = %q", why)
	}
	p := filepath.Join(dir, "h")
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	os.Chmod(p, 0o777)
	if _, why := s.resolve(Spec{Executable: "h"}); why != "the helper executable is writable by others" {
		t.Errorf("resolve(0777) = %q", why)
	}
	os.Chmod(p, 0o644)
	if _, why := s.resolve(Spec{Executable: "h"}); why != "the helper executable is not executable" {
		t.Errorf("resolve(0644) = %q", why)
	}
	os.Chmod(p, 0o755)
	if got, why := s.resolve(Spec{Executable: "h"}); got != p || why != "" {
		t.Errorf("resolve(ok) = %q, %q", got, why)
	}
}

// Link notifications reach OnEvent with the session's key.
func TestSupervisorEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []Event
		f := &fakeStarter{behave: func(int) behavior { return qrBehavior() }}
		s := newFakeSupervisor(t, f, nil)
		s.cfg.OnEvent = func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() }
		stop := runSupervisor(t, s)
		defer stop()
		if err := s.StartLink(context.Background(), simKey); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		var qr *Event
		for i := range got {
			if got[i].Kind == EventQR {
				qr = &got[i]
			}
		}
		if qr == nil || qr.SessionKey != simKey || qr.QR.Payload != "FAKE:1" {
			t.Errorf("events = %+v, want a QR event for %v", got, simKey)
		}
	})
}

// qrBehavior answers link.start and sends one code.
func qrBehavior() behavior {
	return func(stdin io.Reader, stdout, _ io.Writer) {
		srv := NewServer(stdin, stdout)
		srv.Serve(context.Background(), basicHandler(func(ctx context.Context, method string, p json.RawMessage) (any, error) {
			if method == MethodLinkStart {
				q := QR{Payload: "FAKE:1", ExpiresAt: time.Now().Add(20 * time.Second)}
				srv.Notify(NotifyQR, q)
				return PollResult(Poll{State: LinkQR, QR: &q}), nil
			}
			return linkHandler(ctx, method, p)
		}))
	}
}

var testToken = Token{strings.Repeat("A", 43)}

// linkHandler answers link.* with an idle state.
func linkHandler(_ context.Context, method string, _ json.RawMessage) (any, error) {
	switch method {
	case MethodLinkStart, MethodLinkPoll:
		return PollResult(Poll{State: LinkIdle}), nil
	}
	return nil, &RPCError{CodeMethodNotFound, "method not found"}
}

// The poll that carries the token is not dropped when its caller gives up
// mid-call: the token still comes back, once.
// conformance: P3-C12.12-17
func TestSupervisorPollSurvivesCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		f := &fakeStarter{behave: func(int) behavior {
			return serving(basicHandler(func(ctx context.Context, method string, p json.RawMessage) (any, error) {
				if method == MethodLinkPoll {
					<-release
					return PollResult(Poll{State: LinkLinked, Label: "P", Token: testToken}), nil
				}
				return linkHandler(ctx, method, p)
			}))
		}}
		s := newFakeSupervisor(t, f, nil)
		stop := runSupervisor(t, s)
		defer stop()
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan Poll, 1)
		go func() { p, _ := s.PollLink(ctx, simKey); got <- p }()
		synctest.Wait()
		cancel()
		synctest.Wait()
		close(release)
		if p := <-got; p.Token != testToken {
			t.Errorf("PollLink after its caller gave up = %+v, want the token", p)
		}
	})
}

// At most maxSessions helper processes run at once.
func TestSupervisorSessionCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{behave: func(int) behavior { return serving(basicHandler(linkHandler)) }}
		s := newFakeSupervisor(t, f, nil)
		stop := runSupervisor(t, s)
		defer stop()
		for i := range maxSessions {
			if _, err := s.PollLink(context.Background(), SessionKey{HelperID: "sim", AppID: "app", Slot: fmt.Sprint(i)}); err != nil {
				t.Fatalf("session %d: %v", i, err)
			}
		}
		if _, err := s.PollLink(context.Background(), SessionKey{HelperID: "sim", AppID: "app", Slot: "one-more"}); !errors.Is(err, ErrTooMany) {
			t.Errorf("session %d = %v, want ErrTooMany", maxSessions+1, err)
		}
		if _, err := s.PollLink(context.Background(), SessionKey{HelperID: "sim", AppID: "app", Slot: "0"}); err != nil {
			t.Errorf("an existing session = %v, want served", err)
		}
	})
}

// A helper silent from the start: initialize times out after 10 s, the
// caller gets an error, the helper is restarted.
func TestSupervisorSilentInitialize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeStarter{behave: func(int) behavior {
			return func(stdin io.Reader, _, _ io.Writer) { io.Copy(io.Discard, stdin) }
		}}
		s := newFakeSupervisor(t, f, nil)
		stop := runSupervisor(t, s)
		defer stop()
		start := time.Now()
		if _, err := s.PollLink(context.Background(), simKey); !errors.Is(err, ErrHelperDown) {
			t.Errorf("PollLink = %v, want ErrHelperDown", err)
		}
		if d := time.Since(start); d != Timeout(MethodInitialize) {
			t.Errorf("PollLink returned after %v, want the initialize timeout", d)
		}
		if st := statusOf(t, s, simKey); st.LastError != "the helper did not answer in time" || st.Restarts != 1 {
			t.Errorf("status = %+v", st)
		}
	})
}
