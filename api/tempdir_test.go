package api

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestNoTempDirLeft: the short temporary directory a test environment
// makes (for the ctl socket's path limit) is gone when the test ends.
func TestNoTempDirLeft(t *testing.T) {
	var root string
	t.Run("env", func(t *testing.T) {
		e := newEnv(t)
		root = filepath.Dir(e.dir)
	})
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is left after the test: %v", root, err)
	}
}
