package daemon

import (
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/template"
)

// grantIndex is an immutable snapshot of every app's connection rows as
// the executor needs them. A writer builds the new entry of its app inside
// its transaction and publishes a new snapshot after the commit; readers
// load the current snapshot with one atomic read and never take a lock or
// run SQL, except once per app after a start (see appLoad).
type grantIndex struct {
	apps map[string]*appGrants
}

// appGrants are one app's rows, in slot order.
type appGrants struct {
	rows []grantRow
}

// grantRow is one connection row. Its status, imported flag and ceiling
// are held from the build; the requirement (the embedded *parsed) is
// parsed at a writer's build, or, for an entry the start built, on the
// first use of the app's rows. Read the parsed fields (req, templates,
// injects, claims) only after load: approved, claimsHost, requirement and
// appGrants.row call it, and every reader reaches a row through one of
// them before it reads anything parsed.
type grantRow struct {
	slot     string
	status   Status
	imported bool
	// ceiling is the frozen allowed_hosts column of an approved row, in
	// stored order (sorted, unique, normalized); rows with the same column
	// share one slice, and its hosts are interned.
	ceiling []string
	*parsed
}

// parsed is a row's requirement as the executor reads it. Everything in
// it is immutable once loaded; rows that store the same requirement share
// one.
type parsed struct {
	// req is the current requirement (never the pending one: §12.3), nil
	// when the stored JSON no longer validates, its templates do not
	// compile, or (an entry the start built) the row failed to load; such
	// a row grants nothing.
	req *requirement.Requirement
	// claims are the hosts the requirement asks for; they tell a request to
	// a host of a declared or imported row apart from one nobody claims.
	claims []string
	// templates are req's compiled header and query templates (nil when req
	// has none or is nil).
	templates *template.Set
	// injects reports whether templates has any header or query template:
	// only then does gate 8 read the credential slice.
	injects bool
	// lazy loads the fields above on first use (nil: loaded at build);
	// version fingerprints the row version the entry was built from.
	lazy    *appLoad
	version uint64
}

// load makes g's parsed fields readable: a no-op for a row a writer
// built, the app's one load for a row the start built.
func (g *grantRow) load() {
	if l := g.parsed.lazy; l != nil {
		l.once.Do(l.fill)
	}
}

// requirement returns the row's current requirement, nil when it grants
// nothing (see parsed.req).
func (g *grantRow) requirement() *requirement.Requirement {
	g.load()
	return g.req
}

// claimsHost reports whether the row's requirement asks for host.
func (g *grantRow) claimsHost(host string) bool {
	g.load()
	for _, h := range g.claims {
		if h == host {
			return true
		}
	}
	return false
}

// row returns the row in slot, loaded, or nil (also for a nil receiver).
func (a *appGrants) row(slot string) *grantRow {
	if a == nil {
		return nil
	}
	for i := range a.rows {
		if a.rows[i].slot == slot {
			g := &a.rows[i]
			g.load()
			return g
		}
	}
	return nil
}

// approved reports whether the row is a usable grant.
func (g *grantRow) approved() bool {
	if g.status != StatusApproved {
		return false
	}
	g.load()
	return g.req != nil
}

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
	return buildAppGrantsWith(rows, newParseCache())
}

// buildAppGrantsWith builds one app's entry, parsing each distinct
// requirement and ceiling once through c. Rows that store the same
// requirement share its parse, templates and claimed hosts, and rows with
// the same ceiling share one slice: everything shared is immutable once
// built (the index is a snapshot nobody writes).
func buildAppGrantsWith(rows []store.Connection, c *parseCache) *appGrants {
	a := &appGrants{rows: make([]grantRow, 0, len(rows))}
	for _, row := range rows {
		g := grantRow{slot: row.Slot, status: Status(row.Status), imported: row.Imported, parsed: c.loaded(row.RequirementJSON)}
		if g.status == StatusApproved {
			g.ceiling = c.hosts(row.AllowedHosts)
		}
		a.rows = append(a.rows, g)
	}
	return a
}

// parseCache parses each distinct stored requirement once, for a
// writer's build of an app's entry, an app's first-use load and the
// status report: rows often store the same
// requirement over and over, and parsing it is most of their work. Not
// safe for concurrent use; one build owns one.
type parseCache struct {
	reqs     map[string]*parsedReq
	ceilings map[string][]string
	rows     map[string]*parsed
}

// parsedReq is one stored requirement parsed: req nil when it no longer
// validates; the rest what the index needs, built on first use.
type parsedReq struct {
	req       *requirement.Requirement
	compiled  bool
	usable    bool // its templates compile: the index may grant with it
	templates *template.Set
	injects   bool
	claims    []string
}

func newParseCache() *parseCache {
	return &parseCache{reqs: map[string]*parsedReq{}, ceilings: map[string][]string{}, rows: map[string]*parsed{}}
}

func (c *parseCache) entry(raw string) *parsedReq {
	p, ok := c.reqs[raw]
	if !ok {
		p = &parsedReq{}
		if r, vs := parseStored(raw); len(vs) == 0 {
			p.req = r
		}
		c.reqs[raw] = p
	}
	return p
}

// grant returns raw as the index holds it, or nil when it does not
// validate or its templates do not compile (such a row grants nothing).
func (c *parseCache) grant(raw string) *parsedReq {
	p := c.entry(raw)
	if p.req == nil {
		return nil
	}
	if !p.compiled {
		p.compiled = true
		set, findings := template.Compile(p.req.FieldKeys(), p.req.Request.Templates())
		if len(findings) == 0 {
			p.usable, p.templates = true, set
			p.injects = len(set.HeaderNames())+len(set.QueryNames()) > 0
			p.claims = requirement.DeriveAllowedHosts(p.req)
		}
	}
	if !p.usable {
		return nil
	}
	return p
}

// loaded returns raw as a row's loaded requirement, one per distinct
// requirement (rows that store the same one share it).
func (c *parseCache) loaded(raw string) *parsed {
	if p, ok := c.rows[raw]; ok {
		return p
	}
	p := &parsed{}
	if g := c.grant(raw); g != nil {
		p.req, p.templates, p.injects, p.claims = g.req, g.templates, g.injects, g.claims
	}
	c.rows[raw] = p
	return p
}

// hosts decodes an allowed_hosts column once per distinct value.
func (c *parseCache) hosts(col string) []string {
	h, ok := c.ceilings[col]
	if !ok {
		h = decodeHosts(col)
		c.ceilings[col] = h
	}
	return h
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
