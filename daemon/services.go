package daemon

import (
	"context"
	"log/slog"
	"sync"
)

// The daemon's long-lived parts run as services (Syncthing's Serve(ctx)
// shape, our own small owner): each is a Run(ctx) error that works until
// ctx is done, then finishes what it owes and returns. The daemon starts
// them in New, in order, and Close stops them in reverse order, each one
// waited for before the next is stopped, so a service started later (the
// helper supervisor, mDNS, the OAuth refresher) can still journal while it
// stops. Adding one is one line in New: d.services.start("name", s).
//
// Today: the journal's batcher (journal.go).

// A service is a long-lived part of the daemon.
type service interface {
	// Run works until ctx is done, then returns nil once it has finished
	// what it owes (the journal writes what is queued). An error return
	// before that is logged; the service is not restarted.
	Run(ctx context.Context) error
}

// services starts services and stops them together; it is the one owner
// of their goroutines.
type services struct {
	log *slog.Logger

	mu      sync.Mutex
	running []*runningService // in start order
	stopped bool
}

type runningService struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

func newServices(log *slog.Logger) *services { return &services{log: log} }

// start runs s until stop. After stop it does nothing.
func (g *services) start(name string, s service) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningService{name: name, cancel: cancel, done: make(chan struct{})}
	g.running = append(g.running, r)
	// The service's goroutine lives until stop cancels its context and
	// Run returns.
	go func() {
		defer close(r.done)
		if err := s.Run(ctx); err != nil {
			g.log.Error("service stopped", "service", name, "err", err)
		}
	}()
}

// stop stops every service, the last started first, and returns when all
// have returned. It is idempotent.
func (g *services) stop() {
	g.mu.Lock()
	running := g.running
	g.running, g.stopped = nil, true
	g.mu.Unlock()
	for i := len(running) - 1; i >= 0; i-- {
		running[i].cancel()
		<-running[i].done
	}
}
