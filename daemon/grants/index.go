package grants

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
type GrantIndex struct {
	Apps map[string]*AppGrants
}

// appGrants are one app's rows, in slot order.
type AppGrants struct {
	Rows []GrantRow
}

// grantRow is one connection row. Its status, imported flag and ceiling
// are held from the build; the requirement (the embedded *parsed) is
// parsed at a writer's build, or, for an entry the start built, on the
// first use of the app's rows. Read the parsed fields (req, templates,
// injects, claims) only after load: approved, claimsHost, requirement and
// appGrants.row call it, and every reader reaches a row through one of
// them before it reads anything parsed.
type GrantRow struct {
	Slot     string
	Status   Status
	Imported bool
	// ceiling is the frozen allowed_hosts column of an approved row, in
	// stored order (sorted, unique, normalized); rows with the same column
	// share one slice, and its hosts are interned.
	Ceiling []string
	*Parsed
}

// parsed is a row's requirement as the executor reads it. Everything in
// it is immutable once loaded; rows that store the same requirement share
// one.
type Parsed struct {
	// req is the current requirement (never the pending one: §12.3), nil
	// when the stored JSON no longer validates, its templates do not
	// compile, or (an entry the start built) the row failed to load; such
	// a row grants nothing.
	Req *requirement.Requirement
	// claims are the hosts the requirement asks for; they tell a request to
	// a host of a declared or imported row apart from one nobody claims.
	Claims []string
	// templates are req's compiled header and query templates (nil when req
	// has none or is nil).
	Templates *template.Set
	// injects reports whether templates has any header or query template:
	// only then does gate 8 read the credential slice.
	Injects bool
	// lazy loads the fields above on first use (nil: loaded at build);
	// version fingerprints the row version the entry was built from.
	Lazy    *AppLoad
	Version uint64
}

// load makes g's parsed fields readable: a no-op for a row a writer
// built, the app's one load for a row the start built.
func (g *GrantRow) Load() {
	if l := g.Parsed.Lazy; l != nil {
		l.once.Do(l.fill)
	}
}

// requirement returns the row's current requirement, nil when it grants
// nothing (see parsed.req).
func (g *GrantRow) Requirement() *requirement.Requirement {
	g.Load()
	return g.Req
}

// claimsHost reports whether the row's requirement asks for host.
func (g *GrantRow) ClaimsHost(host string) bool {
	g.Load()
	for _, h := range g.Claims {
		if h == host {
			return true
		}
	}
	return false
}

// row returns the row in slot, loaded, or nil (also for a nil receiver).
func (a *AppGrants) Row(slot string) *GrantRow {
	if a == nil {
		return nil
	}
	for i := range a.Rows {
		if a.Rows[i].Slot == slot {
			g := &a.Rows[i]
			g.Load()
			return g
		}
	}
	return nil
}

// approved reports whether the row is a usable grant.
func (g *GrantRow) Approved() bool {
	if g.Status != StatusApproved {
		return false
	}
	g.Load()
	return g.Req != nil
}

// inCeiling reports whether host (normalized) is a member of the frozen
// ceiling: exact membership, no suffix or wildcard matching.
func (g *GrantRow) InCeiling(host string) bool {
	for _, h := range g.Ceiling {
		if h == host {
			return true
		}
	}
	return false
}

func BuildAppGrants(rows []store.Connection) *AppGrants {
	return BuildAppGrantsWith(rows, NewParseCache())
}

// buildAppGrantsWith builds one app's entry, parsing each distinct
// requirement and ceiling once through c. Rows that store the same
// requirement share its parse, templates and claimed hosts, and rows with
// the same ceiling share one slice: everything shared is immutable once
// built (the index is a snapshot nobody writes).
func BuildAppGrantsWith(rows []store.Connection, c *ParseCache) *AppGrants {
	a := &AppGrants{Rows: make([]GrantRow, 0, len(rows))}
	for _, row := range rows {
		g := GrantRow{Slot: row.Slot, Status: Status(row.Status), Imported: row.Imported, Parsed: c.loaded(row.RequirementJSON)}
		if g.Status == StatusApproved {
			g.Ceiling = c.hosts(row.AllowedHosts)
		}
		a.Rows = append(a.Rows, g)
	}
	return a
}

// parseCache parses each distinct stored requirement once, for a
// writer's build of an app's entry, an app's first-use load and the
// status report: rows often store the same
// requirement over and over, and parsing it is most of their work. Not
// safe for concurrent use; one build owns one.
type ParseCache struct {
	reqs     map[string]*parsedReq
	ceilings map[string][]string
	rows     map[string]*Parsed
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

func NewParseCache() *ParseCache {
	return &ParseCache{reqs: map[string]*parsedReq{}, ceilings: map[string][]string{}, rows: map[string]*Parsed{}}
}

func (c *ParseCache) entry(raw string) *parsedReq {
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
func (c *ParseCache) Grant(raw string) *parsedReq {
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
func (c *ParseCache) loaded(raw string) *Parsed {
	if p, ok := c.rows[raw]; ok {
		return p
	}
	p := &Parsed{}
	if g := c.Grant(raw); g != nil {
		p.Req, p.Templates, p.Injects, p.Claims = g.req, g.templates, g.injects, g.claims
	}
	c.rows[raw] = p
	return p
}

// hosts decodes an allowed_hosts column once per distinct value.
func (c *ParseCache) hosts(col string) []string {
	h, ok := c.ceilings[col]
	if !ok {
		h = decodeHosts(col)
		c.ceilings[col] = h
	}
	return h
}

// publishApp replaces one app's entry. Callers hold writeMu, so snapshots
// are published in commit order.
func (d *Book) publishApp(appID string, a *AppGrants) {
	old := d.index.Load()
	next := &GrantIndex{Apps: make(map[string]*AppGrants, len(old.Apps)+1)}
	for k, v := range old.Apps {
		next.Apps[k] = v
	}
	if a == nil || len(a.Rows) == 0 {
		delete(next.Apps, appID)
	} else {
		next.Apps[appID] = a
	}
	d.index.Store(next)
}
