//go:build !linux && !darwin && !freebsd

package api

import "net"

// checkPeer has no per-connection check on this system: the socket's mode
// (0600) and the data directory's (0700, or its owner-only ACL on Windows)
// decide who can connect at all. See ListenCtl.
func checkPeer(net.Conn) error { return nil }
