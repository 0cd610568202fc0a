package store

import (
	"os"
	"path/filepath"
	"testing"
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
