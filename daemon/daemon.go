package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/pairing"
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
	// TransportPolicy chooses between the spec's two profiles:
	// PolicyDesktop (the zero value "" means desktop) admits the LAN device class
	// at gates 4 and 5; PolicyBrowser is byte-identical to the
	// browser profile and admits no LAN request. Any other value is refused
	// by New.
	TransportPolicy fetch.TransportPolicy
	// LANDiscover browses the local network for Hue bridges. Nil
	// means lan.Browse; tests that must not multicast on the machine's
	// interfaces pass their own.
	LANDiscover func(context.Context, lan.DiscoverConfig) (lan.Discovery, error)
	// Helpers is the linked-device helper supervisor (linkdevice.Supervisor,
	// built in main from its literal table). The daemon runs it as a
	// service, adds one gate 6a transport per helper that is both in its
	// table and in the registry, and runs device-link flows through it;
	// the daemon subscribes to its events. Nil means no
	// helper runs: device links and sidecar requests refuse.
	Helpers pairing.Helpers
	// Tokens supplies the bearer token of the two OAuth kinds at gate 8. Nil
	// means the daemon's own (daemon/pairing's oauthconn.go): stored tokens, refreshed
	// through the guarded public transport. Tests may replace it.
	Tokens fetch.TokenSource
	// ConfirmTimeout bounds how long a parked confirm waits for the user
	// before it is denied. Zero means DefaultConfirmTimeout (2 minutes).
	ConfirmTimeout time.Duration
	// RequestTimeout bounds each network phase of one request: the lookup
	// of gate 5, and the fetch and read of gates 9 and 10 (the confirm wait
	// is bounded by ConfirmTimeout instead). Zero means
	// DefaultRequestTimeout (30 seconds).
	RequestTimeout time.Duration
	// StandingTargets names, per requirement, the trigger classes a standing
	// approval may be armed for and where each reads its target from.
	// Nil means no requirement has any: nothing can be armed.
	StandingTargets func(*requirement.Requirement) []fetch.StandingTarget
}

// Daemon is snugd's composition root: New wires the parts, and the API
// and main take the parts they use (Grants, Fetch, Pairing, Hosts). It
// does nothing of its own but the status report and the lifecycle.
type Daemon struct {
	log   *slog.Logger
	now   func() time.Time
	store *store.Store
	hints *hints.Bus

	hosts     *hostauth.Book
	grants    *grants.Book
	proposers *grants.Proposers
	records   *grants.Records
	exec      *fetch.Executor
	pairing   *pairing.Service
	devices   *pairing.Devices
	journal   *journal.Journal
	confirms  *fetch.ConfirmBroker
	standing  *fetch.StandingGate
	registry  *registry.Registry
	helpers   pairing.Helpers
	// services are the long-lived parts (services.go): listed in New,
	// run by Run.
	services  *services
	closing   chan struct{} // closed by Close: Run stops
	closeOnce sync.Once
}

// New opens the store in cfg.DataDir, builds the grant index and returns a
// ready Daemon. A second daemon on the same directory is refused, naming the
// holder.
func New(ctx context.Context, cfg Config) (*Daemon, error) {
	bi, _ := debug.ReadBuildInfo()
	return newBuild(ctx, cfg, grants.BuildIdentity(bi))
}

