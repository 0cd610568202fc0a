package linkdevice

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// behavior is what one fake helper process does with its streams; it
// returns when the process "exits". Kill closes the streams under it.
type behavior func(stdin io.Reader, stdout, stderr io.Writer)

// fakeStarter starts in-memory processes (io.Pipe streams), so the whole
// supervisor runs inside a synctest bubble. behave picks the behavior of
// start number n (1-based).
type fakeStarter struct {
	behave func(n int) behavior

	mu     sync.Mutex
	starts []time.Time
	cmds   []Command
}

func (f *fakeStarter) Start(_ context.Context, cmd Command) (Process, error) {
	f.mu.Lock()
	f.starts = append(f.starts, time.Now())
	f.cmds = append(f.cmds, cmd)
	n := len(f.starts)
	f.mu.Unlock()
	p := &fakeProcess{done: make(chan struct{})}
	p.inR, p.inW = io.Pipe()
	p.outR, p.outW = io.Pipe()
	p.errR, p.errW = io.Pipe()
	b := f.behave(n)
	go func() { // the process: ends when its behavior returns
		b(p.inR, p.outW, p.errW)
		p.outW.Close()
		p.errW.Close()
		p.inR.Close()
		close(p.done)
	}()
	return p, nil
}

func (f *fakeStarter) startTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.starts...)
}

type fakeProcess struct {
	inR        *io.PipeReader
	inW        *io.PipeWriter
	outR, errR *io.PipeReader
	outW, errW *io.PipeWriter
	done       chan struct{}
}

func (p *fakeProcess) Stdin() io.WriteCloser { return p.inW }
func (p *fakeProcess) Stdout() io.Reader     { return p.outR }
func (p *fakeProcess) Stderr() io.Reader     { return p.errR }
func (p *fakeProcess) Wait() error           { <-p.done; return nil }
func (p *fakeProcess) Kill() {
	p.inR.CloseWithError(io.ErrClosedPipe)
	p.outW.CloseWithError(io.ErrClosedPipe)
	p.errW.CloseWithError(io.ErrClosedPipe)
}
func (p *fakeProcess) Close() {
	p.inW.Close()
	p.outR.Close()
	p.errR.Close()
}

// serving is a behavior that serves h until its input ends or shutdown
// is answered.
func serving(h Handler) behavior {
	return func(stdin io.Reader, stdout, _ io.Writer) {
		NewServer(stdin, stdout).Serve(context.Background(), h)
	}
}

// basicHandler answers initialize and shutdown; others via more.
func basicHandler(more Handler) Handler {
	return func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case MethodInitialize:
			if _, err := ParseInitialize(params); err != nil {
				return nil, err
			}
			return InitializeResult("fake", "1"), nil
		case MethodShutdown:
			return nil, nil
		}
		if more != nil {
			return more(ctx, method, params)
		}
		return nil, &RPCError{CodeMethodNotFound, "method not found"}
	}
}

// crashing initializes, then exits after d.
func crashing(d time.Duration) behavior {
	return func(stdin io.Reader, stdout, stderr io.Writer) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		NewServer(stdin, stdout).Serve(ctx, basicHandler(nil))
	}
}
