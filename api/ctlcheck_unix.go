//go:build unix

package api

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// checkCtlSocket refuses, before snugd ctl sends a byte, a ctl socket
// someone else could have put there: the socket must be a socket (not a
// symlink to one) owned by root or by the user running snugd ctl, in a
// data directory owned by one of them that neither group nor others may
// write. Otherwise another local user could stand up a socket of their
// own and read what the administrator sends (credential values, pairing
// approvals) or answer in snugd's name. The server's peer credentials are
// checked after connecting as well (checkServerPeer).
func checkCtlSocket(socket string) error {
	dir := filepath.Dir(socket)
	fi, err := os.Stat(dir)
	if err != nil {
		return nil // nothing to vouch for: the dial fails as unreachable
	}
	if err := ownedSafely(dir, fi); err != nil {
		return err
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: the data directory %s has mode %04o: others could replace its socket (chmod 700 %s)", ErrUnsafeSocket, dir, fi.Mode().Perm(), dir)
	}
	si, err := os.Lstat(socket)
	if err != nil {
		return nil
	}
	if si.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%w: %s is not a socket (a symlink or a file in its place)", ErrUnsafeSocket, socket)
	}
	return ownedSafely(socket, si)
}

func ownedSafely(path string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := int(st.Uid); !allowedUID(uid) {
		return fmt.Errorf("%w: %s belongs to uid %d, neither root nor you (uid %d)", ErrUnsafeSocket, path, uid, os.Geteuid())
	}
	return nil
}
