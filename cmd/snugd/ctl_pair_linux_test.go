package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReadSetupTokenHidden: on a terminal the token is read with echo off,
// so what the terminal shows never holds it, and the prompt goes to
// stderr.
func TestReadSetupTokenHidden(t *testing.T) {
	master, slave := openPTY(t)
	const token = "aGlkZGVuLXRva2VuLWNhbmFyeQ=="
	var stderr bytes.Buffer
	type result struct {
		s   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := readSetupToken(env{stdin: slave, stderr: &stderr})
		done <- result{s, err}
	}()
	// Type only once echo is off, as a person would after the prompt; a
	// token typed before that would be echoed by the terminal itself.
	deadline := time.Now().Add(10 * time.Second)
	for {
		tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if tio.Lflag&unix.ECHO == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("echo was never turned off")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := master.WriteString(token + "\n"); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("readSetupToken did not return")
	}
	if r.err != nil || strings.TrimSpace(r.s) != token {
		t.Fatalf("readSetupToken = %q, %v", r.s, r.err)
	}
	// Whatever the terminal would show now.
	master.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	shown := make([]byte, 4096)
	n, err := master.Read(shown)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Logf("read the terminal: %v", err)
	}
	if strings.Contains(string(shown[:n]), token) {
		t.Errorf("the terminal echoed the token: %q", shown[:n])
	}
	if !strings.Contains(stderr.String(), "Paste the SimpleFIN setup token") || strings.Contains(stderr.String(), token) {
		t.Errorf("stderr = %q; want the prompt and not the token", stderr.String())
	}
	if tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); err != nil || tio.Lflag&unix.ECHO == 0 {
		t.Errorf("echo was not restored: %v", err)
	}
}
