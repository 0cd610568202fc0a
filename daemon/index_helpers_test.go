package daemon

import (
	"context"

	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
)

// grants returns appID's rows from the current snapshot (nil when the app
// has none): the tests' look at the index. Production code loads the
// index once per request instead (fetch.go).
func (d *Daemon) appRows(appID string) *grants.AppGrants {
	return d.grants.Snapshot().Apps[appID]
}

// rebuildIndex builds the whole index from storage.
func (d *Daemon) rebuildIndex(ctx context.Context) error { return d.grants.Reindex(ctx) }

func indexOf(rows []store.Connection, c *grants.ParseCache) *grants.GrantIndex {
	byApp := map[string][]store.Connection{}
	for _, r := range rows {
		byApp[r.AppID] = append(byApp[r.AppID], r)
	}
	idx := &grants.GrantIndex{Apps: make(map[string]*grants.AppGrants, len(byApp))}
	for app, rs := range byApp {
		idx.Apps[app] = grants.BuildAppGrantsWith(rs, c)
	}
	return idx
}
