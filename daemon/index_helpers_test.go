package daemon

// grants returns appID's rows from the current snapshot (nil when the app
// has none): the tests' look at the index. Production code loads the
// index once per request instead (fetch.go).
func (d *Daemon) grants(appID string) *appGrants {
	return d.index.Load().apps[appID]
}
