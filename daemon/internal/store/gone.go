package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// missingDB reports whether the database file at path is missing or empty,
// and which, without creating it.
func missingDB(path string) (what string, ok bool) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing", true
	case err == nil && fi.Mode().IsRegular() && fi.Size() == 0:
		return "empty (0 bytes)", true
	}
	return "", false
}

// refuseGoneDB returns ErrDatabaseGone, with the way out, when keys
// already holds a master key: a database that is missing, empty or new
// (what says which) beside a key is one that was lost, not a first start.
// A key source that holds no key lets the start go on.
func refuseGoneDB(ctx context.Context, keys KeySource, dbPath, what string) error {
	key, err := keys.Load(ctx)
	if key != nil {
		clear(key[:])
	}
	if errors.Is(err, ErrNoMasterKey) {
		return nil
	}
	// A key that is there but cannot be read (its mode, its size) is
	// still a key: the database beside it was lost all the same.
	return fmt.Errorf("%w: %s is %s, but the master key (%s) of the database snugd kept is still there, so the database was deleted, emptied or replaced since snugd last ran; snugd will not start over by itself, which would lose every paired host, connection and credential: restore snugd.db (and snugd.db-wal, if the backup has one) from a backup, or run \"snugd ctl reset --yes\" to start over (it sets the old files aside and says what is lost)",
		ErrDatabaseGone, dbPath, what, keys)
}
