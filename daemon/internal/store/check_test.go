package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestQuickCheck(t *testing.T) {
	s := openStore(t)
	dir := s.Dir()
	if problems, err := QuickCheck(t.Context(), dir, true); err != nil || len(problems) != 0 {
		t.Fatalf("QuickCheck(shared) on a live store = %v, %v", problems, err)
	}
	s.Close()
	if problems, err := QuickCheck(t.Context(), dir, false); err != nil || len(problems) != 0 {
		t.Fatalf("QuickCheck(immutable) on a closed store = %v, %v", problems, err)
	}
	for _, f := range []string{DBFile + "-wal", DBFile + "-shm"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("the immutable check left %s behind", f)
		}
	}
	// A damaged file is reported, not passed.
	p := filepath.Join(dir, DBFile)
	b, _ := os.ReadFile(p)
	for page := 4096; page+8 < len(b); page += 4096 {
		copy(b[page:], []byte{0x0d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) // b-tree page headers pointing nowhere
	}
	os.WriteFile(p, b, 0o600)
	problems, err := QuickCheck(t.Context(), dir, false)
	if err == nil && len(problems) == 0 {
		t.Fatal("QuickCheck passed a damaged database")
	}
}

// TestCheck: a sound store checks clean; one whose table pages were
// damaged after it was written is ErrDamaged naming the database, without
// a row's contents.
func TestCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(t.Context(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		update(t, s, func(tx *Tx) error {
			_, err := tx.UpsertConnection(declared(fmt.Sprintf("app-%04d", i), "s"))
			return err
		})
	}
	if err := s.Check(t.Context()); err != nil {
		t.Fatalf("Check of a sound store = %v", err)
	}
	s.Close()
	// Damage the last page (a connections page: those were written last)
	// and leave the first, which Open reads, alone.
	db := filepath.Join(dir, DBFile)
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	last := len(b) - 4096
	copy(b[last:], []byte{0x0d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open of a store damaged past its first pages = %v", err)
	}
	defer s.Close()
	err = s.Check(t.Context())
	if !errors.Is(err, ErrDamaged) {
		t.Fatalf("Check of a damaged store = %v, want ErrDamaged", err)
	}
	if !strings.Contains(err.Error(), "the database is damaged: quick_check of "+db) || strings.Contains(err.Error(), "app-0") {
		t.Errorf("Check's error = %q", err)
	}
	t.Logf("Check: %v", err)

	// From then on the store refuses writes, without running them, and
	// still reads.
	if got := s.Damaged(); !errors.Is(got, ErrDamaged) || got.Error() != err.Error() {
		t.Errorf("Damaged() = %v, want %v", got, err)
	}
	ran := false
	if err := s.Update(t.Context(), func(*Tx) error { ran = true; return nil }); !errors.Is(err, ErrDamaged) || ran {
		t.Errorf("Update on a damaged store = %v (fn ran: %v), want ErrDamaged without running", err, ran)
	}
	if _, err := Read(t.Context(), s, func(tx *Tx) (Connection, error) { return tx.Connection("app-0000", "s") }); err != nil {
		t.Errorf("a read of a sound page on a damaged store = %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.RunChecks(ctx, time.Hour); !errors.Is(err, ErrDamaged) {
		t.Errorf("RunChecks on a damaged store = %v, want ErrDamaged at once", err)
	}
}

// TestRunChecks: on a sound store RunChecks checks at once and on every
// tick, marks nothing, and returns nil when its context ends.
func TestRunChecks(t *testing.T) {
	s := openStore(t)
	if err := s.RunChecks(t.Context(), 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("RunChecks(0) = %v, want ErrInvalid", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := s.RunChecks(ctx, 20*time.Millisecond); err != nil {
		t.Errorf("RunChecks on a sound store = %v, want nil when ctx ends", err)
	}
	if err := s.Damaged(); err != nil {
		t.Errorf("Damaged() on a sound store = %v", err)
	}
	update(t, s, func(tx *Tx) error { _, err := tx.UpsertConnection(declared("app", "s")); return err })
}
