package daemon

import "context"

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
