package store

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSecretRoundTrip is one credential write (its own durable
// transaction) and one read of it.
func BenchmarkSecretRoundTrip(b *testing.B) {
	s := openStore(b)
	key := FieldKey("app", "slot", "api_key")
	value := Secret("sk-0123456789abcdef0123456789abcdef")
	ctx := b.Context()
	for b.Loop() {
		if err := s.Update(ctx, func(tx *Tx) error { return tx.PutSecret(key, value) }); err != nil {
			b.Fatal(err)
		}
		if err := s.View(ctx, func(tx *Tx) error { _, err := tx.Secret(key); return err }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSecretRead is the executor's per-request read of a slot's
// credentials.
func BenchmarkSecretRead(b *testing.B) {
	s := openStore(b)
	ctx := b.Context()
	s.Update(ctx, func(tx *Tx) error {
		tx.PutSecret(FieldKey("app", "slot", "api_key"), Secret("sk-0123456789abcdef"))
		return tx.PutSecret(ConnectionStateKey("app", "slot"), Secret(`{"status":"connected"}`))
	})
	for b.Loop() {
		if err := s.View(ctx, func(tx *Tx) error { _, err := tx.SlotSecrets("app", "slot"); return err }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpsertConnection is one connection write in its own durable
// transaction, over 64 rows.
func BenchmarkUpsertConnection(b *testing.B) {
	// The real clock: with a frozen one every rewrite of a row is
	// byte-identical, and SQLite commits it without writing anything.
	s := openStore(b, func(o *Options) { o.Now = time.Now })
	ctx := b.Context()
	i := 0
	for b.Loop() {
		row := declared(fmt.Sprint("app-", i%64), "github")
		i++
		if err := s.Update(ctx, func(tx *Tx) error { _, err := tx.UpsertConnection(row); return err }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpsertConnectionsInOneTransaction is the import path: 64 rows
// written in one transaction (reported per transaction).
func BenchmarkUpsertConnectionsInOneTransaction(b *testing.B) {
	s := openStore(b, func(o *Options) { o.Now = time.Now })
	ctx := b.Context()
	rows := make([]Connection, 64)
	for i := range rows {
		rows[i] = declared(fmt.Sprint("app-", i), "github")
	}
	for b.Loop() {
		err := s.Update(ctx, func(tx *Tx) error {
			for _, r := range rows {
				if _, err := tx.UpsertConnection(r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEachConnectionHead is the start's index scan over 100,000
// approved rows as scripts/bench seeds them (8 slots per app, a host per
// app), and its re-consent text scan over the same rows.
func BenchmarkEachConnectionHead(b *testing.B) {
	const n = 100_000
	s := openStore(b)
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	err := s.Update(b.Context(), func(tx *Tx) error {
		for i := range n {
			app, slot, host := fmt.Sprintf("seed-%06d", i/8), fmt.Sprintf("s%d", i%8), fmt.Sprintf("api%06d.bench.test", i/8)
			c := declared(app, slot)
			c.RequirementJSON = `{"slot":"` + slot + `","kind":"api_key","declaredApiHosts":["` + host + `"]}`
			c.Status, c.ApprovedAt, c.AllowedHosts = StatusApproved, &now, `["`+host+`"]`
			if _, err := tx.UpsertConnection(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("heads", func(b *testing.B) {
		for b.Loop() {
			rows := 0
			if err := s.EachConnectionHead(b.Context(), func(*ConnectionHead) error { rows++; return nil }); err != nil || rows != n {
				b.Fatalf("%d rows, %v", rows, err)
			}
		}
	})
	b.Run("texts", func(b *testing.B) {
		for b.Loop() {
			rows := 0
			if err := s.EachConnectionText(b.Context(), func(*ConnectionText) error { rows++; return nil }); err != nil || rows != n {
				b.Fatalf("%d rows, %v", rows, err)
			}
		}
	})
}
