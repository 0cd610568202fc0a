//go:build darwin || freebsd

package api

import (
	"fmt"
	"net"
	"syscall"
	"unsafe"
)

// LOCAL_PEERCRED, what getpeereid(3) reads: level SOL_LOCAL (0), option
// LOCAL_PEERCRED (1), answering a struct xucred whose cr_version (0) and
// cr_uid are its first two 32-bit words on both systems.
const (
	solLocal      = 0
	localPeerCred = 1
	xucredVersion = 0
)

// checkPeer reads the peer's credentials with LOCAL_PEERCRED. The standard
// library has no wrapper for it and this folder takes no dependency for
// one system call, so it is called directly.
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
		buf  [128]byte // larger than any struct xucred
		size = uint32(len(buf))
		cerr error
	)
	if err := raw.Control(func(fd uintptr) {
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, solLocal, localPeerCred,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			cerr = errno
		}
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	version := *(*uint32)(unsafe.Pointer(&buf[0]))
	uid := *(*uint32)(unsafe.Pointer(&buf[4]))
	if size < 8 || version != xucredVersion {
		return fmt.Errorf("peer credentials: unexpected struct xucred (version %d, %d bytes)", version, size)
	}
	if !allowedUID(int(uid)) {
		return fmt.Errorf("peer uid %d is neither the daemon's user nor root", uid)
	}
	return nil
}
