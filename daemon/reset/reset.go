package reset

import (
	"context"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
)

// ErrRunning: a snugd (or another reset) has the data directory open. The
// error it is matched in names the holder's pid.
var ErrRunning = store.ErrLocked

// Report is what a reset loses, and where it put the files.
type Report struct {
	// Files are the files set aside (or, for Plan, to be set aside):
	// helpers (the linked-device helpers' sessions), snugd.db,
	// snugd.db-wal, snugd.db-shm and secrets.key, those present.
	Files []string
	// Counted is false when the database could not be read (missing,
	// emptied, damaged); the counts are zero then.
	Counted     bool
	Hosts       int // paired hosts, whose tokens stop working
	Connections int // connection rows, approved or not
	Credentials int // sealed credential values, one per field
	// Aside is the directory inside the data directory that holds the
	// files after Run; "" for Plan.
	Aside string
}

// Plan reports what Run would set aside and lose, changing nothing. It
// takes the data directory's lock for the moment it reads, so it fails
// with ErrRunning while snugd runs.
func Plan(ctx context.Context, dir string) (Report, error) {
	return run(ctx, dir, false)
}

// Run sets the data directory's helper sessions, database, WAL files and
// master key aside in a new directory reset-TIMESTAMP inside it (mode
// 0700), under the directory's lock, and reports what was lost. The next
// start creates a new database and key. Errors: ErrRunning while snugd
// runs; a missing data directory; a file that cannot be moved (the error
// names it).
func Run(ctx context.Context, dir string) (Report, error) {
	return run(ctx, dir, true)
}

func run(ctx context.Context, dir string, apply bool) (Report, error) {
	r, err := store.Reset(ctx, dir, apply, time.Now())
	return Report{Files: r.Files, Counted: r.Counted, Hosts: r.Hosts, Connections: r.Connections, Credentials: r.Secrets, Aside: r.Aside}, err
}
