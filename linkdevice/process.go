package linkdevice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Command is one helper process to start: an absolute path the supervisor
// resolved from its table, fixed arguments, the session directory as the
// working directory, and the whole environment.
type Command struct {
	Path string
	Args []string
	Dir  string
	Env  []string
	// Confine is the confining command (Config.Confine): snugd's own
	// executable and the arguments that reach RunConfine. Nil starts the
	// helper directly, unconfined.
	Confine []string
	// StateDir is Config.StateDir, whose parent (snugd's data directory)
	// a confined helper must not reach.
	StateDir string
	// ConnectTCP are the TCP ports the helper's Spec declares.
	ConnectTCP []uint16
}

// Process is a started helper. Stdin, Stdout and Stderr are its three
// streams; Kill ends it at once (its process group where there is one);
// Wait returns when it has exited; Close releases the streams, after Wait.
type Process interface {
	Stdin() io.WriteCloser
	Stdout() io.Reader
	Stderr() io.Reader
	Kill()
	Wait() error
	Close()
}

// Starter starts helper processes. The zero Config uses ExecStarter; tests
// substitute one whose processes live inside a synctest bubble.
type Starter interface {
	Start(ctx context.Context, cmd Command) (Process, error)
}

// ExecStarter starts real processes with os/exec.
type ExecStarter struct{}

// Start starts cmd with three fresh pipes and no inherited descriptors,
// through its confining command when it has one.
func (ExecStarter) Start(_ context.Context, cmd Command) (Process, error) {
	if len(cmd.Confine) > 0 {
		return startConfined(cmd)
	}
	return startDirect(cmd)
}

// startDirect starts cmd itself, unconfined.
func startDirect(cmd Command) (Process, error) {
	_, p, err := startWith(cmd.Path, cmd.Args, cmd, nil)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// startWith starts path with args, cmd's directory and environment, three
// fresh pipes and extra as descriptors 3 and up.
func startWith(path string, args []string, cmd Command, extra []*os.File) (*exec.Cmd, *execProcess, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, nil, fmt.Errorf("pipe: %w", err)
	}
	c := exec.Command(path, args...)
	c.Dir, c.Env = cmd.Dir, cmd.Env
	if c.Env == nil {
		c.Env = []string{} // never snugd's own environment
	}
	c.Stdin, c.Stdout, c.Stderr = inR, outW, errW
	c.ExtraFiles = extra
	c.SysProcAttr = sysProcAttr()
	if err := c.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, nil, fmt.Errorf("start: %w", errors.Unwrap(err))
	}
	closeAll(inR, outW, errW) // the child's ends
	return c, &execProcess{cmd: c, in: inW, out: outR, err: errR}, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

type execProcess struct {
	cmd          *exec.Cmd
	in, out, err *os.File
	closeOnce    sync.Once

	// lifeline is snugd's end of a confined helper's lifeline (nil when
	// started directly): closing it ends the session's every process.
	lifeline *os.File
	conf     Confinement // what the confining command reached

	mu     sync.Mutex
	reaped bool // Wait returned: the pid (and group id) may be reused
}

// Pid is the process id of the helper (its subreaper when confined).
func (p *execProcess) Pid() int { return p.cmd.Process.Pid }

// Confinement reports what the helper's confinement reached.
func (p *execProcess) Confinement() Confinement { return p.conf }

// killGrace is how long a confined helper's subreaper has to end its
// session after its lifeline closes before its whole group is killed.
const killGrace = 3 * time.Second

func (p *execProcess) Stdin() io.WriteCloser { return p.in }
func (p *execProcess) Stdout() io.Reader     { return p.out }
func (p *execProcess) Stderr() io.Reader     { return p.err }

// Kill signals the helper's process group, unless the helper has been
// reaped: then its id may already name someone else's group. A confined
// helper's lifeline is cut instead, and its subreaper kills every process
// of the session, however far it went; should the subreaper itself not
// exit within killGrace, its group is killed.
func (p *execProcess) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return
	}
	if p.lifeline == nil {
		killTree(p.cmd.Process)
		return
	}
	p.lifeline.Close()
	time.AfterFunc(killGrace, func() { // ends after killGrace
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.reaped {
			killTree(p.cmd.Process)
		}
	})
}

// Wait waits for the helper to exit, then kills what is left of its
// process group (children it left behind) at once: while any member
// lives the group id stays reserved, so the signal reaches only them.
func (p *execProcess) Wait() error {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.reaped = true
	killGroup(p.cmd.Process)
	p.mu.Unlock()
	return err
}

func (p *execProcess) Close() {
	p.closeOnce.Do(func() {
		closeAll(p.in, p.out, p.err)
		if p.lifeline != nil {
			p.lifeline.Close()
		}
	})
}
