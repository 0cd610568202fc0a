package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/starter"
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
}

// New opens the store in cfg.DataDir, builds the grant index and returns a
// ready Daemon. A second daemon on the same directory is refused, naming the
// holder.
func New(ctx context.Context, cfg Config) (*Daemon, error) {
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
	st, err := store.Open(ctx, store.Options{Dir: cfg.DataDir, Now: now, Logger: log.With("component", "store")})
	if err != nil {
		return nil, err
	}
	d := &Daemon{log: log, now: now, store: st, hints: newHintBus(), registry: reg, starters: starters}
	if err := d.rebuildIndex(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if err := d.reconsentPins(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return d, nil
}

// DataDir reports the data directory in use.
func (d *Daemon) DataDir() string { return d.store.Dir() }

// DBPath reports the path of snugd.db.
func (d *Daemon) DBPath() string { return d.store.DBPath() }

// Close closes the store. The Daemon must not be used afterwards.
func (d *Daemon) Close() error {
	d.hints.close()
	return d.store.Close()
}
