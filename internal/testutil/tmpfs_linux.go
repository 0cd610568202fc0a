//go:build linux

package testutil

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The environment a re-executed test binary reads in TmpfsChild: the
// mount point, and the mount namespace the parent ran in.
const (
	tmpfsDirEnv  = "SNUGD_TEST_TMPFS_DIR"
	tmpfsNSEnv   = "SNUGD_TEST_TMPFS_PARENT_NS"
	tmpfsSizeEnv = "SNUGD_TEST_TMPFS_SIZE"
)

// RunInTmpfs runs the test named child (a test that starts with
// TmpfsChild) in a re-execution of this test binary under unshare -m, so
// that the small tmpfs the child mounts exists in a mount namespace of its
// own and nothing of it reaches the machine's. size is tmpfs's size option
// ("8m"). It fails t unless the child passed, and checks afterwards that
// the mount point is still an empty directory here. It skips where the
// namespace cannot be made (not root, no unshare, -short).
func RunInTmpfs(t *testing.T, child, size string, timeout time.Duration) {
	t.Helper()
	if testing.Short() {
		t.Skip("mounts a tmpfs in a child mount namespace")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a mount namespace")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare (util-linux)")
	}
	parentNS, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Skipf("cannot read this process's mount namespace: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	// --propagation private (unshare's default, spelled out): nothing
	// mounted in the child propagates back to this namespace.
	cmd := exec.CommandContext(ctx, unshare, "--mount", "--propagation", "private", "--",
		os.Args[0], "-test.run=^"+child+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), tmpfsDirEnv+"="+dir, tmpfsNSEnv+"="+parentNS, tmpfsSizeEnv+"="+size)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+child) {
		t.Fatalf("child in a mount namespace: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("the child's tmpfs shows in the parent's namespace: %v, %v", ents, err)
	}
}

// TmpfsChild starts the child test RunInTmpfs runs: it skips outside such
// a run, refuses to mount anything unless this process's mount namespace
// differs from the parent's, makes every mount private, mounts the tmpfs
// and returns its mount point (unmounted when the test ends).
func TmpfsChild(t *testing.T) string {
	t.Helper()
	mnt, parentNS, size := os.Getenv(tmpfsDirEnv), os.Getenv(tmpfsNSEnv), os.Getenv(tmpfsSizeEnv)
	if mnt == "" || parentNS == "" || size == "" {
		t.Skip("child process helper")
	}
	ns, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil || ns == parentNS {
		t.Fatalf("not in a mount namespace of its own (%q, parent %q, %v): refusing to mount", ns, parentNS, err)
	}
	// Belt and braces: make every mount here private before mounting.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make mounts private: %v", err)
	}
	if err := syscall.Mount("snugd-test", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return mnt
}

// FillDisk writes path until the file system holding it is full
// (ENOSPC), then byte blocks into the last free block; at most 64 MiB.
func FillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for range 1024 {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", path, err)
			}
			for range 64 << 10 {
				if _, err := f.Write(chunk[:512]); err != nil {
					break
				}
			}
			return
		}
	}
	t.Fatalf("fill %s: 64 MiB written and the disk is not full", path)
}
