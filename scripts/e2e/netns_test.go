//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A netns is one network namespace joined to the root namespace by a veth
// pair: rootAddr on the root side, nsAddr inside (both /24).
type netns struct {
	name     string
	rootLink string // the veth end in the root namespace (≤ 15 bytes)
	nsLink   string // the end moved into the namespace
	rootAddr string // "198.51.100.1"
	nsAddr   string // "198.51.100.10"
}

// The two namespaces of the harness. Ruling R8: the "public" upstream sits
// in a documentation block, which snugd's SSRF guard admits precisely
// because nothing is deployed there; the private one sits in RFC 1918
// space, which the guard refuses.
func pubNS() netns {
	return netns{name: "snugd-e2e-pub", rootLink: "se2e-pub0", nsLink: "se2e-pub1", rootAddr: "198.51.100.1", nsAddr: "198.51.100.10"}
}

func privNS() netns {
	return netns{name: "snugd-e2e-priv", rootLink: "se2e-prv0", nsLink: "se2e-prv1", rootAddr: "10.77.0.1", nsAddr: "10.77.0.10"}
}

// ipCmd runs ip with args, bounded in time.
func ipCmd(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// harnessLock is the lock file that lets one harness run at a time on a
// machine: the namespaces and links have fixed names, so a second run
// would tear down the first one's upstreams in the middle of its checks.
const harnessLock = "/run/lock/snugd-e2e.lock"

// lockHarness waits (bounded) for the machine's harness lock and holds it
// until the test ends, after the namespaces are gone (cleanups run last
// registered first).
func lockHarness(t *testing.T) {
	t.Helper()
	name := harnessLock
	if _, err := os.Stat(filepath.Dir(name)); err != nil {
		name = filepath.Join(os.TempDir(), filepath.Base(harnessLock))
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("harness lock: %v", err)
	}
	t.Cleanup(func() { f.Close() }) // closing releases the lock
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("harness lock %s: %v", name, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("another end-to-end run has held %s for 2 minutes", name)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// setUp creates the namespace and its veth pair, after removing what a
// previous run that was killed may have left. t.Cleanup removes them.
func (n netns) setUp(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	n.tearDown(ctx)
	t.Cleanup(func() { n.tearDown(context.Background()) })
	steps := [][]string{
		{"netns", "add", n.name},
		{"link", "add", n.rootLink, "type", "veth", "peer", "name", n.nsLink},
		{"link", "set", n.nsLink, "netns", n.name},
		{"addr", "add", n.rootAddr + "/24", "dev", n.rootLink},
		{"link", "set", n.rootLink, "up"},
		{"-n", n.name, "addr", "add", n.nsAddr + "/24", "dev", n.nsLink},
		{"-n", n.name, "link", "set", n.nsLink, "up"},
		{"-n", n.name, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := ipCmd(ctx, s...); err != nil {
			t.Fatalf("set up netns %s: %v", n.name, err)
		}
	}
}

// tearDown deletes the namespace (which takes its veth end, and so the
// pair, with it) and the root end in case the move never happened.
// Errors are expected when there is nothing to remove.
func (n netns) tearDown(ctx context.Context) {
	_ = ipCmd(ctx, "netns", "del", n.name)
	_ = ipCmd(ctx, "link", "del", n.rootLink)
}
