package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/oauth"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/starter"
	"github.com/snug/snugd/lan"
	"github.com/snug/snugd/transports"
)

// Config configures a Daemon. Only DataDir is required; every other zero
// value is documented on its field.
type Config struct {
	// DataDir holds snugd.db, secrets.key and the lock file. It is created
	// 0700 when missing.
	DataDir string
	// Logger receives structured logs; never a credential value, a
	// credentialed URL or a request body. Nil discards.
	Logger *slog.Logger
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Registry is the pinned provider registry. Nil means the shipped one
	// (registry.Load); a registry that fails its checks stops the start.
	Registry *registry.Registry
	// Starters are the bundled starters the install channel vouches
	// against. Nil means the shipped ones (starter.Load).
	Starters *starter.Catalog

	// Public is the public HTTPS transport of gates 5, 9 and 10. Nil means a
	// zero transports.Public: system resolver, system roots, the default
	// SSRF-checking dialer. Tests inject a resolver, a dialer and roots
	// here; no field of Public turns a check off.
	Public *transports.Public
	// LAN is the transport to an RFC-1918 device (§12.11). Nil means a zero
	// transports.LAN. It is used only under the desktop policy.
	LAN *transports.LAN
	// TransportPolicy chooses between the spec's two profiles (ruling R19):
	// PolicyDesktop (the zero value "" means desktop) admits the LAN class of
	// §12.11 at gates 4 and 5; PolicyBrowser is byte-identical to the
	// browser profile and admits no LAN request. Any other value is refused
	// by New.
	TransportPolicy TransportPolicy
	// LocalTransports are the registered local helper transports of gate 6a
	// by helper id (the sidecar symbolic host <helperId>.sidecar.invalid),
	// built in main as a literal map. Nil means no helper is registered: a
	// request to a sidecar host is refused, never sent to the network.
	LocalTransports map[string]LocalTransport
	// LANDiscover browses the local network for Hue bridges (§12.11). Nil
	// means lan.Discover; tests that must not multicast on the machine's
	// interfaces pass their own.
	LANDiscover func(context.Context, lan.DiscoverConfig) ([]lan.Bridge, error)
	// Helpers is the linked-device helper supervisor (linkdevice.Supervisor,
	// built in main from its literal table). The daemon runs it as a
	// service, adds one gate 6a transport per helper that is both in its
	// table and in the registry, and runs device-link flows through it;
	// main routes the supervisor's events to HelperEvent. Nil means no
	// helper runs: device links and sidecar requests refuse.
	Helpers Helpers
	// Tokens supplies the bearer token of the two OAuth kinds at gate 8. Nil
	// means the daemon's own (oauthconn.go): stored tokens, refreshed
	// through the guarded public transport. Tests may replace it.
	Tokens TokenSource
	// ConfirmTimeout bounds how long a parked confirm waits for the user
	// before it is denied. Zero means DefaultConfirmTimeout (2 minutes).
	ConfirmTimeout time.Duration
	// RequestTimeout bounds each network phase of one request: the lookup
	// of gate 5, and the fetch and read of gates 9 and 10 (the confirm wait
	// is bounded by ConfirmTimeout instead). Zero means
	// DefaultRequestTimeout (30 seconds).
	RequestTimeout time.Duration
	// StandingTargets names, per requirement, the trigger classes a standing
	// approval may be armed for and where each reads its target from (§17).
	// Nil means no requirement has any: nothing can be armed.
	StandingTargets func(*requirement.Requirement) []StandingTarget
}

// Daemon is snugd's core. Its methods are safe for concurrent use.
type Daemon struct {
	log      *slog.Logger
	now      func() time.Time
	store    *store.Store
	hints    *hintBus
	registry *registry.Registry
	starters *starter.Catalog

	// index is the grant and ceiling index of every app, rebuilt per app on
	// every committed connection write, so the request path does no SQL to
	// find a grant.
	index atomic.Pointer[grantIndex]
	// writeMu serializes the writers' read-check-write against the index
	// publication, so an index is never published out of commit order.
	writeMu sync.Mutex

	// The executor (fetch.go) and the parts of it the writers reach:
	// the confirm broker's session memory and the standing gate's disarm
	// run after every connection write (hints.go), DeleteHost withdraws
	// confirms, Close stops the journal.
	exec     *executor
	confirms *confirmBroker
	standing *standingGate
	journal  *journal
	// services are the long-lived parts (services.go): started in New,
	// stopped by Close.
	services    *services
	secretCache secretCache
	// reach remembers the apps each host holds (owners.go).
	reach reachCache
	// flows are the pairing flows in progress (flows.go).
	flows *flowBook
	// hosts is the host pairing book (daemon/hostauth; hosts.go).
	hosts *hostauth.Book
	// lanDisc is the one LAN discovery at a time (lan.go).
	lanDisc lanDiscovery
	// helpers is the linked-device supervisor (nil: none) and links the
	// live device-link flows by helper session (linkdev.go).
	helpers Helpers
	links   linkBook
	// refresher shares one OAuth refresh per slot (oauthconn.go).
	refresher oauth.Refresher
	// reconsentRows is how many rows the start's pin re-consent pass
	// checked: 0 when the registry had not changed (channels.go).
	reconsentRows int
}

