package store

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// TestClassify: the SQLite result codes and OS errnos of a full disk, a
// read-only file system and a damaged file are marked, through any
// wrapping, and nothing else is.
func TestClassify(t *testing.T) {
	other := errors.New("something else")
	tests := []struct {
		name string
		err  error
		want error // nil: left unmarked
	}{
		{"SQLITE_FULL", sqlite3.Error{Code: sqlite3.ErrFull}, ErrStorageFull},
		{"SQLITE_READONLY", sqlite3.Error{Code: sqlite3.ErrReadonly, ExtendedCode: sqlite3.ErrReadonlyDbMoved}, ErrStorageFull},
		{"SQLITE_IOERR_WRITE with ENOSPC", sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrWrite, SystemErrno: syscall.ENOSPC}, ErrStorageFull},
		{"SQLITE_IOERR_FSYNC with EROFS", sqlite3.Error{Code: sqlite3.ErrIoErr, ExtendedCode: sqlite3.ErrIoErrFsync, SystemErrno: syscall.EROFS}, ErrStorageFull},
		{"SQLITE_CANTOPEN with EROFS", sqlite3.Error{Code: sqlite3.ErrCantOpen, SystemErrno: syscall.EROFS}, ErrStorageFull},
		{"SQLITE_IOERR with EDQUOT", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.EDQUOT}, ErrStorageFull},
		{"ENOSPC from a file write", fmt.Errorf("write lock holder: %w", syscall.ENOSPC), ErrStorageFull},
		{"EROFS from a file open", fmt.Errorf("open lock file: %w", syscall.EROFS), ErrStorageFull},
		{"SQLITE_CORRUPT", sqlite3.Error{Code: sqlite3.ErrCorrupt}, ErrDamaged},
		{"SQLITE_NOTADB", sqlite3.Error{Code: sqlite3.ErrNotADB}, ErrDamaged},
		{"SQLITE_IOERR with EIO", sqlite3.Error{Code: sqlite3.ErrIoErr, SystemErrno: syscall.EIO}, nil},
		{"SQLITE_CONSTRAINT", sqlite3.Error{Code: sqlite3.ErrConstraint}, nil},
		{"SQLITE_BUSY", sqlite3.Error{Code: sqlite3.ErrBusy}, nil},
		{"EACCES", fmt.Errorf("open: %w", syscall.EACCES), nil},
		{"another error", other, nil},
	}
	// The read-only ones also match ErrReadOnlyDisk; no other does.
	readOnly := map[string]bool{"SQLITE_READONLY": true, "SQLITE_IOERR_FSYNC with EROFS": true, "SQLITE_CANTOPEN with EROFS": true, "EROFS from a file open": true}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cause := fmt.Errorf("insert host %q: %w", "h_1", tc.err)
			got := classify(cause)
			if is := errors.Is(got, ErrReadOnlyDisk); is != readOnly[tc.name] {
				t.Errorf("errors.Is(classify(%v), ErrReadOnlyDisk) = %v, want %v", cause, is, !is)
			}
			for _, kind := range []error{ErrStorageFull, ErrDamaged} {
				if is := errors.Is(got, kind); is != (kind == tc.want) {
					t.Errorf("errors.Is(classify(%v), %v) = %v, want %v", cause, kind, is, !is)
				}
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("classify(%v) = %v, which no longer wraps the cause", cause, got)
			}
			if tc.want == nil && got != cause {
				t.Errorf("classify(%v) = %v, want it unchanged", cause, got)
			}
			if again := classify(got); again != got {
				t.Errorf("classify(classify(err)) = %v, want %v", again, got)
			}
		})
	}
	if classify(nil) != nil {
		t.Error("classify(nil) != nil")
	}
}
