package daemon

import (
	"context"

	"github.com/snug/snugd/daemon/internal/store"
)

// grants returns appID's rows from the current snapshot (nil when the app
// has none): the tests' look at the index. Production code loads the
// index once per request instead (fetch.go).
func (d *Daemon) grants(appID string) *appGrants {
	return d.index.Load().apps[appID]
}

// rebuildIndex builds the whole index from storage.
func (d *Daemon) rebuildIndex(ctx context.Context) error {
	rows, err := d.store.AllConnections(ctx)
	if err != nil {
		return d.internal("build grant index", err)
	}
	d.rebuildIndexFrom(rows, newParseCache())
	return nil
}

// rebuildIndexFrom builds the whole index from rows (every stored row),
// parsed through c, as writers build an entry.
func (d *Daemon) rebuildIndexFrom(rows []store.Connection, c *parseCache) {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	d.index.Store(indexOf(rows, c))
}

func indexOf(rows []store.Connection, c *parseCache) *grantIndex {
	byApp := map[string][]store.Connection{}
	for _, r := range rows {
		byApp[r.AppID] = append(byApp[r.AppID], r)
	}
	idx := &grantIndex{apps: make(map[string]*appGrants, len(byApp))}
	for app, rs := range byApp {
		idx.apps[app] = buildAppGrantsWith(rs, c)
	}
	return idx
}
