//go:build unix

package main

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// runsAsSystem reports whether snugd runs as the machine's service rather
// than for one user: as root. (The system unit names its data directory
// itself, so its unprivileged DynamicUser never needs this default.)
func runsAsSystem() bool { return os.Geteuid() == 0 }

// checkOwner refuses a data directory that belongs to another user: its
// owner could read the sealed store and swap the config.
func checkOwner(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("owned by uid %d, not by this user (uid %d)", st.Uid, euid)
	}
	return nil
}
