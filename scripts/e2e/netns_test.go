//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The harness's network is three namespaces of its own and nothing else:
// snugd-e2e-cli holds snugd, snugd ctl and the test's own client calls;
// snugd-e2e-pub and snugd-e2e-priv hold one upstream each, each joined to
// the client namespace by a veth pair created there. Nothing is added to
// the machine's own namespace: no link, no address, no route.

// cliNSName is the namespace of snugd and its clients.
const cliNSName = "snugd-e2e-cli"

// A netns is one upstream namespace, joined to the client namespace by a
// veth pair: cliAddr on the client side, nsAddr inside (both /24).
type netns struct {
	name    string
	cliLink string // the veth end in the client namespace (≤ 15 bytes)
	nsLink  string // the end in the upstream namespace
	cliAddr string // "198.51.100.1"
	nsAddr  string // "198.51.100.10"
}

// The two upstream namespaces of the harness. The "public"
// upstream sits in a documentation block, which snugd's SSRF guard admits
// precisely because nothing is deployed there; the private one sits in
// RFC 1918 space, which the guard refuses.
func pubNS() netns {
	return netns{name: "snugd-e2e-pub", cliLink: "se2e-pub0", nsLink: "se2e-pub1", cliAddr: "198.51.100.1", nsAddr: "198.51.100.10"}
}

func privNS() netns {
	return netns{name: "snugd-e2e-priv", cliLink: "se2e-prv0", nsLink: "se2e-prv1", cliAddr: "10.77.0.1", nsAddr: "10.77.0.10"}
}

// ipCmd runs ip with args, bounded in time.
func ipCmd(ctx context.Context, args ...string) error {
	_, err := ipOut(ctx, args...)
	return err
}

func ipOut(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
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
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("harness lock %s: %v", name, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("another end-to-end run has held %s for 5 minutes", name)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// setUpNetwork creates the client namespace and the upstream namespaces
// with their veth pairs, after removing what a killed run of this harness
// left (under the lock, names of ours are ours). It then checks that the
// names are free: a link of that name in the machine's own namespace is
// someone else's, and the harness refuses to start rather than touch it.
// t.Cleanup removes everything.
func setUpNetwork(t *testing.T, upstreams ...netns) {
	t.Helper()
	ctx := context.Background()
	tearDownNetwork(ctx, upstreams...)
	t.Cleanup(func() { tearDownNetwork(context.Background(), upstreams...) })
	if err := checkFree(ctx, upstreams...); err != nil {
		t.Fatalf("the harness's names are not free: %v", err)
	}
	steps := [][]string{
		{"netns", "add", cliNSName},
		{"-n", cliNSName, "link", "set", "lo", "up"},
	}
	for _, n := range upstreams {
		steps = append(steps,
			[]string{"netns", "add", n.name},
			[]string{"-n", n.name, "link", "set", "lo", "up"},
			// Created inside the client namespace, its peer straight in the
			// upstream's: neither end ever exists in the machine's own.
			[]string{"-n", cliNSName, "link", "add", n.cliLink, "type", "veth", "peer", "name", n.nsLink, "netns", n.name},
			[]string{"-n", cliNSName, "addr", "add", n.cliAddr + "/24", "dev", n.cliLink},
			[]string{"-n", cliNSName, "link", "set", n.cliLink, "up"},
			[]string{"-n", n.name, "addr", "add", n.nsAddr + "/24", "dev", n.nsLink},
			[]string{"-n", n.name, "link", "set", n.nsLink, "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(ctx, s...); err != nil {
			t.Fatalf("set up the harness's network: %v", err)
		}
	}
}

// checkFree reports an error when a name the harness is about to create
// exists (a namespace or, in the machine's own namespace, a link), and
// logs nothing else: the harness's addresses live only inside its own
// namespaces, so an address the machine uses (a LAN or VPN in 10.77/16)
// neither disturbs the run nor is disturbed by it.
func checkFree(ctx context.Context, upstreams ...netns) error {
	names := []string{cliNSName}
	for _, n := range upstreams {
		names = append(names, n.name)
	}
	for _, name := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", name)); err == nil {
			return fmt.Errorf("network namespace %s exists and could not be removed", name)
		}
	}
	for _, n := range upstreams {
		for _, link := range []string{n.cliLink, n.nsLink} {
			if _, err := net.InterfaceByName(link); err == nil {
				return fmt.Errorf("the machine's own namespace has a link named %s: not the harness's (it never creates one there); rename or remove it", link)
			}
		}
	}
	return nil
}

// tearDownNetwork deletes the harness's namespaces, which takes their
// veth ends, and so the pairs, with them. Errors are expected when there
// is nothing to remove.
func tearDownNetwork(ctx context.Context, upstreams ...netns) {
	for _, n := range upstreams {
		_ = ipCmd(ctx, "netns", "del", n.name)
	}
	_ = ipCmd(ctx, "netns", "del", cliNSName)
}

// inNetns runs fn on an OS thread that has joined network namespace name,
// then returns the thread to its own namespace. A socket fn creates
// belongs to that namespace for its whole life, whichever thread uses it
// later: this is how the test's own HTTP calls reach snugd and the
// upstreams without a route from the machine's namespace.
func inNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer own.Close()
		target, err := os.Open(filepath.Join("/run/netns", name))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("join netns %s: %w", name, err)
			return
		}
		err = fn()
		if rerr := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); rerr == nil {
			runtime.UnlockOSThread()
		} // else the goroutine ends locked, and the runtime retires the thread
		errc <- err
	}()
	return <-errc
}

// cliDial dials addr from inside the client namespace.
func cliDial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(cliNSName, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// inCli returns cmd prefixed to run inside the client namespace.
func inCli(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", cliNSName, name}, args...)...)
}
