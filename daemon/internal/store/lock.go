package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LockHolder is what the lock file records about the process that holds a
// data directory.
type LockHolder struct {
	PID     int
	Started time.Time
}

// String reads "pid 1234, started 2026-05-01T10:00:00.000Z".
func (h LockHolder) String() string {
	return fmt.Sprintf("pid %d, started %s", h.PID, FormatTime(h.Started))
}

// ErrNoLockHolder: the lock file records no holder. No store has the
// directory open, or the last one closed cleanly, or one is just starting.
var ErrNoLockHolder = errors.New("no lock holder recorded")

// maxLockFileBytes bounds what ReadLockHolder reads; the canonical record is
// well under it.
const maxLockFileBytes = 128

// ReadLockHolder reports the holder recorded in dir's lock file, without
// taking the lock, for diagnostics (snugd ctl doctor). A record can be stale:
// a process killed outright leaves its record behind until the next Open
// replaces it, and the PID may since belong to another process. It returns
// ErrNoLockHolder when nothing is recorded.
func ReadLockHolder(dir string) (LockHolder, error) {
	p := filepath.Join(dir, LockFile)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return LockHolder{}, ErrNoLockHolder
	}
	if err != nil {
		return LockHolder{}, fmt.Errorf("read lock file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxLockFileBytes+1))
	if err != nil {
		return LockHolder{}, fmt.Errorf("read lock file %s: %w", p, err)
	}
	if len(b) == 0 {
		return LockHolder{}, ErrNoLockHolder
	}
	h, err := parseLockHolder(b)
	if err != nil {
		return LockHolder{}, fmt.Errorf("lock file %s: %w", p, err)
	}
	return h, nil
}

// formatLockHolder writes the one canonical record: "pid=N started=T\n".
func formatLockHolder(h LockHolder) []byte {
	return fmt.Appendf(nil, "pid=%d started=%s\n", h.PID, FormatTime(h.Started))
}

// parseLockHolder accepts exactly what formatLockHolder writes and nothing
// else, so a record always prints back to the same bytes.
func parseLockHolder(b []byte) (LockHolder, error) {
	bad := func(why string) (LockHolder, error) {
		return LockHolder{}, fmt.Errorf("unreadable holder record: %s", why)
	}
	if len(b) > maxLockFileBytes {
		return bad("too long")
	}
	line, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return bad("no final newline")
	}
	rest, ok := strings.CutPrefix(line, "pid=")
	if !ok {
		return bad("no pid")
	}
	pidText, started, ok := strings.Cut(rest, " started=")
	if !ok {
		return bad("no start time")
	}
	if pidText == "" || len(pidText) > 10 || pidText[0] == '0' || strings.Trim(pidText, "0123456789") != "" {
		return bad("pid is not a positive decimal number")
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid > math.MaxInt32 {
		return bad("pid out of range")
	}
	t, err := ParseTime(started)
	if err != nil || FormatTime(t) != started {
		return bad("start time is not in the store's format")
	}
	return LockHolder{PID: pid, Started: t}, nil
}

// lockedError names the holder of a lock that could not be taken.
func lockedError(dir string) error {
	h, err := ReadLockHolder(dir)
	if err != nil {
		return fmt.Errorf("%w: %s is held by another snugd (holder not known: %v): stop that snugd, or use another data directory", ErrLocked, dir, err)
	}
	return fmt.Errorf("%w: %s is held by another snugd (%s): stop that snugd, or use another data directory", ErrLocked, dir, h)
}

// dirLock holds the lock file open; the platform's acquireLock takes the
// lock on it (lock_unix.go, lock_windows.go).
type dirLock struct{ f *os.File }

// release clears the record, so no stale holder is reported, then lets go
// of the lock by closing the file.
func (l *dirLock) release() error {
	err := l.f.Truncate(0)
	return errors.Join(err, l.f.Close())
}

// writeHolder replaces the lock file's record with this process's.
func writeHolder(f *os.File, started time.Time) error {
	rec := formatLockHolder(LockHolder{PID: os.Getpid(), Started: started})
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("write lock holder: %w", err)
	}
	if _, err := f.WriteAt(rec, 0); err != nil {
		return fmt.Errorf("write lock holder: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write lock holder: %w", err)
	}
	return nil
}
