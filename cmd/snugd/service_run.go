package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/kardianos/service"
)

// runService runs the daemon, run, until ctx is done or the service manager
// stops it. snugd run calls it.
//
// In a terminal, and under systemd and launchd (which exec the binary and
// stop it with SIGTERM, which ctx already carries), it simply calls run. When
// the Windows service control manager started snugd, run goes through
// kardianos/service's protocol: ctx is cancelled on a stop request, and run's
// env writes stderr to snugd.log in the service's log directory, since a
// Windows service has no stderr.
func runService(ctx context.Context, e env, run func(context.Context, env) error) error {
	if serviceInteractive() {
		return run(ctx, e)
	}
	dir, err := hostPlaces(e.getenv).logDir(true)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("log directory: %w", err)
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "snugd.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	defer logFile.Close()
	e.stdout, e.stderr = logFile, logFile

	p := &scmProgram{ctx: ctx, e: e, run: run, exit: os.Exit, done: make(chan struct{})}
	s, err := service.New(p, &service.Config{Name: serviceName})
	if err != nil {
		return err
	}
	if err := s.Run(); err != nil {
		return err
	}
	return p.result()
}

// serviceInteractive reports whether snugd runs other than as a Windows
// service: in a terminal, or under systemd or launchd.
func serviceInteractive() bool {
	return runtime.GOOS != "windows" || service.Interactive()
}

// scmProgram is snugd as a kardianos/service program under the Windows
// service control manager.
type scmProgram struct {
	ctx  context.Context // the process's context; Start derives run's from it
	e    env
	run  func(context.Context, env) error
	exit func(code int) // os.Exit

	cancel   context.CancelFunc
	stopping atomic.Bool
	done     chan struct{} // closed when run has returned
	err      error         // run's result, written before done closes
}

// Start starts run in a goroutine that lives until run returns. If run ends
// before a stop was asked for, the process exits with status 1 so that the
// service control manager sees a failure and restarts snugd: kardianos's Run
// returns only on a stop request.
func (p *scmProgram) Start(service.Service) error {
	ctx, cancel := context.WithCancel(p.ctx)
	p.cancel = cancel
	go func() {
		p.err = p.run(ctx, p.e)
		close(p.done)
		if !p.stopping.Load() {
			fmt.Fprintf(p.e.stderr, "snugd: the daemon ended without a stop request: %v\n", p.err)
			p.exit(exitNo)
		}
	}()
	return nil
}

// Stop cancels run's context and waits for run to return, at most a little
// longer than the daemon's own shutdown bound.
func (p *scmProgram) Stop(service.Service) error {
	p.stopping.Store(true)
	p.cancel()
	select {
	case <-p.done:
		return nil
	case <-time.After(shutdownBound + 5*time.Second):
		return errors.New("the daemon did not stop in time")
	}
}

// result returns run's error once run has returned.
func (p *scmProgram) result() error {
	select {
	case <-p.done:
		return p.err
	default:
		return errors.New("the daemon did not stop in time")
	}
}
