//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// acquireLock takes an exclusive flock(2) on the lock file. The kernel drops
// it when the process dies, however it dies, so a crash never leaves the
// directory locked. flock locks belong to the open file description, so a
// second Open in the same process is refused just like one from another.
func acquireLock(dir string, started time.Time) (*dirLock, error) {
	p := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", p, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkOwner("lock file", p, fi)
	}
	if err == nil && fi.Mode().Perm() != 0o600 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, lockedError(dir)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if err := writeHolder(f, started); err != nil {
		f.Close()
		return nil, err
	}
	return &dirLock{f: f}, nil
}
