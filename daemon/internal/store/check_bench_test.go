package store

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// BenchmarkCheck times Check on a store of the size a busy daemon reaches:
// 1,000 connections and a full journal of 200,000 entries (the default
// bound).
func BenchmarkCheck(b *testing.B) {
	s := openStore(b)
	ctx := b.Context()
	for batch := range 200 {
		err := s.Update(ctx, func(tx *Tx) error {
			if batch < 100 {
				for i := range 10 {
					if _, err := tx.UpsertConnection(declared(fmt.Sprintf("app-%04d", batch*10+i), "s")); err != nil {
						return err
					}
				}
			}
			es := make([]JournalEntry, 1000)
			for i := range es {
				es[i] = JournalEntry{AppID: fmt.Sprintf("app-%04d", (batch*1000+i)%1000), Slot: "s", Host: "api.example.com", Method: "GET", Outcome: "sent", Status: 200, Duration: time.Millisecond}
			}
			_, err := tx.InsertJournals(es)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := s.Check(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if fi, err := os.Stat(s.DBPath()); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "db-MiB")
	}
}
