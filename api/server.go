package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/pairing"
)

// Options configures a Server. Every zero value is documented.
type Options struct {
	// Version is sent as Snugd-Version on every response and reported by
	// health and status. "" means "devel".
	Version string
	// Logger receives the API's logs: refusals at debug level, failures
	// at error level; never a token, a credential or a request body. Nil
	// discards.
	Logger *slog.Logger
	// Now is the clock of rate limits, deadlines and uptime. Nil means
	// time.Now.
	Now func() time.Time
	// DrainTimeout bounds the graceful part of shutdown: how long Serve
	// waits for in-flight requests after it stops accepting, before it
	// cancels them. Zero means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Heartbeat is the interval of the event stream's keep-alive comments.
	// Zero means 15 seconds.
	Heartbeat time.Duration
}

// DefaultDrainTimeout is the graceful drain bound. With the final cancel
// phase (cancelGrace) it stays well under the 30 s snugd run allows itself
// after SIGTERM.
const DefaultDrainTimeout = 20 * time.Second

// cancelGrace is how long cancelled requests get to answer (a parked
// confirm answers denied) before their connections are closed.
const cancelGrace = 3 * time.Second

// Server is the loopback API over one Daemon: the host API on a loopback
// TCP listener and the ctl API on a unix socket, both built from one route
// table and guarded by one security chain. Echo stays inside; the Server
// exposes only net/http types.
type Server struct {
	book       *grants.Book
	proposers  *grants.Proposers
	records    *grants.Records
	exec       *fetch.Executor
	ceremonies *pairing.Service
	devices    *pairing.Devices
	hostBook   *hostauth.Book
	core       Core
	log        *slog.Logger
	now        func() time.Time
	version    string
	drain      time.Duration
	heartbeat  time.Duration
	started    time.Time

	fails *limiter // failed authentications
	pairs *limiter // pairing requests

	stopOnce sync.Once
	stop     chan struct{} // closed when shutdown begins: event streams end

	mu     sync.Mutex
	listen string // the TCP address served, for status
}

// Deps are the daemon's parts the API serves. Each handler calls the
// part that owns what it serves; who may see an item is decided there,
// from the caller the security chain put in the request's context.
type Deps struct {
	Grants    *grants.Book
	Proposers *grants.Proposers
	Records   *grants.Records
	Fetch     *fetch.Executor
	Pairing   *pairing.Service
	Devices   *pairing.Devices
	Hosts     *hostauth.Book
	// Core is the composition root's own: the status report, the data
	// directory and the start of shutdown.
	Core Core
}

// Core is what the API reads of the composition root.
type Core interface {
	StatusReport(ctx context.Context) (daemon.StatusReport, error)
	Hints(ctx context.Context) <-chan hints.Hint
	DataDir() string
	BeginShutdown()
}

// DepsOf returns the parts of d.
func DepsOf(d *daemon.Daemon) Deps {
	return Deps{
		Grants: d.Grants(), Proposers: d.Proposers(), Records: d.Records(), Fetch: d.Fetch(),
		Pairing: d.Pairing(), Devices: d.Devices(), Hosts: d.Hosts(), Core: d,
	}
}

// New returns a Server over deps. It does not listen: call Serve.
func New(deps Deps, opts Options) *Server {
	s := &Server{
		book: deps.Grants, proposers: deps.Proposers, records: deps.Records, exec: deps.Fetch,
		ceremonies: deps.Pairing, devices: deps.Devices, hostBook: deps.Hosts, core: deps.Core,
		log: opts.Logger, now: opts.Now, version: opts.Version,
		drain: opts.DrainTimeout, heartbeat: opts.Heartbeat, stop: make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "api")
	if s.now == nil {
		s.now = time.Now
	}
	if s.version == "" {
		s.version = "devel"
	}
	if s.drain <= 0 {
		s.drain = DefaultDrainTimeout
	}
	if s.heartbeat <= 0 {
		s.heartbeat = 15 * time.Second
	}
	s.started = s.now()
	s.fails = newLimiter(s.now, authBurst, authPeriod)
	s.pairs = newLimiter(s.now, pairBurst, pairPeriod)
	return s
}

// TCPHandler returns the host API's handler for a loopback listener on
// port: the Host header must name that port.
func (s *Server) TCPHandler(port int) http.Handler {
	ch := s.chain(false)
	ch.hosts = allowedHosts(port)
	return ch
}

