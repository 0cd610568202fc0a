package store

import (
	"fmt"
	"syscall"
)

// DiskSpace reports the space left on the file system holding dir, as an
// unprivileged user may use it (statfs's f_bavail), and the file system's
// size, in bytes: what status and doctor show beside ErrStorageFull. Safe
// for concurrent use.
func DiskSpace(dir string) (free, size uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, fmt.Errorf("disk space of %s: %w", dir, err)
	}
	bs := uint64(st.Bsize)
	return st.Bavail * bs, st.Blocks * bs, nil
}
