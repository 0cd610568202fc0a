package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/internal/testutil"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/pairing"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/linkdevice"
	"golang.org/x/sys/unix"
)

// startLinkDaemon starts the in-process daemon with main's helper table
// and standing rule, the helper being this test binary run as snugd
// helper sim (TestMain), codes rotating every rotate; app1's sim row is
// approved in slot chat.
func startLinkDaemon(t *testing.T, rotate string) (*testDaemon, *linkdevice.Supervisor) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	table := helperTable(filepath.Base(exe))
	sim := table["sim"]
	sim.Args = append(append([]string{}, sim.Args...), "--rotate", rotate, "--codes", "100", "--label", "Test phone")
	table["sim"] = sim
	var target atomic.Pointer[daemon.Daemon]
	sup, err := linkdevice.New(linkdevice.Config{
		Helpers: table, Dir: filepath.Dir(exe), StateDir: filepath.Join(t.TempDir(), "helpers"),
		Env: []string{simHelperEnv + "=1"},
		OnEvent: func(ev linkdevice.Event) {
			if d := target.Load(); d != nil {
				d.Devices().HelperEvent(ev)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load()
	if err != nil {
		t.Fatal(err)
	}
	td := startDaemonVersion(t, buildVersion(), func(c *daemon.Config) {
		c.Helpers, c.Registry, c.StandingTargets = sup, reg, standingTargets(reg)
	})
	target.Store(td.d)
	req, _ := json.Marshal(map[string]any{
		"slot": "chat", "provider": map[string]any{"name": "Snug Simulator"}, "kind": "linked_device",
		"fields":           []any{map[string]any{"key": "helper_token", "label": "Helper token", "type": "secret"}},
		"declaredApiHosts": []any{"sim.sidecar.invalid"},
	})
	if _, err := td.d.Proposers().ProposeUser(t.Context(), "app1", "chat", req); err != nil {
		t.Fatal(err)
	}
	if _, err := td.d.Grants().Approve(t.Context(), "app1", "chat"); err != nil {
		t.Fatal(err)
	}
	return td, sup
}

// terminalScreen collects what a pseudo-terminal shows.
type terminalScreen struct {
	m   *os.File
	buf bytes.Buffer
}

// until reads the terminal until ok holds of everything shown so far.
func (s *terminalScreen) until(t *testing.T, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	chunk := make([]byte, 64<<10)
	for !ok(s.buf.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %s; it shows:\n%s", what, s.buf.String())
		}
		s.m.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := s.m.Read(chunk)
		s.buf.Write(bytes.ReplaceAll(chunk[:n], []byte("\r\n"), []byte("\n")))
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read the terminal: %v", err)
		}
	}
	return s.buf.String()
}

// frames splits what the terminal showed at each clear of the screen.
func frames(shown string) []string {
	parts := strings.Split(shown, "\x1b[H\x1b[2J")
	return parts[1:]
}

// frameCode decodes the code a frame draws ("" while none decodes).
func frameCode(t *testing.T, frame string) string {
	code, _, ok := strings.Cut(frame, "\n\n")
	if !ok {
		return ""
	}
	return decodeHalfBlocks(t, code+"\n")
}

// TestCtlPairLinkOnATerminal: snugd ctl pair link on a pseudo-terminal
// draws a code that an independent decoder (gozxing) reads back as the
// helper's payload, redraws a new code when the helper rotates it, and
// ends "linked as <label>" once the code is scanned; the slot then holds
// the token with linkVerifiedAt.
//
// conformance: P3-C12.12-17
func TestCtlPairLinkOnATerminal(t *testing.T) {
	td, sup := startLinkDaemon(t, "2s")
	m, s := openPTY(t)
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 60, Col: 120}); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	e := env{stdin: s, stdout: s, stderr: &errb, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(t.Context(), e, []string{"ctl", "--data-dir", td.dir, "pair", "link", "app1", "chat"})
	}()

	screen := &terminalScreen{m: m}
	var first string
	screen.until(t, "a code that decodes", func(shown string) bool {
		for _, f := range frames(shown) {
			if first = frameCode(t, f); first != "" {
				return true
			}
		}
		return false
	})
	if !strings.HasPrefix(first, "SNUGSIM1:") {
		t.Fatalf("the drawn code decodes to %q, want the simulator's payload", first)
	}
	var second string
	shown := screen.until(t, "a rotated code", func(shown string) bool {
		fs := frames(shown)
		second = frameCode(t, fs[len(fs)-1])
		return second != "" && second != first
	})
	if !strings.Contains(shown, "This code changes in") || !strings.Contains(shown, "Ctrl-C") {
		t.Errorf("the screen does not show the time left and how to cancel:\n%s", shown)
	}
	// Scan the newest code the screen decodes to. The helper links on its
	// current code only, so a scan that lost the race with a rotation (a
	// loaded machine) is repeated on the code drawn after it, a few times.
	key := linkdevice.SessionKey{HelperID: "sim", AppID: "app1", Slot: "chat"}
	linked := func(shown string) bool { return strings.Contains(shown, "linked as Test phone") }
	for try := 1; ; try++ {
		drawn := len(frames(screen.buf.String()))
		if err := os.WriteFile(filepath.Join(sup.SessionDir(key), "scan"), []byte(second), 0o600); err != nil {
			t.Fatal(err)
		}
		shown := screen.until(t, "linked as", func(shown string) bool {
			if linked(shown) {
				return true
			}
			fs := frames(shown)
			return len(fs) > drawn && frameCode(t, fs[len(fs)-1]) != ""
		})
		if linked(shown) {
			break
		}
		if try == 5 {
			t.Fatalf("five scans of the drawn code did not link; the terminal shows:\n%s", shown)
		}
		fs := frames(shown)
		second = frameCode(t, fs[len(fs)-1])
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("pair link exit %d, stderr %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("pair link did not return after the link")
	}
	st, ok, err := td.d.Grants().ConnectionState(t.Context(), "app1", "chat")
	if err != nil || !ok || st.LinkVerifiedAt == nil || st.Status != grants.ConnConnected {
		t.Fatalf("connection state after the link = %+v, %v; want connected with linkVerifiedAt", st, err)
	}
}

