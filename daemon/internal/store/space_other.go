//go:build !linux

package store

import (
	"errors"
	"fmt"
)

// DiskSpace reports the space left on the file system holding dir and its
// size, in bytes. It is Linux-only for now (statfs's fields differ from
// one system to the next); elsewhere it returns errors.ErrUnsupported.
func DiskSpace(dir string) (free, size uint64, err error) {
	return 0, 0, fmt.Errorf("disk space of %s: %w", dir, errors.ErrUnsupported)
}
