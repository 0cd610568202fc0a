//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestFilesArePrivate(t *testing.T) {
	s := openStore(t) // TestMain set umask 0: nothing here is private by accident
	update(t, s, func(tx *Tx) error { return tx.PutSecret("auth:a:s:k", Secret("v")) })
	if got := mode(t, s.Dir()); got != 0o700 {
		t.Errorf("data directory mode = %04o, want 0700", got)
	}
	for _, name := range []string{DBFile, DBFile + "-wal", DBFile + "-shm", LockFile, KeyFileName} {
		if got := mode(t, filepath.Join(s.Dir(), name)); got != 0o600 {
			t.Errorf("%s mode = %04o, want 0600", name, got)
		}
	}
}

func TestOpenTightensWiderDatabaseFiles(t *testing.T) {
	s := openStore(t)
	dir := s.Dir()
	s.Close()
	db := filepath.Join(dir, DBFile)
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{db + "-wal", db + "-shm"} { // as a crashed, careless process leaves them
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	openStore(t, func(o *Options) { o.Dir = dir })
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if got := mode(t, p); got != 0o600 {
			t.Errorf("%s mode after reopen = %04o, want 0600", filepath.Base(p), got)
		}
	}
}

func TestOpenRefusesOpenDirectory(t *testing.T) {
	for _, perm := range []fs.FileMode{0o750, 0o705, 0o777, 0o710} {
		t.Run(fmt.Sprintf("%04o", perm), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, perm); err != nil {
				t.Fatal(err)
			}
			os.Chmod(dir, perm)
			_, err := Open(t.Context(), Options{Dir: dir})
			if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "chmod 700 "+dir) {
				t.Errorf("Open(dir %04o) = %v, want an error naming %s and the fix", perm, err, dir)
			}
			if _, err := os.Stat(filepath.Join(dir, DBFile)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Open created %s in a refused directory", DBFile)
			}
		})
	}
}

func TestOpenRefusesDirectoryThatIsAFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "file")
	os.WriteFile(p, nil, 0o600)
	if _, err := Open(t.Context(), Options{Dir: p}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Open(a file) = %v, want a not-a-directory error", err)
	}
}

func TestCheckOwnerRefusesAnotherUser(t *testing.T) {
	fi, err := os.Stat(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := checkOwner("data directory", "/d", fi); err != nil {
		t.Errorf("checkOwner(own directory) = %v, want nil", err)
	}
	other := foreignOwned{fi}
	err = checkOwner("data directory", "/d", other)
	if err == nil || !strings.Contains(err.Error(), "/d is owned by uid") || !strings.Contains(err.Error(), "chown") {
		t.Errorf("checkOwner(foreign directory) = %v, want an error naming /d and the fix", err)
	}
}

func TestSecondOpenRefusedNamingHolder(t *testing.T) {
	c := newClock()
	s := openStore(t, func(o *Options) { o.Now = c.Now })
	_, err := Open(t.Context(), Options{Dir: s.Dir()})
	want := fmt.Sprintf("pid %d, started 2026-05-01T10:00:00.123Z", os.Getpid())
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), s.Dir()) {
		t.Fatalf("second Open = %v, want ErrLocked naming %q and the directory", err, want)
	}
	h, err := ReadLockHolder(s.Dir())
	if err != nil || h.PID != os.Getpid() || !h.Started.Equal(c.Now().Truncate(time.Millisecond)) {
		t.Errorf("ReadLockHolder = %+v, %v, want pid %d", h, err, os.Getpid())
	}
	// The refused Open changed nothing: the first store still works.
	update(t, s, func(tx *Tx) error { return tx.PutSecret("auth:a:s:k", Secret("v")) })
	// Close releases the lock and clears the record.
	s.Close()
	if _, err := ReadLockHolder(s.Dir()); !errors.Is(err, ErrNoLockHolder) {
		t.Errorf("ReadLockHolder after Close = %v, want ErrNoLockHolder", err)
	}
	s2, err := Open(t.Context(), Options{Dir: s.Dir()})
	if err != nil {
		t.Fatalf("Open after Close = %v", err)
	}
	s2.Close()
}

func TestReadLockHolderWithoutLockFile(t *testing.T) {
	if _, err := ReadLockHolder(t.TempDir()); !errors.Is(err, ErrNoLockHolder) {
		t.Errorf("ReadLockHolder(empty dir) = %v, want ErrNoLockHolder", err)
	}
}

func TestSecondOpenRefusedFromAnotherProcess(t *testing.T) {
	// The lock is held across processes, not just file descriptors: a child
	// that opens the same directory is refused with our pid.
	s := openStore(t)
	out, err := runChild(t, "TestLockChild", s.Dir())
	if err == nil {
		t.Fatalf("child Open succeeded: %s", out)
	}
	if !strings.Contains(out, fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("child's error = %q, want it to name pid %d", out, os.Getpid())
	}
}

// TestLockChild is run by TestSecondOpenRefusedFromAnotherProcess in a child
// process; it does nothing in a normal run.
func TestLockChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("child process helper")
	}
	s, err := Open(t.Context(), Options{Dir: dir})
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	s.Close()
}

func TestOpenInOddlyNamedDirectory(t *testing.T) {
	// The database is opened through an SQLite URI: characters that mean
	// something in a URI must still name the right directory.
	dir := filepath.Join(t.TempDir(), "data?mode=ro#x%41 y")
	s := openStore(t, func(o *Options) { o.Dir = dir })
	update(t, s, func(tx *Tx) error { return tx.PutSecret("auth:a:s:k", Secret("v")) })
	if _, err := os.Stat(filepath.Join(dir, DBFile)); err != nil {
		t.Errorf("database not at %s: %v", filepath.Join(dir, DBFile), err)
	}
}
