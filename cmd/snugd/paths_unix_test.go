//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureDataDirRefusesSomeoneElses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory away")
	}
	dir := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if err := ensureDataDir(dir); err == nil || !strings.Contains(err.Error(), "owned by uid 4242") {
		t.Errorf("ensureDataDir(someone else's) error = %v, want it refused", err)
	}
}
