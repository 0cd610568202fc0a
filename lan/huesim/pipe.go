package huesim

import (
	"context"
	"errors"
	"net"
	"sync"
)

// Pipe is an in-memory network with one listener: Dial hands the listener
// one end of a net.Pipe. It carries a Sim inside a testing/synctest bubble,
// where blocking on a real socket would stop the fake clock.
type Pipe struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

var errClosed = errors.New("pipe closed")

// NewPipe returns an open Pipe.
func NewPipe() *Pipe {
	return &Pipe{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept waits for the next Dial.
func (p *Pipe) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, errClosed
	}
}

// Close closes the listener; later Dials fail.
func (p *Pipe) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

// Addr is a placeholder address.
func (p *Pipe) Addr() net.Addr { return pipeAddr{} }

// Dial connects to the listener, whatever address it is given; it has the
// signature of net.Dialer.DialContext.
func (p *Pipe) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.done:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