// New opens the store in cfg.DataDir, builds the grant index and returns a
// ready Daemon. A second daemon on the same directory is refused, naming the
// holder.
func New(ctx context.Context, cfg Config) (*Daemon, error) {
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("daemon: no data directory")
	}
	prefetchExecutableSum()
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	reg := cfg.Registry
	if reg == nil {
		var err error
		if reg, err = registry.Load(); err != nil {
			return nil, fmt.Errorf("load the provider registry: %w", err)
		}
	}
	starters := cfg.Starters
	if starters == nil {
		var err error
		if starters, err = starter.Load(); err != nil {
			return nil, fmt.Errorf("load the bundled starters: %w", err)
		}
	}
	st, err := store.Open(ctx, store.Options{Dir: cfg.DataDir, Now: now, Logger: log})
	if err != nil {
		return nil, err
	}
	d := &Daemon{log: log, now: now, store: st, hints: newHintBus(), registry: reg, starters: starters, helpers: cfg.Helpers}
	d.hosts = hostauth.New(st, now, log.With("component", "hostauth"))
	d.flows = newFlowBook(now, d.hints)
	d.lanDisc.discover = cfg.LANDiscover
	confirmTimeout := cfg.ConfirmTimeout
	if confirmTimeout <= 0 {
		confirmTimeout = DefaultConfirmTimeout
	}
	d.confirms = newConfirmBroker(confirmTimeout, d.hints, now)
	d.journal = newJournal(st, now, log.With("component", "journal"))
	d.services = newServices(log)
	d.standing = newStandingGate(now, cfg.StandingTargets, &d.index, d.journal)
	cfg.Registry = reg
	cfg.LocalTransports = helperTransports(reg, cfg.Helpers, cfg.LocalTransports, log.With("component", "helpers"))
	d.refresher.Now = now
	if cfg.Tokens == nil {
		cfg.Tokens = oauthTokens{d} // gate 8's OAuth source (oauthconn.go)
	}
	exec, err := newExecutor(cfg, execDeps{
		index: &d.index, confirms: d.confirms, standing: d.standing, journal: d.journal,
		readSecrets: d.cachedSlotSecrets, scrubs: &d.secretCache.scrubs, answered: d.noteAnswer, log: log, now: now,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	d.exec = exec
	// One scan of every row's head builds the index; requirements are
	// parsed on first use (index_start.go).
	idx, err := startIndex(ctx, st, log.With("component", "index"))
	if err != nil {
		st.Close()
		return nil, d.internal("build grant index", err)
	}
	d.index.Store(idx)
	d.services.start("journal", d.journal.batch)
	if cfg.Helpers != nil {
		d.services.start("helpers", cfg.Helpers) // stops before the journal
	}
	if err := d.sweepFlows(ctx); err != nil { // a restart ended every OAuth flow
		d.Close()
		return nil, err
	}
	if err := d.reconsentAtStart(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// DataDir reports the data directory in use.
func (d *Daemon) DataDir() string { return d.store.Dir() }

// DBPath reports the path of snugd.db.
func (d *Daemon) DBPath() string { return d.store.DBPath() }

// BeginShutdown starts the daemon's shutdown: every parked confirm is
// denied (NET_CONFIRM_DENIED, "snugd is shutting down") before it returns,
// and every confirm asked later is denied at once, since nobody can decide
// one any more. Everything else keeps serving until Close. The API server
// calls it when its shutdown begins; it is idempotent.
func (d *Daemon) BeginShutdown() { d.confirms.Shutdown() }

// Close denies every parked confirm, stops the services (the journal
// writes what is queued), closes idle upstream connections and the store.
// The Daemon must not be used afterwards.
func (d *Daemon) Close() error {
	d.BeginShutdown()
	d.flows.close()
	d.services.stop()
	d.exec.closeIdle()
	d.hints.close()
	return d.store.Close()
}
