//go:build linux

package store

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

// TestStorageFullOnTmpfs fills a small tmpfs under a live store and checks
// that a write then fails as ErrStorageFull, changes nothing, and that the
// store takes writes again by itself once space returns; and that a
// read-only file system is ErrStorageFull too. The tmpfs lives in a mount
// namespace of its own: the test re-executes itself under unshare -m, and
// the child refuses to mount anything unless its mount namespace differs
// from the one the test started in.
func TestStorageFullOnTmpfs(t *testing.T) {
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
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// --propagation private (unshare's default, spelled out): nothing
	// mounted in the child propagates back to this namespace.
	cmd := exec.CommandContext(ctx, unshare, "--mount", "--propagation", "private", "--",
		os.Args[0], "-test.run=^TestStorageFullChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+dir, "SNUGD_STORE_TEST_PARENT_NS="+parentNS)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestStorageFullChild") {
		t.Fatalf("child in a mount namespace: %v\n%s", err, out)
	}
	t.Logf("child:\n%s", out)
	// Nothing leaked into this namespace: dir is still an empty directory
	// on the test's own file system.
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("the child's tmpfs shows in the parent's namespace: %v, %v", ents, err)
	}
}

// TestStorageFullChild is TestStorageFullOnTmpfs's child.
func TestStorageFullChild(t *testing.T) {
	mnt := os.Getenv(childEnv)
	parentNS := os.Getenv("SNUGD_STORE_TEST_PARENT_NS")
	if mnt == "" || parentNS == "" {
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
	if err := syscall.Mount("snugd-test", mnt, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=8m,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	defer syscall.Unmount(mnt, syscall.MNT_DETACH)
	dir := filepath.Join(mnt, "data")
	ctx := t.Context()
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open on the tmpfs = %v", err)
	}
	defer s.Close()
	value := strings.Repeat("v", 4096)
	write := func(i int) error {
		app := fmt.Sprintf("full-%05d", i)
		return s.Update(ctx, func(tx *Tx) error {
			row := declared(app, "s")
			row.Status, row.ApprovedAt = StatusApproved, ptr(tx.Now())
			if _, err := tx.UpsertConnection(row); err != nil {
				return err
			}
			return tx.PutSecret(FieldKey(app, "s", "token"), Secret(value+app))
		})
	}
	for i := range 20 {
		if err := write(i); err != nil {
			t.Fatalf("write %d before the disk fills = %v", i, err)
		}
	}

	filler := filepath.Join(mnt, "filler")
	fill(t, filler)
	if free, size, err := DiskSpace(dir); err != nil || size < 7<<20 || size > 9<<20 || free > 64<<10 {
		t.Errorf("DiskSpace of the full 8 MiB tmpfs = %d free of %d, %v", free, size, err)
	}
	failedAt := -1
	for i := 20; i < 4000; i++ {
		err := write(i)
		if err == nil {
			continue // the WAL still had room
		}
		if !errors.Is(err, ErrStorageFull) {
			t.Fatalf("write %d on a full disk = %v, want ErrStorageFull", i, err)
		}
		if strings.Contains(err.Error(), value[:64]) {
			t.Fatalf("the error carries the credential value: %v", err)
		}
		t.Logf("write %d on a full disk: %v", i, err)
		failedAt = i
		break
	}
	if failedAt < 0 {
		t.Fatal("4000 writes on a full 8 MiB tmpfs all succeeded")
	}
	// The failed write changed nothing, and reads still work.
	if _, err := Read(ctx, s, func(tx *Tx) (Connection, error) { return tx.Connection(fmt.Sprintf("full-%05d", failedAt), "s") }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the failed write's row reads %v, want ErrNotFound", err)
	}
	if _, err := Read(ctx, s, func(tx *Tx) (Connection, error) { return tx.Connection("full-00000", "s") }); err != nil {
		t.Fatalf("a read on a full disk = %v", err)
	}
	// Space returns: the same store takes the same write, with no reopen.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if free, _, err := DiskSpace(dir); err != nil || free < 1<<20 {
		t.Errorf("DiskSpace once the filler is gone = %d free, %v", free, err)
	}
	if err := write(failedAt); err != nil {
		t.Fatalf("the write once space returned = %v", err)
	}
	if err := write(failedAt + 1); err != nil {
		t.Fatalf("the next write once space returned = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if problems, err := QuickCheck(ctx, dir, false); err != nil || len(problems) != 0 {
		t.Fatalf("quick_check after the full disk = %v, %v", problems, err)
	}

	// A read-only file system: Open says ErrStorageFull, and works again
	// once the file system is writable. (The kernel refuses to remount a
	// file system read-only while files on it are open for writing, EBUSY,
	// short of doing it itself after an error; a write that meets one is
	// SQLITE_READONLY or EROFS, which TestClassify covers.)
	if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	if s, err := Open(ctx, Options{Dir: dir}); !errors.Is(err, ErrStorageFull) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open on a read-only file system = %v, want ErrStorageFull", err)
	} else {
		t.Logf("Open on a read-only file system: %v", err)
	}
	if err := syscall.Mount("", mnt, "", syscall.MS_REMOUNT, "size=8m"); err != nil {
		t.Fatalf("remount read-write: %v", err)
	}
	s, err = Open(ctx, Options{Dir: dir}) // write uses s
	if err != nil {
		t.Fatalf("Open once the file system is writable again = %v", err)
	}
	defer s.Close()
	if err := write(failedAt + 2); err != nil {
		t.Fatalf("a write once the file system is writable again = %v", err)
	}
}

// fill writes path until the file system holding it is full (ENOSPC),
// at most 64 MiB.
func fill(t *testing.T, path string) {
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
			return
		}
	}
	t.Fatalf("fill %s: 64 MiB written and the disk is not full", path)
}