// CtlHandler returns the ctl API's handler, for the unix socket only:
// it serves every route without a token, ctl-only routes included.
func (s *Server) CtlHandler() http.Handler { return s.chain(true) }

// chain builds one listener's chain: the security chain over the listener's
// route table. The chain's match dispatches the handler; echo supplies
// the handlers' Context (binding, JSON answers) and routes nothing.
func (s *Server) chain(ctl bool) *listenerChain {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.httpErrorHandler
	return &listenerChain{s: s, ctl: ctl, tab: newTable(ctl), echo: e}
}

// ListenTCP listens on addr, which must be 127.0.0.1:<port> or
// [::1]:<port>: the host API never listens beyond loopback (DESIGN.md).
// A port already in use is reported as such.
func ListenTCP(addr string) (net.Listener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !isLoopback(ap.Addr()) {
		return nil, fmt.Errorf("listen %s: the API listens on 127.0.0.1 or ::1 only", addr)
	}
	l, err := net.Listen("tcp", ap.String())
	if err != nil {
		if isAddrInUse(err) {
			return nil, fmt.Errorf("port %d on %s is already in use (another snugd, or another program): choose another with --port or config.json", ap.Port(), ap.Addr())
		}
		return nil, fmt.Errorf("listen %s: %w", ap, err)
	}
	return l, nil
}

func isLoopback(a netip.Addr) bool {
	return a.Zone() == "" && (a == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || a == netip.IPv6Loopback())
}

// isAddrInUse reports EADDRINUSE, and Windows' WSAEADDRINUSE (10048).
func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.Errno(10048))
}

// Serve serves the host API on tcp and the ctl API on ctl (either may be
// nil) until ctx is done or a listener fails, then shuts down: it stops
// accepting, ends event streams, has the daemon deny parked confirms
// (Daemon.BeginShutdown: nobody can decide them any more), waits up to the drain timeout for in-flight
// requests, then cancels what is left, gives those cancelGrace to answer
// and closes their connections. It returns nil after a shutdown asked for by ctx. A
// tcp listener that is not on a loopback address is refused.
func (s *Server) Serve(ctx context.Context, tcp, ctl net.Listener) error {
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	var servers []*http.Server
	errc := make(chan error, 2)
	start := func(l net.Listener, h http.Handler) {
		srv := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       quickTimeout, // lifted per route for long, stream and bulk routes
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    64 << 10,
			BaseContext:       func(net.Listener) context.Context { return base },
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		}
		servers = append(servers, srv)
		// This goroutine lives until the server is shut down or closed.
		go func() { errc <- srv.Serve(l) }()
	}
	if tcp != nil {
		ta, ok := tcp.Addr().(*net.TCPAddr)
		if !ok || !isLoopback(ta.AddrPort().Addr().Unmap()) {
			return fmt.Errorf("serve %s: the API listens on loopback only", tcp.Addr())
		}
		s.mu.Lock()
		s.listen = ta.String()
		s.mu.Unlock()
		start(tcp, s.TCPHandler(ta.Port))
	}
	if ctl != nil {
		start(ctl, s.CtlHandler())
	}
	if len(servers) == 0 {
		return errors.New("serve: no listener")
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		serveErr = err
	}
	s.shutdown(servers, cancelBase)
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

func (s *Server) shutdown(servers []*http.Server, cancelRequests context.CancelFunc) {
	s.stopOnce.Do(func() { close(s.stop) })
	// Nobody can decide a parked confirm once the listeners close: the
	// daemon denies every one now, and every one asked while the drain
	// lasts, instead of letting them hold the shutdown for the drain bound.
	s.core.BeginShutdown()
	drainCtx, cancel := context.WithTimeout(context.Background(), s.drain)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(func() {
			if srv.Shutdown(drainCtx) == nil {
				return
			}
			s.log.Warn("requests still running after the drain timeout; cancelling them", "drain", s.drain)
			cancelRequests()
			graceCtx, cancel := context.WithTimeout(context.Background(), cancelGrace)
			defer cancel()
			if srv.Shutdown(graceCtx) != nil {
				srv.Close()
			}
		})
	}
	wg.Wait()
}
