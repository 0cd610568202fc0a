package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestReset: a dry run counts what would be lost and moves nothing; a
// reset refuses while a store holds the directory, sets every file aside
// otherwise, and the next Open starts over; a lost database resets too.
func TestReset(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	update(t, s, func(tx *Tx) error {
		row := declared("app", "s")
		row.Status, row.ApprovedAt = StatusApproved, ptr(tx.Now())
		if _, err := tx.UpsertConnection(row); err != nil {
			return err
		}
		if err := tx.PutSecret(FieldKey("app", "s", "token"), Secret("value")); err != nil {
			return err
		}
		_, err := tx.InsertHost(Host{ID: "h_1", Name: "desk", Surface: SurfaceDesktop, TokenHash: []byte("0123456789abcdef0123456789abcdef")})
		return err
	})
	if err := os.MkdirAll(filepath.Join(dir, HelpersDir, "h1"), 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	if _, err := Reset(ctx, dir, true, now); !errors.Is(err, ErrLocked) {
		t.Fatalf("Reset while a store is open = %v, want ErrLocked", err)
	}
	s.Close()

	rep, err := Reset(ctx, dir, false, now)
	if err != nil {
		t.Fatalf("dry Reset = %v", err)
	}
	if !rep.Counted || rep.Hosts != 1 || rep.Connections != 1 || rep.Secrets != 1 || rep.Aside != "" {
		t.Errorf("dry Reset = %+v, want 1 host, 1 connection, 1 secret, nothing moved", rep)
	}
	if !slices.Contains(rep.Files, DBFile) || !slices.Contains(rep.Files, KeyFileName) || !slices.Contains(rep.Files, HelpersDir) {
		t.Errorf("dry Reset lists %v", rep.Files)
	}
	for _, name := range rep.Files {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("dry Reset moved %s: %v", name, err)
		}
	}

	rep, err = Reset(ctx, dir, true, now)
	if err != nil {
		t.Fatalf("Reset = %v", err)
	}
	if rep.Aside != filepath.Join(dir, "reset-20260501T100000.000Z") {
		t.Errorf("Reset set the files aside in %q", rep.Aside)
	}
	for _, name := range rep.Files {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still in the data directory: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(rep.Aside, name)); err != nil {
			t.Errorf("%s was not set aside: %v", name, err)
		}
	}
	if fi, err := os.Stat(rep.Aside); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the reset directory is %v, %v; want mode 0700", fi, err)
	}
	s, err = Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open after Reset = %v", err)
	}
	if rows, err := s.AllConnections(ctx); err != nil || len(rows) != 0 {
		t.Errorf("the new database holds %v, %v", rows, err)
	}
	s.Close()

	// A lost database: Open refuses, Reset (uncounted) lets it start over.
	if err := os.Truncate(filepath.Join(dir, DBFile), 0); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, DBFile+"-wal"))
	if _, err := Open(ctx, Options{Dir: dir}); !errors.Is(err, ErrDatabaseGone) {
		t.Fatalf("Open of an emptied database = %v, want ErrDatabaseGone", err)
	}
	rep, err = Reset(ctx, dir, true, now.Add(time.Second))
	if err != nil || rep.Counted {
		t.Fatalf("Reset of an emptied database = %+v, %v; want it uncounted", rep, err)
	}
	s, err = Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open after the second Reset = %v", err)
	}
	s.Close()
	if _, err := Reset(ctx, filepath.Join(dir, "nope"), false, now); err == nil {
		t.Error("Reset of a missing directory succeeded")
	}
}
