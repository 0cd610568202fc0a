//go:build unix

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkConfigFileMode refuses a config.json that someone other than its
// owner may write, or that belongs to neither this user nor root: whoever can
// write it chooses the transport policy.
func checkConfigFileMode(fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("mode %04o lets others write it; chmod go-w", fi.Mode().Perm())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("cannot tell its owner")
	}
	if euid := os.Geteuid(); int(st.Uid) != euid && st.Uid != 0 {
		return fmt.Errorf("owned by uid %d, neither this user (uid %d) nor root", st.Uid, euid)
	}
	return nil
}
