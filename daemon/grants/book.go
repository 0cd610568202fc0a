package grants

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/scrub"
	"github.com/snug/snugd/daemon/starter"
)

// Book is the grant book: every connection row, the writers that change
// them, the credential custody beside them, the proposers, review, import,
// and who owns which app. It publishes the grant index the executor reads.
// Its methods are safe for concurrent use.
type Book struct {
	log      *slog.Logger
	now      func() time.Time
	store    *store.Store
	hints    *hints.Bus
	journal  *journal.Journal
	registry *registry.Registry
	starters *starter.Catalog

	// index is the grant and ceiling index of every app, rebuilt per app on
	// every committed connection write, so the request path does no SQL to
	// find a grant.
	index atomic.Pointer[GrantIndex]
	// writeMu serializes the writers' read-check-write against the index
	// publication, so an index is never published out of commit order.
	writeMu sync.Mutex

	secretCache SecretCache
	// reach remembers the apps each host holds (owners.go).
	reach ReachCache

	// gates is what the summaries read of the executor (Apps, Facts);
	// revokeHooks run before a revoke, changeHooks after every committed
	// write (connections.go). All three are set once, by UseGates,
	// OnRevoke and OnChange, before the book serves.
	gates       Gates
	revokeHooks []RevokeHook
	changeHooks []ChangeHook

	// reconsentRows is how many rows the start's pin re-consent pass
	// checked: 0 when the registry had not changed (channels.go).
	reconsentRows int
}

// Deps are what a Book is built from.
type Deps struct {
	Log      *slog.Logger
	Now      func() time.Time
	Store    *store.Store
	Hints    *hints.Bus
	Journal  *journal.Journal
	Registry *registry.Registry
	Starters *starter.Catalog
}

// Gates is what the summaries (Apps, Facts) read of the executor's
// gates: how many confirms an app has parked, and whether a slot has a
// standing approval armed.
type Gates interface {
	PendingConfirms(appID string) int
	StandingArmed(appID, slot string) bool
}

// UseGates, OnRevoke and OnChange complete the wiring before the book
// serves: the composition root calls them once, in New.
func (d *Book) UseGates(g Gates)         { d.gates = g }
func (d *Book) OnRevoke(h ...RevokeHook) { d.revokeHooks = append(d.revokeHooks, h...) }
func (d *Book) OnChange(h ...ChangeHook) { d.changeHooks = append(d.changeHooks, h...) }

// New builds the grant index from one scan of every row's head
// (requirements are parsed on first use, index_start.go) and returns the
// book over it.
func New(ctx context.Context, deps Deps) (*Book, error) {
	d := &Book{
		log: deps.Log, now: deps.Now, store: deps.Store, hints: deps.Hints, journal: deps.Journal,
		registry: deps.Registry, starters: deps.Starters,
	}
	idx, err := StartIndex(ctx, deps.Store, deps.Log.With("component", "index"))
	if err != nil {
		return nil, Internal(d.log, "build grant index", err)
	}
	d.index.Store(idx)
	return d, nil
}

// Snapshot returns the current grant index: immutable, safe to read
// without a lock.
func (d *Book) Snapshot() *GrantIndex { return d.index.Load() }

// Scrubs is the value-scrub cache the executor shares between requests
// that inject the same values; it is forgotten with the credential cache.
func (d *Book) Scrubs() *scrub.Cache { return &d.secretCache.Scrubs }

// Proposers are the proposer channels of a requirement (channels.go:
// user, directive, starter, registry option) and the review that an
// approval follows (review.go). They stage through the book's writers.
type Proposers struct{ *Book }

// Records are what the book reports and carries over: import and export
// (importdb.go), the journal as the caller may read it (acts.go), the
// apps' summaries with what needs attention (apps.go) and the chat lane's
// facts (facts.go).
type Records struct{ *Book }
