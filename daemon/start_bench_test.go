package daemon

import (
	"fmt"
	"runtime"
	"testing"
	"time"

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

// BenchmarkStart measures New over a real SQLite file holding 10 and
// 100,000 connection rows, and the heap the daemon holds after it
// (MiB-heap, after a GC).
func BenchmarkStart(b *testing.B) {
	for _, n := range []int{10, 20_000, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			dir := b.TempDir() + "/data"
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
			var heap uint64
			for b.Loop() {
				d, err := New(b.Context(), Config{DataDir: dir})
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

// BenchmarkGrantLookup measures gate 4's lookup (the app's rows, the
// approved one whose ceiling holds the host) in an index of 10 and of
// 100,000 rows: it must stay flat.
func BenchmarkGrantLookup(b *testing.B) {
	for _, n := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			idx := indexOf(startRows(n), newParseCache())
			app, host := "seed-000000", "api000000.bench.test"
			for b.Loop() {
				a := idx.apps[app]
				found := 0
				for i := range a.rows {
					if g := &a.rows[i]; g.approved() && g.inCeiling(host) {
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
