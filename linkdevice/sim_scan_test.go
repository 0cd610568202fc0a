package linkdevice

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestScanSim: ScanSim links a running attempt on its current code,
// returns the simulator's rejection of another code, and refuses text
// that is not a code, and a session that does not exist, before writing
// anything.
func TestScanSim(t *testing.T) {
	dir := t.TempDir()
	s := startSim(t, dir, "--rotate=5s")
	if err := s.c.StartLink(t.Context()); err != nil {
		t.Fatal(err)
	}
	p, err := s.c.PollLink(t.Context())
	if err != nil || p.QR == nil {
		t.Fatalf("PollLink = %+v, %v", p, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, bad := range []string{"", "SNUGSIM1:", "SNUGSIM1:" + strings.Repeat("a", 32), "SNUGSIM2:" + strings.Repeat("A", 32), strings.Repeat("A", 41), p.QR.Payload + "0"} {
		if got, err := ScanSim(ctx, dir, bad); !errors.Is(err, ErrNotSimPayload) {
			t.Errorf("ScanSim(%q) = %q, %v; want ErrNotSimPayload", bad, got, err)
		}
		if _, err := os.Stat(filepath.Join(dir, simScanFile)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("ScanSim(%q) wrote the scan file: %v", bad, err)
		}
	}
	if got, err := ScanSim(ctx, filepath.Join(dir, "nope"), p.QR.Payload); !errors.Is(err, ErrNoSimSession) {
		t.Errorf("ScanSim(no such session) = %q, %v; want ErrNoSimSession", got, err)
	}
	if got, err := ScanSim(ctx, dir, "SNUGSIM1:"+strings.Repeat("0", 32)); err != nil || got != "rejected: not the current code" {
		t.Errorf("ScanSim(another code) = %q, %v; want the rejection", got, err)
	}
	if got, err := ScanSim(ctx, dir, " "+p.QR.Payload+"\n"); err != nil || got != "linked" {
		t.Fatalf("ScanSim(the current code) = %q, %v; want linked", got, err)
	}
	if p, err := s.c.PollLink(t.Context()); err != nil || p.State != LinkLinked || p.Token.IsZero() {
		t.Errorf("PollLink after the scan = %+v, %v; want linked with the token", p, err)
	}
	// No attempt runs now: nobody answers, and the scan is taken back.
	short, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	if _, err := ScanSim(short, dir, p.QR.Payload); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ScanSim without an attempt = %v, want the deadline", err)
	}
	if _, err := os.Stat(filepath.Join(dir, simScanFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unanswered scan was left behind: %v", err)
	}
}

// TestSessionDirOf: the supervisor's session directory is SessionDirOf
// of its StateDir, which snugd ctl demo scan relies on.
func TestSessionDirOf(t *testing.T) {
	state := t.TempDir()
	s, err := New(Config{Helpers: map[string]Spec{"sim": {Executable: "snugd"}}, Dir: t.TempDir(), StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	k := SessionKey{HelperID: "sim", AppID: "snug-demo", Slot: "chat"}
	if got, want := SessionDirOf(state, k), s.SessionDir(k); got != want {
		t.Errorf("SessionDirOf = %q, want %q", got, want)
	}
	if other := SessionDirOf(state, SessionKey{HelperID: "sim", AppID: "snug-demo", Slot: "chat2"}); other == s.SessionDir(k) {
		t.Error("two slots share a session directory")
	}
}

// FuzzSimScanPayload: the check ScanSim makes of pasted text agrees with
// the payload grammar, whatever the text; and what ScanSim refuses it
// never writes.
func FuzzSimScanPayload(f *testing.F) {
	for _, s := range []string{
		"SNUGSIM1:" + strings.Repeat("A", 32), "SNUGSIM1:" + strings.Repeat("0", 31) + "G",
		"SNUGSIM1:" + strings.Repeat("a", 32), "snugsim1:" + strings.Repeat("A", 32),
		"SNUGSIM1:" + strings.Repeat("A", 33), "SNUGSIM1:", "", " SNUGSIM1:" + strings.Repeat("F", 32) + "\n",
		"SNUGSIM1:" + strings.Repeat("Ａ", 32), "SNUGSIM1:" + strings.Repeat("A", 16) + "\x00" + strings.Repeat("A", 15),
	} {
		f.Add(s)
	}
	grammar := regexp.MustCompile(`^SNUGSIM1:[0-9A-F]{32}$`)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isSimPayload(s), grammar.MatchString(s); got != want {
			t.Fatalf("isSimPayload(%q) = %v, the grammar says %v", s, got, want)
		}
		if grammar.MatchString(strings.TrimSpace(s)) {
			return // ScanSim would write it: not here, with no simulator to read it
		}
		if _, err := ScanSim(t.Context(), dir, s); !errors.Is(err, ErrNotSimPayload) {
			t.Fatalf("ScanSim(%q) = %v, want ErrNotSimPayload", s, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("ScanSim(%q) left %v in the session directory", s, entries)
		}
	})
}
