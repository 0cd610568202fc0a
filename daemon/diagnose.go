package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
)

// Offline diagnostics for snugd ctl doctor: they read the data directory
// without opening a Daemon and without taking its lock, and report nothing
// but file-level facts (never a row, never a credential).

// LockHolder reports the process recorded as holding the data directory's
// lock: ok is false when none is recorded. A killed daemon leaves its
// record until the next start replaces it.
func LockHolder(dir string) (pid int, started time.Time, ok bool, err error) {
	h, err := store.ReadLockHolder(dir)
	if errors.Is(err, store.ErrNoLockHolder) {
		return 0, time.Time{}, false, nil
	}
	if err != nil {
		return 0, time.Time{}, false, err
	}
	return h.PID, h.Started, true, nil
}

// CheckDatabase runs SQLite's quick_check on dir's database read-only and
// returns the problems found (none when sound). running says a daemon holds
// the file, so the check shares its WAL instead of opening the file
// immutable.
func CheckDatabase(ctx context.Context, dir string, running bool) ([]string, error) {
	return store.QuickCheck(ctx, dir, running)
}
