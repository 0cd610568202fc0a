package grants

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/maphash"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
)

// The index a start builds. New reads every row once, in one scan that
// keeps each row's status, imported flag and ceiling (hosts interned,
// rows with one allowed_hosts column sharing one slice) and a fingerprint
// of the row version, and neither reads nor parses any requirement: with
// 100,000 rows, parsing them all was most of the start's time and holding
// them most of its memory. An app's rows are read and parsed on the first
// use of any of them (appLoad), once per app per start; a writer's
// publication replaces the entry with one it built parsed from its own
// transaction.

// appLoadTimeout bounds the one read of an app's rows on first use.
const appLoadTimeout = 10 * time.Second

// appLoad is the first-use load of one app's rows in an entry the start
// built. It runs once (sync.Once: every reader of a parsed field reaches
// it through grantRow.load first, so its writes happen before their
// reads); a row it cannot vouch for grants nothing:
//
//   - the read fails: every row of the app grants nothing until the app's
//     next write or the next start (logged);
//   - a row changed since the scan (its fingerprint differs: a writer
//     committed and is about to publish its own entry, or storage was
//     altered): that row grants nothing in this entry;
//   - a row no longer validates or its templates do not compile: as in
//     any build, it grants nothing.
type AppLoad struct {
	once sync.Once
	St   *store.Store
	Log  *slog.Logger
	App  string
	Rows []GrantRow // the entry's rows (the same backing array)
}

func (l *AppLoad) fill() {
	ctx, cancel := context.WithTimeout(context.Background(), appLoadTimeout)
	defer cancel()
	var h maphash.Hash
	pc := NewParseCache()
	loaded := make([]bool, len(l.Rows))
	err := l.St.AppConnectionHeads(ctx, l.App, func(c *store.ConnectionHead) error {
		i := slices.IndexFunc(l.Rows, func(g GrantRow) bool { return g.Slot == string(c.Slot) })
		if i < 0 {
			return nil // written since the scan: its writer publishes it
		}
		g := &l.Rows[i]
		if rowVersion(&h, c) != g.Version {
			l.Log.Info("connection changed since the start's scan; it grants nothing until its writer publishes", "app_id", l.App, "slot", g.Slot)
			return nil
		}
		if p := pc.Grant(string(c.RequirementJSON)); p != nil {
			loaded[i] = true
			g.Req, g.Templates, g.Injects, g.Claims = p.req, p.templates, p.injects, p.claims
		}
		return nil
	})
	if err != nil {
		// Nothing half-read may grant.
		for i := range l.Rows {
			if loaded[i] {
				g := &l.Rows[i]
				g.Req, g.Templates, g.Injects, g.Claims = nil, nil, false, nil
			}
		}
		l.Log.Error("read an app's connections for the grant index; they grant nothing until its next write", "app_id", l.App, "err", err)
	}
}

// versionSeed keys rowVersion for this process: nobody outside it can
// make two row versions collide on purpose.
var versionSeed = maphash.MakeSeed()

// rowVersion fingerprints one version of a row: what it grants by (its
// status, imported flag and allowed_hosts) and what tells its
// requirement's versions apart (requirement_version, which every writer
// bumps when the requirement changes, and updated_at, which every writer
// stamps; both in ConnectionHead.Version), each length-prefixed.
func rowVersion(h *maphash.Hash, c *store.ConnectionHead) uint64 {
	h.SetSeed(versionSeed)
	var n [8]byte
	for _, b := range [][]byte{c.Status, c.AllowedHosts, c.Version} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	return h.Sum64()
}

// statusOf is a stored status as one of the constants (no allocation for
// the three legal values).
func statusOf(b []byte) Status {
	switch string(b) {
	case string(StatusDeclared):
		return StatusDeclared
	case string(StatusApproved):
		return StatusApproved
	case string(StatusRevoked):
		return StatusRevoked
	}
	return Status(b)
}

