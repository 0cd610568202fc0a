package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

func TestRunServiceInTerminal(t *testing.T) {
	if !serviceInteractive() {
		t.Skip("running under a service manager")
	}
	var got env
	e := env{stdout: new(bytes.Buffer), stderr: new(bytes.Buffer), getenv: func(string) string { return "" }}
	want := errors.New("ran")
	err := runService(t.Context(), e, func(ctx context.Context, e env) error { got = e; return want })
	if err != want || got.stderr != e.stderr {
		t.Errorf("runService = %v (stderr kept: %v), want run called directly with the same env", err, got.stderr == e.stderr)
	}
}

func newSCMProgram(run func(context.Context, env) error) (*scmProgram, *bytes.Buffer, *atomic.Int32) {
	var log bytes.Buffer
	exited := new(atomic.Int32)
	exited.Store(-1)
	return &scmProgram{
		ctx:  context.Background(),
		e:    env{stdout: &log, stderr: &log},
		run:  run,
		exit: func(code int) { exited.Store(int32(code)) },
		done: make(chan struct{}),
	}, &log, exited
}

func TestSCMProgramStopCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _, exited := newSCMProgram(func(ctx context.Context, e env) error {
			<-ctx.Done()
			return nil
		})
		if err := p.Start(nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := p.Stop(nil); err != nil {
			t.Fatalf("Stop = %v, want nil", err)
		}
		if err := p.result(); err != nil {
			t.Errorf("result() = %v, want nil", err)
		}
		if c := exited.Load(); c != -1 {
			t.Errorf("exit(%d) called after a requested stop", c)
		}
	})
}

func TestSCMProgramExitsWhenDaemonDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, log, exited := newSCMProgram(func(ctx context.Context, e env) error {
			return errors.New("store: disk full")
		})
		if err := p.Start(nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if c := exited.Load(); c != exitNo {
			t.Errorf("exit code = %d, want %d so the service manager restarts snugd", c, exitNo)
		}
		if !strings.Contains(log.String(), "disk full") {
			t.Errorf("log = %q, want the daemon's error", log.String())
		}
	})
}

func TestSCMProgramStopIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		p, _, _ := newSCMProgram(func(ctx context.Context, e env) error {
			<-release // ignores ctx: a daemon stuck in its drain
			return nil
		})
		if err := p.Start(nil); err != nil {
			t.Fatal(err)
		}
		if err := p.Stop(nil); err == nil {
			t.Error("Stop of a stuck daemon = nil, want an error after the bound")
		}
		if err := p.result(); err == nil {
			t.Error("result() of a stuck daemon = nil, want an error")
		}
		close(release)
		synctest.Wait()
	})
}
