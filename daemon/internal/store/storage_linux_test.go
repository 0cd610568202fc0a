//go:build linux

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snug/snugd/internal/testutil"
)

// TestStorageFullOnTmpfs fills a small tmpfs under a live store and checks
// that a write then fails as ErrStorageFull, changes nothing, and that the
// store takes writes again by itself once space returns; and that a
// read-only file system is ErrStorageFull too. The tmpfs lives in a mount
// namespace of its own: the test re-executes itself under unshare -m, and
// the child refuses to mount anything unless its mount namespace differs
// from the one the test started in.
func TestStorageFullOnTmpfs(t *testing.T) {
	testutil.RunInTmpfs(t, "TestStorageFullChild", "8m", 2*time.Minute)
}

// TestStorageFullChild is TestStorageFullOnTmpfs's child.
func TestStorageFullChild(t *testing.T) {
	mnt := testutil.TmpfsChild(t)
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
	testutil.FillDisk(t, filler)
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
