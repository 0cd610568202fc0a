package api

import (
	"fmt"
	"net"
	"syscall"
)

// checkPeer reads the peer's credentials with SO_PEERCRED.
func checkPeer(c net.Conn) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("not a unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var (
		cred *syscall.Ucred
		cerr error
	)
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	if !allowedUID(int(cred.Uid)) {
		return fmt.Errorf("peer uid %d is neither the daemon's user nor root", cred.Uid)
	}
	return nil
}
