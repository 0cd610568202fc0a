package daemon

import (
	"context"

	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/template"
)

// grantIndex is an immutable snapshot of every app's connection rows as
// the executor needs them. A writer builds the new entry of its app inside
// its transaction and publishes a new snapshot after the commit; readers
// load the current snapshot with one atomic read and never take a lock or
// run SQL.
type grantIndex struct {
	apps map[string]*appGrants
}

// appGrants are one app's rows, in slot order.
type appGrants struct {
	rows []grantRow
}

// grantRow is one connection row, parsed once at publication.
type grantRow struct {
	slot     string
	status   Status
	imported bool
	// req is the current requirement (never the pending one: §12.3), nil
	// when the stored JSON no longer validates; such a row grants nothing.
	req *requirement.Requirement
	// ceiling is the frozen allowed_hosts column of an approved row, in
	// stored order (sorted, unique, normalized).
	ceiling []string
	// claims are the hosts the requirement asks for; they tell a request to
	// a host of a declared or imported row apart from one nobody claims.
	claims []string
	// templates are req's compiled header and query templates (nil when req
	// has none or is nil).
	templates *template.Set
	// injects reports whether templates has any header or query template:
	// only then does gate 8 read the credential slice.
	injects bool
}

// claimsHost reports whether the row's requirement asks for host.
func (g *grantRow) claimsHost(host string) bool {
	for _, h := range g.claims {
		if h == host {
			return true
		}
	}
	return false
}

// row returns the row in slot, or nil (also for a nil receiver).
func (a *appGrants) row(slot string) *grantRow {
	if a == nil {
		return nil
	}
	for i := range a.rows {
		if a.rows[i].slot == slot {
			return &a.rows[i]
		}
	}
	return nil
}

// approved reports whether the row is a usable grant.
func (g *grantRow) approved() bool { return g.status == StatusApproved && g.req != nil }

// inCeiling reports whether host (normalized) is a member of the frozen
// ceiling: exact membership, no suffix or wildcard matching.
func (g *grantRow) inCeiling(host string) bool {
	for _, h := range g.ceiling {
		if h == host {
			return true
		}
	}
	return false
}

func buildAppGrants(rows []store.Connection) *appGrants {
	a := &appGrants{rows: make([]grantRow, 0, len(rows))}
	for _, row := range rows {
		g := grantRow{slot: row.Slot, status: Status(row.Status), imported: row.Imported}
		if r, vs := parseStored(row.RequirementJSON); len(vs) == 0 {
			set, findings := template.Compile(r.FieldKeys(), r.Request.Templates())
			if len(findings) == 0 {
				g.req, g.templates = r, set
				g.injects = len(set.HeaderNames())+len(set.QueryNames()) > 0
				g.claims = requirement.DeriveAllowedHosts(r)
			}
		}
		if g.status == StatusApproved {
			g.ceiling = decodeHosts(row.AllowedHosts)
		}
		a.rows = append(a.rows, g)
	}
	return a
}

// publishApp replaces one app's entry. Callers hold writeMu, so snapshots
// are published in commit order.
func (d *Daemon) publishApp(appID string, a *appGrants) {
	old := d.index.Load()
	next := &grantIndex{apps: make(map[string]*appGrants, len(old.apps)+1)}
	for k, v := range old.apps {
		next.apps[k] = v
	}
	if a == nil || len(a.rows) == 0 {
		delete(next.apps, appID)
	} else {
		next.apps[appID] = a
	}
	d.index.Store(next)
}

// rebuildIndex builds the whole index from storage, at start.
func (d *Daemon) rebuildIndex(ctx context.Context) error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	rows, err := d.store.AllConnections(ctx)
	if err != nil {
		return d.internal("build grant index", err)
	}
	d.index.Store(indexOf(rows))
	return nil
}

func indexOf(rows []store.Connection) *grantIndex {
	byApp := map[string][]store.Connection{}
	for _, r := range rows {
		byApp[r.AppID] = append(byApp[r.AppID], r)
	}
	idx := &grantIndex{apps: make(map[string]*appGrants, len(byApp))}
	for app, rs := range byApp {
		idx.apps[app] = buildAppGrants(rs)
	}
	return idx
}
