//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package store

import (
	"fmt"
	"runtime"
	"time"
)

// acquireLock refuses: without a lock that dies with its process, two
// daemons could share one database.
func acquireLock(dir string, _ time.Time) (*dirLock, error) {
	return nil, fmt.Errorf("cannot lock data directory %s: snugd has no directory lock for %s/%s (it runs on Linux, macOS, the BSDs and Windows)", dir, runtime.GOOS, runtime.GOARCH)
}
