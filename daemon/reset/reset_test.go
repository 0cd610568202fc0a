package reset

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/snug/snugd/daemon/internal/store"
)

// TestPlanAndRun: Plan counts and moves nothing, both refuse while a store
// holds the directory, Run sets the files aside and the next Open starts
// over.
func TestPlanAndRun(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.InsertHost(store.Host{ID: "h_1", Name: "desk", Surface: store.SurfaceDesktop, TokenHash: []byte("0123456789abcdef0123456789abcdef")})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Plan(ctx, dir); !errors.Is(err, ErrRunning) {
		t.Errorf("Plan while snugd runs = %v, want ErrRunning", err)
	}
	if _, err := Run(ctx, dir); !errors.Is(err, ErrRunning) {
		t.Errorf("Run while snugd runs = %v, want ErrRunning", err)
	}
	if _, err := os.Stat(filepath.Join(dir, store.DBFile)); err != nil {
		t.Fatalf("a refused Run moved the database: %v", err)
	}
	s.Close()
	p, err := Plan(ctx, dir)
	if err != nil || !p.Counted || p.Hosts != 1 || p.Aside != "" {
		t.Fatalf("Plan = %+v, %v", p, err)
	}
	r, err := Run(ctx, dir)
	if err != nil || r.Aside == "" || r.Hosts != 1 {
		t.Fatalf("Run = %+v, %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(r.Aside, store.KeyFileName)); err != nil {
		t.Errorf("the key was not set aside: %v", err)
	}
	s, err = store.Open(ctx, store.Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open after Run = %v", err)
	}
	s.Close()
}
