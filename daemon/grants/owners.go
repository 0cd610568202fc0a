package grants

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
)

// Hosts own their apps. An app belongs to the paired host that
// first wrote a row for it; the administrator may share it with other
// hosts (snugd ctl apps share). A host reaches only the apps it owns or
// was given: every app-scoped entry point answers any other app exactly as
// if it did not exist (APP_NOT_FOUND), so one paired host can neither
// read, stage, approve nor send another host's credential.
//
// The rule, for a host H and an app A:
//
//   - A's owner is H, or A is shared with H: visible.
//   - A has no owner record and no row: visible. Nothing is there to
//     hide, and H's first write claims A.
//   - Otherwise (another host's app; an app whose owner was unpaired; an
//     app with rows nobody claimed, written on the ctl channel, imported
//     or from before ownership was recorded): APP_NOT_FOUND. Such apps are
//     the administrator's until shared.
//
// App ids are one namespace, so a host that tries to create an app another
// host holds learns that the id is taken (its write is refused); it never
// learns what the app holds.
//
// errAppNotFound is the one answer a host gets for an app it may not
// reach, whatever it asked.
func errAppNotFound() error { return errcode.New(errcode.AppNotFound, "no such app") }

// reach is how a host reaches an app.
type reach int

const (
	reachNone  reach = iota // another host's, or the administrator's
	reachHeld               // the host owns it or was given it
	reachClaim              // nobody holds it and it has no row: a write claims it
)

// reachOf says how host reaches appID, inside tx.
func reachOf(tx *store.Tx, appID, host string) (reach, error) {
	a, err := tx.AppAccess(appID)
	if err != nil {
		return reachNone, err
	}
	if a.OwnerHostID == host || slices.Contains(a.Shared, host) {
		return reachHeld, nil
	}
	if a.Claimed {
		return reachNone, nil
	}
	n, err := tx.CountConnections(appID)
	if err != nil || n > 0 {
		return reachNone, err
	}
	return reachClaim, nil
}

// AppVisible reports whether the caller of ctx may reach appID: always
// for the administrator. This is the one check every app-scoped entry
// point makes (the API's chain calls it for every route that names an app;
// the writers call it again inside their transaction). Safe for concurrent
// use.
//
// A host's held apps are remembered (reachCache), so the request path
// (POST /v1/net checks it for every call) reads no SQL once a host has
// reached an app.
func (d *Book) AppVisible(ctx context.Context, appID string) (bool, error) {
	host, ok := hostauth.CallerHost(ctx)
	if !ok {
		return true, nil
	}
	if d.reach.holds(appID, host) {
		return true, nil
	}
	gen := d.reach.generation()
	var r reach
	err := d.store.View(ctx, func(tx *store.Tx) error {
		var err error
		r, err = reachOf(tx, appID, host)
		return err
	})
	if err != nil {
		return false, Internal(d.log, "read app owner", err)
	}
	if r == reachHeld {
		d.reach.remember(gen, appID, host)
	}
	return r != reachNone, nil
}

// reachCache remembers which apps each host holds (owns, or was given),
// for AppVisible. Only a held app is remembered: "nobody holds it yet"
// ends with any host's first write, so it is always read afresh, and "not
// visible" is never cached at all.
//
// A held app stops being held only by UnshareApp (the share dropped or the
// ownership cleared) or by unpairing the host (DeleteHost: its owner
// records are cleared and its shares dropped with its row); owner records
// are never deleted or reassigned otherwise (ClaimApp keeps an existing
// one). Both clear the cache after their write commits, and a read that
// raced with a clear does not fill it (the generation check), so a revoked
// app is never answered from the cache after its write returns. Any future
// writer that takes an app away from a host must end in forget too. The
// cache is bounded (maxReachEntries; when full it starts over).
type ReachCache struct {
	mu   sync.Mutex
	gen  uint64
	held map[[2]string]struct{}
}

const maxReachEntries = 4096

func (c *ReachCache) holds(appID, host string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.held[[2]string{appID, host}]
	return ok
}

