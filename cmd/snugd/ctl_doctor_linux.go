package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// socketPeerPID returns the process id of the daemon listening on the unix
// socket at path, from the connected socket's peer credentials
// (SO_PEERCRED).
func socketPeerPID(path string) (int, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return int(cred.Pid), nil
}

// portOwnerPID reports whether the TCP socket listening on addr:port is one
// of pid's open files: it returns pid when it is, and -1 when another
// process holds it. It reads /proc/net/tcp or tcp6 for the listening
// socket's inode and pid's /proc/PID/fd for that inode.
func portOwnerPID(addr string, port, pid int) (int, error) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return 0, err
	}
	table, local := "/proc/net/tcp", procNetAddr(a, port)
	if a.Is6() {
		table = "/proc/net/tcp6"
	}
	inode, err := listeningInode(table, local)
	if err != nil {
		return 0, err
	}
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		return 0, err
	}
	want := "socket:[" + inode + "]"
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name())); err == nil && target == want {
			return pid, nil
		}
	}
	return -1, nil
}

// procNetAddr spells addr:port as /proc/net/tcp does: each 32-bit word of
// the address in host (little-endian) byte order, in hex, then the port.
func procNetAddr(a netip.Addr, port int) string {
	b := a.AsSlice()
	for i := 0; i+4 <= len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return strings.ToUpper(hex.EncodeToString(b)) + fmt.Sprintf(":%04X", port)
}

// listeningInode finds the inode of the socket in state LISTEN (0A) bound
// to local in a /proc/net/tcp table.
func listeningInode(table, local string) (string, error) {
	f, err := os.Open(table)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 10 && fields[1] == local && fields[3] == "0A" {
			return fields[9], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no socket listens there")
}
