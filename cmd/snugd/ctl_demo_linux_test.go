package main

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCtlDemoOnATerminal: on a terminal the demo asks its two questions
// there (the approval and the send's confirm) and takes the answers typed;
// each code is drawn on a cleared screen under the step it belongs to, and
// an independent decoder reads the drawing back as the payload the scan
// command beside it carries.
func TestCtlDemoOnATerminal(t *testing.T) {
	bin, dir, _ := startDemoDaemon(t)
	m, s := openPTY(t)
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 60, Col: 120}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "ctl", "--data-dir", dir, "demo")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	screen := &terminalScreen{m: m}
	has := func(want string) func(string) bool { return func(s string) bool { return strings.Contains(s, want) } }

	screen.until(t, "the approval question", has("approve snug-demo/chat as shown? [y/N]"))
	m.Write([]byte("y\n"))
	scanLine := regexp.MustCompile(`snugd ctl --data-dir \S+ demo scan (SNUGSIM1:[0-9A-F]{32})`)
	linked := has("linked as Simulated phone")
	for try := 1; ; try++ {
		shown := screen.until(t, "a scan command", func(s string) bool { return scanLine.MatchString(s) })
		all := scanLine.FindAllStringSubmatch(shown, -1)
		line, payload := all[len(all)-1][0], all[len(all)-1][1]
		fs := frames(shown)
		frame, ok := strings.CutPrefix(fs[len(fs)-1], demoLinkStep+"\n\n")
		if !ok {
			t.Fatalf("the code's screen does not start with its step:\n%q", fs[len(fs)-1])
		}
		if got := frameCode(t, frame); got != payload {
			t.Fatalf("the drawn code decodes to %q; the scan command beside it carries %q", got, payload)
		}
		code, out := runPrinted(t, bin, line)
		if code == 0 {
			break
		}
		if try == 3 {
			t.Fatalf("%s = %d\n%s", line, code, out)
		}
	}
	screen.until(t, "the link", linked)
	screen.until(t, "the send's question", has("allow this send? [y/N]"))
	m.Write([]byte("y\n"))
	screen.until(t, "the send", has(`→ 201: sent "Hello from the snugd demo" to t-alice`))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo on a terminal: %v\n%s", err, screen.buf.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not end after the send")
	}
}
