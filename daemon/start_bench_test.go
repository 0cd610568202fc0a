package daemon

import (
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
)

// startRequirement is the bench's api_key requirement (scripts/bench),
// with its slot and host filled in per row.
const startRequirement = `{"slot":"%s","provider":{"name":"Bench API","homepageUrl":"https://%s"},"kind":"api_key","fields":[{"key":"api_key","label":"API key","type":"secret","required":true}],"request":{"headerTemplate":{"X-Api-Key":"{{api_key}}"}},"declaredApiHosts":["%s"]}`

// startRows returns n approved rows as scripts/bench seeds them: 8 slots
// per app, each app its own host, so every requirement is distinct.
func startRows(n int) []store.Connection {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	rows := make([]store.Connection, n)
	for i := range rows {
		app, slot, host := fmt.Sprintf("seed-%06d", i/8), fmt.Sprintf("s%d", i%8), fmt.Sprintf("api%06d.bench.test", i/8)
		rows[i] = store.Connection{
			AppID: app, Slot: slot, RequirementJSON: fmt.Sprintf(startRequirement, slot, host, host), RequirementVersion: 1,
			Provenance: store.ProvenanceUserDocs, Status: store.StatusApproved, AllowedHosts: `["` + host + `"]`, ApprovedAt: &now,
		}
	}
	return rows
}

