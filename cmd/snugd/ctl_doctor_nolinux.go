//go:build !linux

package main

import "errors"

var errNoProcInfo = errors.New("not available on this system")

// socketPeerPID is Linux-only (SO_PEERCRED); elsewhere doctor does without.
func socketPeerPID(string) (int, error) { return 0, errNoProcInfo }

// portOwnerPID is Linux-only (/proc); elsewhere doctor relies on the
// daemon's report that it listens on the port.
func portOwnerPID(string, int, int) (int, error) { return 0, errNoProcInfo }
