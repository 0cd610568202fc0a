package daemon

import (
	"context"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
)

// The daemon's long-lived parts run as services (Syncthing's Serve(ctx)
// shape, our own small owner): each is a Run(ctx) error that works until
// ctx is done, then finishes what it owes and returns. New lists them in
// order (d.services.add("name", s)); Daemon.Run starts them under its
// caller's context and, when that is done, stops them in reverse order,
// each one waited for before the next is stopped, so a service started
// later (the helper supervisor) can still journal while it stops.
//
// Today: the journal's batcher (daemon/journal) and the helper
// supervisor (linkdevice).

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
	listed  []listedService   // in start order (add)
	running []*runningService // in start order
	stopped bool
	started bool // startAll ran before stop

	stopOnce sync.Once
}

type listedService struct {
	name string
	s    service
}

type runningService struct {
	name   string
	cancel context.CancelFunc
	done   chan struct{}
}

func newServices(log *slog.Logger) *services { return &services{log: log} }

// add lists s for startAll.
func (g *services) add(name string, s service) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.listed = append(g.listed, listedService{name, s})
}

// startAll starts the listed services, in order, under parent; after
// stop it does nothing.
func (g *services) startAll(parent context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	g.started = true
	for _, l := range g.listed {
		g.startLocked(parent, l.name, l.s)
	}
}

// startLocked runs s until stop; g.mu is held. s's context keeps
// parent's values but not its cancellation: stop ends the services one at
// a time, in reverse order.
func (g *services) startLocked(parent context.Context, name string, s service) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
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
// have returned. It is idempotent, and every call returns only once the
// first has finished (Run and Close may both stop the daemon).
func (g *services) stop() {
	g.stopOnce.Do(func() {
		g.mu.Lock()
		running, listed, started := g.running, g.listed, g.started
		g.running, g.stopped = nil, true
		g.mu.Unlock()
		for i := len(running) - 1; i >= 0; i-- {
			running[i].cancel()
			<-running[i].done
		}
		if started {
			return
		}
		// Stopped before it ran (Close without Run): each service still
		// finishes what it owes — the journal writes what was queued —
		// under a context that is already done.
		done, cancel := context.WithCancel(context.Background())
		cancel()
		for i := len(listed) - 1; i >= 0; i-- {
			if err := listed[i].s.Run(done); err != nil {
				g.log.Error("service stopped", "service", listed[i].name, "err", err)
			}
		}
	})
}

// integrityCheck runs the store's quick integrity check at start and on
// a schedule (store.RunChecks). Damage it finds ends it, logged; the
// store refuses writes from then on and status says so.
type integrityCheck struct{ st *store.Store }

// integrityEvery is how often a running daemon checks its database.
const integrityEvery = 6 * time.Hour

// Run first hands the heap the start used back to the OS: the services
// start once New has built everything, so the start's garbage (the
// grant index build, the registry parse, at up to five times the live
// heap while the start scans) is dead by then, and an idle daemon need
// not keep its pages until the scavenger gets to them (about 1.5 MiB of
// RSS at 10 rows). One collection of a small heap, beside serving.
func (c integrityCheck) Run(ctx context.Context) error {
	debug.FreeOSMemory()
	return c.st.RunChecks(ctx, integrityEvery)
}