// seedApproved writes rows as approved rows straight into the store.
func seedApproved(b *testing.B, dir string, n int) {
	st, err := store.Open(b.Context(), store.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	err = st.Update(b.Context(), func(tx *store.Tx) error {
		for _, r := range startRows(n) {
			if _, err := tx.UpsertConnection(r); err != nil {
				return err
			}
		}
		return nil
	})
	st.Close()
	if err != nil {
		b.Fatal(err)
	}
}

// seedImported brings n rows in as scripts/bench does: user DB files of
// at most store.MaxImportRows rows through Import, so they land declared
// and imported, with whatever else an import writes (journal, owners).
func seedImported(b *testing.B, dir string, n int) {
	d, err := newBuild(b.Context(), Config{DataDir: dir}, testBuild)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	rows := startRows(n)
	for from := 0; from < n; from += store.MaxImportRows {
		to := min(from+store.MaxImportRows, n)
		path := filepath.Join(b.TempDir(), "seed.db")
		db, err := sql.Open("sqlite3", "file:"+path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`CREATE TABLE snug_connections (app_id TEXT NOT NULL, slot TEXT NOT NULL,
			requirement_json TEXT NOT NULL, requirement_version INTEGER NOT NULL, provenance TEXT NOT NULL,
			confidence REAL, status TEXT NOT NULL, pending_requirement_json TEXT, imported INTEGER NOT NULL DEFAULT 0,
			allowed_hosts TEXT NOT NULL DEFAULT '[]', approved_at TEXT, revoked_at TEXT, created_at TEXT NOT NULL,
			updated_at TEXT NOT NULL, PRIMARY KEY (app_id, slot)); PRAGMA user_version = 6;`); err != nil {
			b.Fatal(err)
		}
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		now := store.FormatTime(time.Now())
		for _, r := range rows[from:to] {
			if _, err := tx.Exec(`INSERT INTO snug_connections VALUES (?, ?, ?, 1, 'user', NULL, 'approved', NULL, 0, ?, ?, NULL, ?, ?)`,
				r.AppID, r.Slot, r.RequirementJSON, r.AllowedHosts, now, now, now); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		db.Close()
		rep, err := d.records.Import(b.Context(), path)
		if err != nil || rep.Demoted != to-from {
			b.Fatalf("import: %+v, %v", len(rep.Dropped), err)
		}
	}
}

// BenchmarkStart measures New over a real SQLite file holding 10 and
// 100,000 connection rows, and the heap the daemon holds after it
// (MiB-heap, after a GC): approved rows written straight into the store,
// and rows brought in through Import as scripts/bench seeds them. Both
// are started once before they are measured, as a deployment starts
// after its first: "upgrade" instead forgets the re-consent record before
// each start, as the first start under a new registry or build finds it.
func BenchmarkStart(b *testing.B) {
	for _, seed := range []string{"approved", "imported", "upgrade"} {
		for _, n := range []int{10, 100_000} {
			b.Run(fmt.Sprintf("%s/rows=%d", seed, n), func(b *testing.B) {
				dir := b.TempDir() + "/data"
				if seed == "imported" {
					seedImported(b, dir, n)
				} else {
					seedApproved(b, dir, n)
				}
				d, err := newBuild(b.Context(), Config{DataDir: dir}, testBuild)
				if err != nil {
					b.Fatal(err)
				}
				d.Close()
				var heap uint64
				for b.Loop() {
					if seed == "upgrade" {
						b.StopTimer()
						st, err := store.Open(b.Context(), store.Options{Dir: dir})
						if err == nil {
							err = st.Update(b.Context(), func(tx *store.Tx) error { return tx.ForgetReconsentRecord() })
							st.Close()
						}
						if err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					d, err := newBuild(b.Context(), Config{DataDir: dir}, testBuild)
					if err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					heap = ms.HeapAlloc
					d.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(heap)/(1<<20), "MiB-heap")
			})
		}
	}
}

// BenchmarkGrantLookup measures gate 4's lookup (the app's rows, the
// approved one whose ceiling holds the host) in an index of 10 and of
// 100,000 rows: it must stay flat. "built" is an index a writer's build
// holds (parsed), "start" one the start built over a real SQLite file,
// after the app's first use loaded it.
func BenchmarkGrantLookup(b *testing.B) {
	for _, kind := range []string{"built", "start"} {
		for _, n := range []int{10, 100_000} {
			b.Run(fmt.Sprintf("%s/rows=%d", kind, n), func(b *testing.B) {
				var idx *grants.GrantIndex
				if kind == "built" {
					idx = indexOf(startRows(n), grants.NewParseCache())
				} else {
					dir := b.TempDir() + "/data"
					seedApproved(b, dir, n)
					st, err := store.Open(b.Context(), store.Options{Dir: dir})
					if err != nil {
						b.Fatal(err)
					}
					defer st.Close()
					if idx, err = grants.StartIndex(b.Context(), st, slog.New(slog.DiscardHandler)); err != nil {
						b.Fatal(err)
					}
				}
				app, host := "seed-000000", "api000000.bench.test"
				for b.Loop() {
					a := idx.Apps[app]
					found := 0
					for i := range a.Rows {
						if g := &a.Rows[i]; g.Approved() && g.InCeiling(host) {
							found++
						}
					}
					if found != 8 {
						b.Fatalf("found %d grants", found)
					}
				}
			})
		}
	}
}

// BenchmarkAppFirstLoad measures the one read and parse of an app's
// rows (8 here) on its first use after a start, in a store of 100,000.
func BenchmarkAppFirstLoad(b *testing.B) {
	dir := b.TempDir() + "/data"
	seedApproved(b, dir, 100_000)
	st, err := store.Open(b.Context(), store.Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	log := slog.New(slog.DiscardHandler)
	idx, err := grants.StartIndex(b.Context(), st, log)
	if err != nil {
		b.Fatal(err)
	}
	const app = "seed-000042"
	tmpl := idx.Apps[app]
	for b.Loop() {
		l := &grants.AppLoad{St: st, Log: log, App: app, Rows: make([]grants.GrantRow, len(tmpl.Rows))}
		for i, g := range tmpl.Rows {
			g.Parsed = &grants.Parsed{Lazy: l, Version: g.Version}
			l.Rows[i] = g
		}
		l.Rows[0].Load()
		if !l.Rows[0].Approved() {
			b.Fatal("the loaded row does not grant")
		}
	}
}
