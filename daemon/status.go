package daemon

import (
	"context"
	"runtime"
	"time"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/pairing"
	"github.com/snug/snugd/linkdevice"
)

// StatusReport is the daemon's part of GET /v1/status and snugd ctl status:
// where its data is and counts of what it holds. It never carries a
// credential, a token or a credentialed URL (secret-free diagnostics), so
// it is safe to paste into a bug report.
type StatusReport struct {
	DataDir     string
	Apps        int // apps with at least one connection row
	Connections ConnectionCounts
	Hosts       HostCounts
	// Helpers lists the linked-device helpers of the supervisor's table
	// and their state; empty (never nil) when none runs.
	Helpers []pairing.HelperStatus
	// HelperSandbox is the sandbox the helpers run in (Landlock level,
	// no_new_privs, whether descendants end with the session); nil when
	// no helper supervisor runs.
	HelperSandbox *linkdevice.Confinement
	// PendingConfirms and Standing are the parked confirms and the armed
	// standing approvals the caller may see.
	PendingConfirms int
	Standing        []fetch.Standing
	// Damaged is the sentence of the database's damage ("" when none was
	// found): the store then refuses every write until a restart.
	Damaged string
	// DiskFree is the free space of the disk holding the data directory,
	// in bytes; 0 when it cannot be read here.
	DiskFree uint64
	// Unwritable is the fixed sentence of a journal that cannot be
	// written ("snugd cannot record requests because its disk is full",
	// "" while it can), and UnwritableSince when its last commit failed:
	// every credentialed request is then refused before its send, until
	// a journal write succeeds again.
	Unwritable      string
	UnwritableSince time.Time
	// Goroutines is the daemon's goroutine count, for the ctl channel
	// only (0 for a paired host: it would show other hosts' traffic):
	// a leak shows as a count that grows under steady load.
	Goroutines int
}

// ConnectionCounts counts connection rows by status. NeedsReapproval
// (approved rows with a staged change), Imported, Invalid (rows whose
// stored requirement no longer validates, which grant nothing) and
// Unreadable (rows with a stored value that does not open under the
// master key, as the store has seen: no value is opened for the count)
// overlap the three statuses; they are what an administrator should look
// at.
type ConnectionCounts struct {
	Total           int
	Declared        int
	Approved        int
	Revoked         int
	NeedsReapproval int
	Imported        int
	Invalid         int
	Unreadable      int
}

// HostCounts counts paired hosts and pairing requests waiting for
// approval.
type HostCounts struct {
	Paired          int
	PendingPairings int
}

// StatusReport reads the daemon's status, as ctx's caller may see it, in
// one read transaction: a paired host counts its own apps only.
func (d *Daemon) StatusReport(ctx context.Context) (StatusReport, error) {
	var (
		rows    []store.Connection
		hosts   []store.Host
		pending int
	)
	now := d.now()
	err := d.store.View(ctx, func(tx *store.Tx) error {
		var err error
		if rows, err = tx.AllConnections(); err != nil {
			return err
		}
		if hosts, err = tx.Hosts(); err != nil {
			return err
		}
		// Counted from the pairings' index: a flood of requests costs
		// this read nothing.
		pending, err = tx.CountLivePairings(now)
		return err
	})
	if err != nil {
		return StatusReport{}, grants.Internal(d.log, "read status", err)
	}
	r := StatusReport{DataDir: d.DataDir(), Helpers: d.devices.HelperStatuses()}
	if c, ok := d.devices.HelperSandbox(); ok {
		r.HelperSandbox = &c
	}
	apps := map[string]bool{}
	var mine func(appID string) bool // a host counts its own apps only (grants/owners.go)
	if _, ok := hostauth.CallerHost(ctx); ok {
		mine = func(appID string) bool {
			ok, err := d.grants.AppVisible(ctx, appID)
			return err == nil && ok
		}
	}
	seen := map[string]bool{}
	pc := grants.NewParseCache()
	for i := range rows {
		c := &rows[i]
		if mine != nil {
			v, ok := seen[c.AppID]
			if !ok {
				v = mine(c.AppID)
				seen[c.AppID] = v
			}
			if !v {
				continue
			}
		}
		apps[c.AppID] = true
		r.Connections.Total++
		// What the index would grant nothing by, read from the rows in
		// hand: counting it from the index would load every app's rows.
		if pc.Grant(c.RequirementJSON) == nil {
			r.Connections.Invalid++
		}
		switch grants.Status(c.Status) {
		case grants.StatusDeclared:
			r.Connections.Declared++
		case grants.StatusApproved:
			r.Connections.Approved++
		case grants.StatusRevoked:
			r.Connections.Revoked++
		}
		if c.NeedsReapproval() {
			r.Connections.NeedsReapproval++
		}
		if c.Imported {
			r.Connections.Imported++
		}
		if grants.Status(c.Status) != grants.StatusRevoked && len(d.records.UnreadableFields(c.AppID, c.Slot)) > 0 {
			r.Connections.Unreadable++
		}
	}
	r.Apps = len(apps)
	r.PendingConfirms = len(d.exec.Confirms(ctx))
	if err := d.store.Damaged(); err != nil {
		r.Damaged = err.Error()
	}
	if msg, since, ok := d.journal.Unwritable(); ok {
		r.Unwritable, r.UnwritableSince = msg, since
	}
	if free, _, err := store.DiskSpace(d.store.Dir()); err == nil {
		r.DiskFree = free
	}
	r.Standing = d.exec.Standings(ctx)
	r.Hosts.Paired = len(hosts)
	r.Hosts.PendingPairings = pending
	if mine == nil {
		r.Goroutines = runtime.NumGoroutine()
	}
	return r, nil
}
