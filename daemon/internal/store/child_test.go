package store

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"testing"
	"time"
)

// childEnv switches a helper test on in a re-executed test binary and names
// the data directory it works in.
const childEnv = "SNUGD_STORE_TEST_CHILD_DIR"

// childCommand re-executes this test binary to run only the named helper
// test against dir.
func childCommand(ctx context.Context, test, dir string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	return cmd
}

// runChild runs a helper test to completion and returns its output.
func runChild(t *testing.T, test, dir string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := childCommand(ctx, test, dir).CombinedOutput()
	return string(out), err
}

// foreignOwned is a FileInfo whose owner is not this process's user.
type foreignOwned struct{ fs.FileInfo }
