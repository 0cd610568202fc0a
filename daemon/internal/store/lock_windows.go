//go:build windows

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

const errSharingViolation syscall.Errno = 32 // ERROR_SHARING_VIOLATION

// acquireLock opens the lock file for writing with a share mode that admits
// readers only: a second snugd's open for writing fails with a sharing
// violation until this handle closes, which Windows does when the process
// ends, however it ends. Readers (ReadLockHolder) can still read the record.
func acquireLock(dir string, started time.Time) (*dirLock, error) {
	p := filepath.Join(dir, LockFile)
	name, err := syscall.UTF16PtrFromString(p)
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", p, err)
	}
	h, err := syscall.CreateFile(name, syscall.GENERIC_READ|syscall.GENERIC_WRITE,
		syscall.FILE_SHARE_READ, nil, syscall.OPEN_ALWAYS, syscall.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		if errors.Is(err, errSharingViolation) {
			return nil, lockedError(dir)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	f := os.NewFile(uintptr(h), p)
	if err := writeHolder(f, started); err != nil {
		f.Close()
		return nil, err
	}
	return &dirLock{f: f}, nil
}
