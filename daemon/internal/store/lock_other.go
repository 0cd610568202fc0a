//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package store

import (
	"fmt"
	"runtime"
	"time"
)

// dirLock is never made here: without a lock that dies with its process,
// two daemons could share one database, so the store refuses to open.
type dirLock struct{}

func acquireLock(dir string, _ time.Time) (*dirLock, error) {
	return nil, fmt.Errorf("cannot lock data directory %s: snugd has no directory lock for %s/%s (it runs on Linux, macOS, the BSDs and Windows)", dir, runtime.GOOS, runtime.GOARCH)
}

func (*dirLock) release() error { return nil }
