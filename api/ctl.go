package api

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// CtlSocket is the ctl channel's unix socket, in the data directory.
const CtlSocket = "snugd.sock"

// ListenCtl creates the ctl channel's socket, dir/snugd.sock, mode 0600,
// and returns a listener that accepts only peers running as this process's
// user or as root (checked per connection: SO_PEERCRED on Linux,
// LOCAL_PEERCRED, which getpeereid reads, on macOS and FreeBSD).
//
// A socket left by a daemon that died is replaced, but only when nothing
// answers on it (the data directory's lock already keeps a second daemon
// out); any other file at that path is refused, never removed. On other
// systems, Windows included (AF_UNIX since Windows 10 1803), peer
// credentials are not available: the socket's mode and the data directory
// (0700, or its owner-only ACL on Windows) are the gate there. A named
// pipe with an owner-only ACL would add the per-connection check on
// Windows; snugd does not have one yet.
func ListenCtl(dir string, log *slog.Logger) (net.Listener, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	path := filepath.Join(dir, CtlSocket)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("ctl socket: data directory %s is not a directory", dir)
	} else if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("ctl socket: data directory %s has mode %04o; it must be 0700", dir, fi.Mode().Perm())
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("ctl socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil && runtime.GOOS != "windows" {
		l.Close()
		return nil, fmt.Errorf("ctl socket: %w", err)
	}
	return &peerListener{Listener: l, log: log.With("component", "ctl")}, nil
}

// removeStaleSocket removes a socket at path that no daemon answers on.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ctl socket: %w", err)
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("ctl socket: %s exists and is not a socket; move it away", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("ctl socket: a daemon already answers on %s", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("ctl socket: remove the stale %s: %w", path, err)
	}
	return nil
}

// peerListener accepts only connections whose peer may administer snugd.
type peerListener struct {
	net.Listener
	log *slog.Logger
}

// Accept returns the next connection from an allowed peer; others are
// closed unanswered and logged.
func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := checkPeer(c); err != nil {
			l.log.Warn("ctl connection refused", "err", err)
			c.Close()
			continue
		}
		return c, nil
	}
}

// allowedUID reports whether a peer running as uid may use the ctl
// channel: the daemon's own user, or root.
func allowedUID(uid int) bool { return uid == os.Geteuid() || uid == 0 }
