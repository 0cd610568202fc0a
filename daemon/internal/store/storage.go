package store

import (
	"errors"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// ErrStorageFull: a write failed because the disk holding the data
// directory is full (SQLITE_FULL, ENOSPC, EDQUOT) or its file system is
// read-only (SQLITE_READONLY, EROFS). The transaction was rolled back, so
// nothing was changed; the store needs no repair, and the same write
// succeeds once space returns or the file system is writable again.
var ErrStorageFull = errors.New("the disk holding snugd's data is full or read-only")

// ErrReadOnlyDisk is the part of ErrStorageFull that is a read-only file
// system (SQLITE_READONLY, EROFS) rather than a full one: an error that
// matches it matches ErrStorageFull too, so a caller that tells the two
// apart asks for this one first.
var ErrReadOnlyDisk = errors.New("the disk holding snugd's data is read-only")

// ErrDamaged: SQLite found the database file damaged (SQLITE_CORRUPT,
// SQLITE_NOTADB), or Check's quick_check reported problems. Writing on
// would spread the damage: the way out is a backup.
var ErrDamaged = errors.New("the database is damaged")

// storageError is a failure the store recognised as one of its typed
// errors. It unwraps to both the sentinel and the cause, so errors.Is
// finds ErrStorageFull (or ErrDamaged) as well as every error that fn's
// own error wrapped; its text is the cause's, which already names the
// operation.
type storageError struct {
	kind     error
	err      error
	readOnly bool // a read-only file system: unwraps to ErrReadOnlyDisk too
}

func (e *storageError) Error() string { return e.kind.Error() + ": " + e.err.Error() }
func (e *storageError) Unwrap() []error {
	if e.readOnly {
		return []error{e.kind, ErrReadOnlyDisk, e.err}
	}
	return []error{e.kind, e.err}
}

// classify returns err marked ErrStorageFull or ErrDamaged when SQLite or
// the OS reported a full disk, a read-only file system or a damaged file,
// and err itself otherwise (nil for nil). An error already marked is
// returned as it is.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrStorageFull) || errors.Is(err, ErrDamaged) {
		return err
	}
	if kind := kindOf(err); kind != nil {
		return &storageError{kind: kind, err: err, readOnly: kind == ErrStorageFull && readOnly(err)}
	}
	return err
}

// readOnly reports whether err, already known as ErrStorageFull, is a
// read-only file system rather than a full one.
func readOnly(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrReadonly || se.SystemErrno == syscall.EROFS
	}
	var errno syscall.Errno
	return errors.As(err, &errno) && errno == syscall.EROFS
}

// kindOf reads the SQLite result code and the OS errno in err's chain.
func kindOf(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrFull, sqlite3.ErrReadonly:
			return ErrStorageFull
		case sqlite3.ErrCorrupt, sqlite3.ErrNotADB:
			return ErrDamaged
		}
		if isFullErrno(se.SystemErrno) {
			// SQLITE_IOERR_WRITE, _FSYNC, _TRUNCATE, … or SQLITE_CANTOPEN
			// carry the errno that caused them.
			return ErrStorageFull
		}
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && isFullErrno(errno) {
		return ErrStorageFull // a file the store writes itself: the lock, the key
	}
	return nil
}

// isFullErrno reports whether errno says the disk is full (ENOSPC, or a
// quota: EDQUOT) or the file system read-only (EROFS).
func isFullErrno(errno syscall.Errno) bool {
	return errno != 0 && (errno == syscall.ENOSPC || errno == syscall.EROFS || errno == syscall.EDQUOT)
}
