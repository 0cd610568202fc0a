//go:build windows

package main

import (
	"io/fs"

	"github.com/kardianos/service"
)

// runsAsSystem reports whether snugd runs as the machine's service rather
// than for one user: when the service control manager started it.
func runsAsSystem() bool { return !service.Interactive() }

// checkOwner accepts every directory: on Windows the ACL that %ProgramData%
// and %LOCALAPPDATA% give their subdirectories decides who may read them
// (see packaging/windows.md).
func checkOwner(fs.FileInfo) error { return nil }