// TestCtlPairLinkCancel: Ctrl-C (the command's context ending) cancels the
// flow.
func TestCtlPairLinkCancel(t *testing.T) {
	td, _ := startLinkDaemon(t, "20s")
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb testutil.LogBuffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	hs := td.d.Hints(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, e, []string{"ctl", "--data-dir", td.dir, "pair", "link", "app1", "chat"})
	}()
	var flowID string
	for flowID == "" {
		select {
		case h := <-hs:
			if h.Type == hints.FlowUpdated {
				flowID = h.ID
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no flow started")
		}
	}
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), "Scan the code"); {
		if time.Now().After(deadline) {
			t.Fatalf("the command never drew a code: %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != exitNo || !strings.Contains(out.String(), "cancelled") {
		t.Fatalf("cancelled pair link = %d, %q %q", code, out.String(), errb.String())
	}
	f, err := td.d.Pairing().Flow(context.Background(), flowID)
	if err != nil || f.State != pairing.FlowFailed || f.Message != "the link was cancelled" {
		t.Fatalf("flow after Ctrl-C = %+v, %v", f, err)
	}
}

// decodeHalfBlocks decodes the code a dark terminal shows from a
// half-block drawing with gozxing; "" when it does not decode.
func decodeHalfBlocks(t *testing.T, drawing string) string {
	t.Helper()
	img, ok := testutil.HalfBlocksImage(drawing)
	if !ok {
		return "" // not (yet) a whole drawing
	}
	text, err := testutil.DecodeQR(img)
	if err != nil {
		return ""
	}
	return text
}
