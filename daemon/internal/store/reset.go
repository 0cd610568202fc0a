package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-sqlite3"
)

// HelpersDir is the directory in the data directory where cmd/snugd keeps
// the linked-device helpers' sessions; Reset sets it aside with the
// database.
const HelpersDir = "helpers"

// ResetReport is what Reset found in a data directory, and so what a
// reset loses: the database's paired hosts, connections and sealed
// credentials, and the master key that opens them.
type ResetReport struct {
	// Files are the names Reset sets aside (or would), of HelpersDir,
	// DBFile, its -wal and -shm files and KeyFileName, those present.
	Files []string
	// Counted is false when the database could not be read (missing,
	// empty, damaged); the counts are zero then.
	Counted                     bool
	Hosts, Connections, Secrets int
	// Aside is the directory the files were moved to; "" for a dry run.
	Aside string
}

// Reset starts a stopped snugd's data directory over: under the directory
// lock, so no snugd can start meanwhile, it moves the helpers' sessions
// (HelpersDir), snugd.db, its -wal and -shm files and secrets.key into a
// new directory reset-TIMESTAMP inside dir (mode 0700), from which an
// administrator who finds a backup after all can still take them back.
// The next Open then creates a new database and a new key. With apply
// false it only reports what it would do.
//
// It counts what is lost from the database first, read-only; a database
// that does not open is reported uncounted, not refused: a damaged file is
// one reason to reset. Errors: ErrLocked (naming the holder) while a snugd
// has the directory open; a missing directory; a file that cannot be
// moved (those moved before it stay in the reset directory, which the
// error names).
func Reset(ctx context.Context, dir string, apply bool, now time.Time) (ResetReport, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ResetReport{}, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return ResetReport{}, fmt.Errorf("data directory %s: %w", dir, err)
	} else if !fi.IsDir() {
		return ResetReport{}, fmt.Errorf("data directory %s is not a directory", dir)
	}
	lock, err := acquireLock(dir, now)
	if err != nil {
		return ResetReport{}, err
	}
	defer lock.release()

	var rep ResetReport
	// helpers/ holds the linked-device helpers' sessions, which belong to
	// the connections the reset loses.
	for _, name := range []string{HelpersDir, DBFile, DBFile + "-wal", DBFile + "-shm", KeyFileName} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			rep.Files = append(rep.Files, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return ResetReport{}, fmt.Errorf("reset %s: %w", dir, err)
		}
	}
	rep.Hosts, rep.Connections, rep.Secrets, rep.Counted = countLost(ctx, filepath.Join(dir, DBFile))
	if !apply || len(rep.Files) == 0 {
		return rep, nil
	}
	aside := filepath.Join(dir, "reset-"+now.UTC().Format("20060102T150405.000Z"))
	if err := os.Mkdir(aside, 0o700); err != nil {
		return ResetReport{}, fmt.Errorf("reset %s: %w", dir, err)
	}
	rep.Aside = aside
	// The key goes last: a reset cut short leaves a database without its
	// key moved, or nothing, never a key without its database.
	for _, name := range rep.Files {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(aside, name)); err != nil {
			return rep, fmt.Errorf("reset %s: move %s to %s: %w", dir, name, aside, err)
		}
	}
	if err := errors.Join(syncDir(aside), syncDir(dir)); err != nil {
		return rep, fmt.Errorf("reset %s: sync: %w", dir, err)
	}
	return rep, nil
}

// countLost counts the paired hosts, connections and sealed credential
// values of the database at path, read-only; ok is false when it cannot.
func countLost(ctx context.Context, path string) (hosts, conns, secrets int, ok bool) {
	if _, missing := missingDB(path); missing {
		return 0, 0, 0, false
	}
	q := fmt.Sprintf("mode=ro&_busy_timeout=%d", busyTimeoutMS)
	if _, err := os.Lstat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
		// Nothing in a WAL to read: immutable creates no -wal or -shm,
		// so a dry run leaves the directory exactly as it was.
		q += "&immutable=1"
	}
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: fileURI(path, q)})
	defer db.Close()
	err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM snugd_hosts), (SELECT count(*) FROM snug_connections), (SELECT count(*) FROM snug_secrets)`).Scan(&hosts, &conns, &secrets)
	if err != nil {
		return 0, 0, 0, false
	}
	return hosts, conns, secrets, true
}
