package api

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
)

// A full or read-only disk under the import spool is STORAGE_FULL, not a
// body error; a body that breaks off stays the body's.
func TestSpoolError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want errcode.Code
	}{
		{&os.PathError{Op: "write", Path: "/x/import.db", Err: syscall.ENOSPC}, errcode.StorageFull},
		{&os.PathError{Op: "close", Path: "/x/import.db", Err: syscall.EROFS}, errcode.StorageFull},
		{io.ErrUnexpectedEOF, errcode.BadRequest},
	} {
		var ec *errcode.Error
		if err := spoolError(tc.err); !errors.As(err, &ec) || ec.Code != tc.want {
			t.Errorf("spoolError(%v) = %v, want %s", tc.err, err, tc.want)
		}
	}
}