// newBuild is New for the build named build (grants.BuildIdentity; ""
// when it is not identified, and then the pin re-consent pass runs at
// every start). It is what the running binary is, never a setting: only
// this package's tests name another, to stand for an identified build
// (a test binary carries no VCS revision).
func newBuild(ctx context.Context, cfg Config, build string) (*Daemon, error) {
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("daemon: no data directory")
	}
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
	d := &Daemon{log: log, now: now, store: st, hints: hints.NewBus(), helpers: cfg.Helpers, services: newServices(log), closing: make(chan struct{})}
	d.hosts = hostauth.New(st, now, log.With("component", "hostauth"))
	d.journal = journal.NewJournal(st, now, log.With("component", "journal"))
	book, err := grants.New(ctx, grants.Deps{Log: log, Now: now, Store: st, Hints: d.hints, Journal: d.journal, Registry: reg, Starters: starters})
	if err != nil {
		st.Close()
		return nil, err
	}
	d.grants, d.proposers, d.records = book, &grants.Proposers{Book: book}, &grants.Records{Book: book}
	confirmTimeout := cfg.ConfirmTimeout
	if confirmTimeout <= 0 {
		confirmTimeout = fetch.DefaultConfirmTimeout
	}
	d.confirms = fetch.NewConfirmBroker(confirmTimeout, d.hints, now)
	standing := fetch.NewStandingGate(now, cfg.StandingTargets, book, d.journal)
	d.standing, d.registry = standing, reg
	local := pairing.HelperTransports(reg, cfg.Helpers, log.With("component", "helpers"))
	// The OAuth token source is the pairing service's; the executor is
	// built before it, so the source reaches it through a late binding.
	tokens := cfg.Tokens
	var late lateTokens
	if tokens == nil {
		tokens = &late
	}
	var answered lateAnswer
	exec, err := fetch.NewExecutor(fetch.ExecDeps{
		Index: book, Owners: book, Confirms: d.confirms, Standing: standing, Journal: d.journal,
		ReadSecrets: book.CachedSlotSecrets, Scrubs: book.Scrubs(), Answered: answered.note, Log: log, Now: now,
		Policy: cfg.TransportPolicy, Public: cfg.Public, Lan: cfg.LAN, Local: local,
		RequestTimeout: cfg.RequestTimeout, Tokens: tokens, Registry: reg,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	d.exec = exec
	d.pairing = pairing.New(pairing.Deps{
		Log: log, Now: now, Store: st, Hints: d.hints, Journal: d.journal, Registry: reg, Hosts: d.hosts,
		Grants: book, Stager: d.proposers, Side: exec.Side(), Local: local, Helpers: cfg.Helpers, LANDiscover: cfg.LANDiscover,
	})
	d.devices = &pairing.Devices{Service: d.pairing}
	late.src = pairing.OauthTokens{}.For(d.pairing)
	answered.fn = d.devices.NoteAnswer
	book.UseGates(exec)
	book.OnChange(func(appID, _ string) { d.confirms.ForgetApp(appID) }, standing.DisarmSlot)
	book.OnRevoke(d.devices.UnlinkSlot, d.pairing.RevokeRemote)
	d.hosts.SetHooks(hostauth.Hooks{
		Paired: func(ctx context.Context, p hostauth.Pairing) {
			var how string
			switch {
			case p.Invited:
				how = "by invitation"
			case p.Origin != "":
				how = fmt.Sprintf("from %q", p.Origin)
			default:
				// A desktop program: no web page asked, so there is no
				// origin to name; the administrator approved its code.
				how = "with its pairing code (a program on this computer: no web origin)"
			}
			d.journal.Act(ctx, journal.ActHostPair, "", "", fmt.Sprintf("pairing %s: %q (%s) %s", p.ID, p.Name, p.Surface, how))
		},
		Unpairing: func(id string) { d.confirms.WithdrawHost(id) },
		Unpaired: func(ctx context.Context, h hostauth.Host, err error) {
			book.ForgetReach() // the host's apps are no longer held
			if err == nil {
				d.journal.Act(ctx, journal.ActHostUnpair, "", "", fmt.Sprintf("host %s: %q (%s)", h.ID, h.Name, h.Surface))
			}
		},
	})

	// The database's integrity is checked beside serving, at start and
	// every six hours: damage puts the store in its refusing state,
	// which status shows.
	d.services.add("integrity", integrityCheck{st})
	if cfg.Helpers != nil {
		cfg.Helpers.Subscribe(d.devices.HelperEvent) // the supervisor's events reach the device links
		d.services.add("helpers", cfg.Helpers)
		d.devices.FinishSwaps(ctx) // before any request or relink of a slot
	}
	if err := d.pairing.SweepFlows(ctx); err != nil { // a restart ended every OAuth flow
		d.Close()
		return nil, err
	}
	if err := d.proposers.ReconsentAtStart(ctx, build); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// lateTokens is the executor's OAuth token source until the pairing
// service that owns the tokens exists (New sets src before any request).
type lateTokens struct{ src fetch.TokenSource }

func (l *lateTokens) AccessToken(ctx context.Context, req fetch.TokenRequest) (string, error) {
	return l.src.AccessToken(ctx, req)
}

// lateAnswer is the executor's after-answer hook, bound the same way.
type lateAnswer struct {
	fn func(context.Context, *fetch.Fetch, fetch.NetResult)
}

func (l *lateAnswer) note(ctx context.Context, f *fetch.Fetch, res fetch.NetResult) {
	l.fn(ctx, f, res)
}

// Grants is the grant book: connections, writers, custody, proposers,
// review, import and ownership.
func (d *Daemon) Grants() *grants.Book { return d.grants }

// Proposers are the proposer channels and review.
func (d *Daemon) Proposers() *grants.Proposers { return d.proposers }

// Records are import, export and the journal.
func (d *Daemon) Records() *grants.Records { return d.records }

// Devices are the ceremonies with a device: LAN pairing and device links.
func (d *Daemon) Devices() *pairing.Devices { return d.devices }

// Fetch is the connected-fetch executor, with its confirms and standing
// approvals.
func (d *Daemon) Fetch() *fetch.Executor { return d.exec }

// Pairing runs the pairing ceremonies and their flows.
func (d *Daemon) Pairing() *pairing.Service { return d.pairing }

// Hosts is the host pairing book.
func (d *Daemon) Hosts() *hostauth.Book { return d.hosts }

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

// Run runs the daemon's long-lived parts — the integrity check and the
// helper supervisor — until ctx is done or Close is called. Then it denies
// every parked confirm (BeginShutdown: nobody can decide one any more) and
// stops them, the last started first. (The journal needs no stopping:
// every entry is committed before its request is answered.) It returns
// nil after a shutdown; a part that fails before is logged, not
// restarted. Call it once, beside the API server; Close after it returns.
func (d *Daemon) Run(ctx context.Context) error {
	d.services.startAll(ctx)
	select {
	case <-ctx.Done():
	case <-d.closing:
	}
	d.BeginShutdown()
	d.services.stop()
	return nil
}

// Close denies every parked confirm, stops the services, closes idle
// upstream connections and the store.
// The Daemon must not be used afterwards.
func (d *Daemon) Close() error {
	d.closeOnce.Do(func() { close(d.closing) })
	d.BeginShutdown()
	d.pairing.Close()
	d.services.stop()
	d.exec.CloseIdle()
	d.hints.Close()
	return d.store.Close()
}