func (c *ReachCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// remember records a held app read at generation gen, unless a forget
// came since.
func (c *ReachCache) remember(gen uint64, appID, host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if c.held == nil || len(c.held) >= maxReachEntries {
		c.held = make(map[[2]string]struct{})
	}
	c.held[[2]string{appID, host}] = struct{}{}
}

func (c *ReachCache) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.held)
}

// CheckApp is AppVisible as an error: nil, or APP_NOT_FOUND.
func (d *Book) CheckApp(ctx context.Context, appID string) error {
	ok, err := d.AppVisible(ctx, appID)
	if err != nil {
		return err
	}
	if !ok {
		return errAppNotFound()
	}
	return nil
}

// claimOnWrite runs inside a writer's transaction: it refuses a host a
// write to an app it may not reach, and records a host's first row of an
// unclaimed app as its claim. The administrator's writes claim nothing.
func claimOnWrite(ctx context.Context, tx *store.Tx, appID string) error {
	host, ok := hostauth.CallerHost(ctx)
	if !ok {
		return nil
	}
	r, err := reachOf(tx, appID, host)
	switch {
	case err != nil:
		return err
	case r == reachNone:
		return errAppNotFound()
	case r == reachClaim:
		// Only a new app is claimed: a host given an administrator's
		// app by a share writes in it without becoming its owner.
		return tx.ClaimApp(appID, host)
	}
	return nil
}

// AppAccess returns who may reach appID over the host API: its owner's
// host id ("" when the app is the administrator's) and the hosts it is
// shared with. It is for the ctl channel's listing of apps.
func (d *Book) AppAccess(ctx context.Context, appID string) (owner string, shared []string, err error) {
	if err := CheckAppID(appID); err != nil {
		return "", nil, err
	}
	var a store.AppAccess
	err = d.store.View(ctx, func(tx *store.Tx) error {
		var err error
		a, err = tx.AppAccess(appID)
		return err
	})
	if err != nil {
		return "", nil, Internal(d.log, "read app access", err)
	}
	if a.Shared == nil {
		a.Shared = []string{}
	}
	return a.OwnerHostID, a.Shared, nil
}

// ShareApp gives paired host hostID access to appID, beside its owner
// (the user's desktop and web hosts of the same apps). It is the
// administrator's act (the ctl channel only). Errors: APP_NOT_FOUND when
// the app has no row, HOST_NOT_FOUND when no such host is paired.
func (d *Book) ShareApp(ctx context.Context, appID, hostID string) error {
	if err := CheckAppID(appID); err != nil {
		return err
	}
	if _, ok := hostauth.CallerHost(ctx); ok {
		return errcode.New(errcode.Forbidden, "only the administrator shares an app")
	}
	err := d.store.Update(ctx, func(tx *store.Tx) error {
		n, err := tx.CountConnections(appID)
		if err != nil {
			return err
		}
		if n == 0 {
			return errAppNotFound()
		}
		return tx.ShareApp(appID, hostID)
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errcode.New(errcode.HostNotFound, "no paired host has that id")
	case err != nil:
		return passCoded(d.log, "share app", err)
	}
	d.log.Info("app shared", "app_id", appID, "host_id", hostID)
	return nil
}

// UnshareApp takes appID away from hostID: its share, or, when hostID owns
// the app, its ownership (the app is then the administrator's until
// shared). The administrator's act. Errors: HOST_NOT_FOUND when the host
// had no access to the app.
func (d *Book) UnshareApp(ctx context.Context, appID, hostID string) error {
	if err := CheckAppID(appID); err != nil {
		return err
	}
	if _, ok := hostauth.CallerHost(ctx); ok {
		return errcode.New(errcode.Forbidden, "only the administrator unshares an app")
	}
	var had bool
	err := d.store.Update(ctx, func(tx *store.Tx) error {
		var err error
		had, err = tx.UnshareApp(appID, hostID)
		return err
	})
	d.reach.Forget() // after the commit (or a failed write: harmless)
	if err != nil {
		return Internal(d.log, "unshare app", err)
	}
	if !had {
		return errcode.New(errcode.HostNotFound, "that host has no access to the app")
	}
	d.log.Info("app unshared", "app_id", appID, "host_id", hostID)
	return nil
}

// ForgetReach forgets which apps each host holds: after an unpairing.
func (d *Book) ForgetReach() { d.reach.Forget() }