// startIndex scans every row into an index whose entries load on first
// use. Rows mostly arrive grouped by app and in slot order (storage order
// is insert order), so the last app, the first slot names met and the last
// ceiling are tried before the maps, and an app's rows are sorted only
// when they are out of order. The
// collector runs less often during the scan: nearly everything it
// allocates stays live, so collecting only finds the index.
func StartIndex(ctx context.Context, st *store.Store, log *slog.Logger) (*GrantIndex, error) {
	defer debug.SetGCPercent(debug.SetGCPercent(startGCPercent))
	var (
		apps     = map[string]*AppLoad{}
		slots    = map[string]string{}
		few      []string // the first slot names met, interned: tried before slots
		hosts    = map[string]string{}
		ceilings = map[string][]string{}
		h        maphash.Hash
		last     *AppLoad
		lastCol  []byte
		lastCeil []string
		slab     []Parsed
		chunk    []GrantRow // rows of apps met in one run, each app's a clipped slice of it
		tail     *AppLoad   // the app whose rows end chunk
	)
	err := st.EachConnectionHead(ctx, func(c *store.ConnectionHead) error {
		l := last
		if l == nil || l.App != string(c.AppID) {
			if l = apps[string(c.AppID)]; l == nil {
				l = &AppLoad{St: st, Log: log, App: string(c.AppID)}
				apps[l.App] = l
			}
			last = l
		}
		slot, ok := "", false
		for _, s := range few {
			if s == string(c.Slot) {
				slot, ok = s, true
				break
			}
		}
		if !ok {
			if slot, ok = slots[string(c.Slot)]; !ok {
				slot = string(c.Slot)
				slots[slot] = slot
				if len(few) < 16 {
					few = append(few, slot)
				}
			}
		}
		if len(slab) == cap(slab) {
			slab = make([]Parsed, 0, 1024)
		}
		slab = append(slab, Parsed{Lazy: l, Version: rowVersion(&h, c)})
		g := GrantRow{Slot: slot, Status: statusOf(c.Status), Imported: c.Imported, Parsed: &slab[len(slab)-1]}
		if g.Status == StatusApproved {
			if lastCol == nil || !bytes.Equal(lastCol, c.AllowedHosts) {
				ceiling, ok := ceilings[string(c.AllowedHosts)]
				if !ok {
					ceiling = decodeHosts(string(c.AllowedHosts))
					for i, host := range ceiling {
						if v, ok := hosts[host]; ok {
							ceiling[i] = v
						} else {
							hosts[host] = host
						}
					}
					ceilings[string(c.AllowedHosts)] = ceiling
				}
				lastCol, lastCeil = append(lastCol[:0], c.AllowedHosts...), ceiling
			}
			g.Ceiling = lastCeil
		}
		// An app's rows met in one run share a chunk; each app's slice is
		// clipped (cap == len), so an append that is not the chunk's own
		// copies instead of writing over the next app's rows.
		switch n := len(l.Rows); {
		case l == tail && len(chunk) < cap(chunk):
			chunk = append(chunk, g)
			l.Rows = chunk[len(chunk)-n-1 : len(chunk) : len(chunk)]
		case l.Rows == nil || l == tail:
			// A new app, or the chunk is full in the middle of one: the
			// app's rows move to a new chunk when they do not fit.
			if cap(chunk)-len(chunk) < n+1 {
				chunk = make([]GrantRow, 0, max(1024, 2*(n+1)))
			}
			chunk = append(append(chunk, l.Rows...), g)
			l.Rows = chunk[len(chunk)-n-1 : len(chunk) : len(chunk)]
			tail = l
		default:
			l.Rows = append(l.Rows, g) // met again after another app's rows
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	idx := &GrantIndex{Apps: make(map[string]*AppGrants, len(apps))}
	byslot := func(a, b GrantRow) int { return strings.Compare(a.Slot, b.Slot) }
	for app, l := range apps {
		if !slices.IsSortedFunc(l.Rows, byslot) {
			slices.SortFunc(l.Rows, byslot)
		}
		l.Rows = slices.Clip(l.Rows)
		idx.Apps[app] = &AppGrants{Rows: l.Rows}
	}
	return idx, nil
}

// startGCPercent is GOGC while the start scans: the heap may grow to five
// times what is live before a collection, instead of twice.
const startGCPercent = 400

// Reindex rebuilds the whole index from storage with the start's scan,
// under the writers' lock: for rows written outside the writers (the
// tests' forged rows).
func (d *Book) Reindex(ctx context.Context) error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	idx, err := StartIndex(ctx, d.store, d.log.With("component", "index"))
	if err != nil {
		return Internal(d.log, "build grant index", err)
	}
	d.index.Store(idx)
	return nil
}
