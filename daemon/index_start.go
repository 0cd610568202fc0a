package daemon

import (
	"context"
	"encoding/binary"
	"hash/maphash"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
)

// The index a start builds. New reads every row once, in one scan that
// keeps each row's status, imported flag and ceiling (hosts interned,
// rows with one allowed_hosts column sharing one slice) and a fingerprint
// of the row version, and neither parses nor holds any requirement: with
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
type appLoad struct {
	once sync.Once
	st   *store.Store
	log  *slog.Logger
	app  string
	rows []grantRow // the entry's rows (the same backing array)
}

func (l *appLoad) fill() {
	ctx, cancel := context.WithTimeout(context.Background(), appLoadTimeout)
	defer cancel()
	rows, err := store.Read(ctx, l.st, func(tx *store.Tx) ([]store.Connection, error) { return tx.Connections(l.app) })
	if err != nil {
		l.log.Error("read an app's connections for the grant index; they grant nothing until its next write", "app_id", l.app, "err", err)
		return
	}
	var h maphash.Hash
	pc := newParseCache()
	for i := range l.rows {
		g := &l.rows[i]
		j := slices.IndexFunc(rows, func(r store.Connection) bool { return r.Slot == g.slot })
		if j < 0 {
			continue // deleted since the scan: nothing to grant
		}
		r := &rows[j]
		if rowVersion(&h, []byte(r.Status), r.Imported, []byte(r.AllowedHosts), []byte(r.RequirementJSON)) != g.version {
			l.log.Info("connection changed since the start's scan; it grants nothing until its writer publishes", "app_id", l.app, "slot", g.slot)
			continue
		}
		if p := pc.grant(r.RequirementJSON); p != nil {
			g.req, g.templates, g.injects, g.claims = p.req, p.templates, p.injects, p.claims
		}
	}
}

// versionSeed keys rowVersion for this process: nobody outside it can
// make two row versions collide on purpose.
var versionSeed = maphash.MakeSeed()

// rowVersion fingerprints what a row grants by: its status, imported
// flag, allowed_hosts and requirement_json, each length-prefixed.
func rowVersion(h *maphash.Hash, status []byte, imported bool, hosts, req []byte) uint64 {
	h.SetSeed(versionSeed)
	var n [8]byte
	for _, b := range [][]byte{status, hosts, req} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	if imported {
		h.WriteByte(1)
	} else {
		h.WriteByte(0)
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
// use.
func startIndex(ctx context.Context, st *store.Store, log *slog.Logger) (*grantIndex, error) {
	var (
		apps     = map[string]*appLoad{}
		slots    = map[string]string{}
		hosts    = map[string]string{}
		ceilings = map[string][]string{}
		h        maphash.Hash
	)
	err := st.EachConnectionHead(ctx, func(c *store.ConnectionHead) error {
		l := apps[string(c.AppID)]
		if l == nil {
			l = &appLoad{st: st, log: log, app: string(c.AppID)}
			apps[l.app] = l
		}
		slot, ok := slots[string(c.Slot)]
		if !ok {
			slot = string(c.Slot)
			slots[slot] = slot
		}
		g := grantRow{slot: slot, status: statusOf(c.Status), imported: c.Imported,
			parsed: &parsed{lazy: l, version: rowVersion(&h, c.Status, c.Imported, c.AllowedHosts, c.RequirementJSON)}}
		if g.status == StatusApproved {
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
			g.ceiling = ceiling
		}
		l.rows = append(l.rows, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	idx := &grantIndex{apps: make(map[string]*appGrants, len(apps))}
	for app, l := range apps {
		slices.SortFunc(l.rows, func(a, b grantRow) int { return strings.Compare(a.slot, b.slot) })
		l.rows = slices.Clip(l.rows)
		idx.apps[app] = &appGrants{rows: l.rows}
	}
	return idx, nil
}
