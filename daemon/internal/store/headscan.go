package store

/*
#include <stdlib.h>

// The few functions of SQLite's C API the head scan calls, as sqlite3.h
// declares them; the library is the one github.com/mattn/go-sqlite3
// compiles into the binary.
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
int sqlite3_open_v2(const char *filename, sqlite3 **db, int flags, const char *vfs);
int sqlite3_close_v2(sqlite3 *db);
int sqlite3_exec(sqlite3 *db, const char *sql, void *callback, void *arg, char **errmsg);
int sqlite3_busy_timeout(sqlite3 *db, int ms);
const char *sqlite3_errmsg(sqlite3 *db);
int sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n, sqlite3_stmt **stmt, const char **tail);
int sqlite3_step(sqlite3_stmt *stmt);
int sqlite3_finalize(sqlite3_stmt *stmt);
int sqlite3_column_type(sqlite3_stmt *stmt, int col);
long long sqlite3_column_int64(sqlite3_stmt *stmt, int col);
const void *sqlite3_column_blob(sqlite3_stmt *stmt, int col);
int sqlite3_column_bytes(sqlite3_stmt *stmt, int col);

enum { rawMaxCols = 8 };

// raw_row is one row of a raw scan: each column as its bytes (the text
// or blob SQLite holds, or converts a real to) or, for an integer, the
// integer.
typedef struct {
	const void *p[rawMaxCols];
	int n[rawMaxCols];
	int type[rawMaxCols];
	long long i[rawMaxCols];
} raw_row;

// raw_step steps stmt once and, on a row, reads its first ncol columns:
// one call into C per row. The pointers are valid until the next step.
static int raw_step(sqlite3_stmt *stmt, int ncol, raw_row *r) {
	int rc = sqlite3_step(stmt);
	if (rc != 100) { // SQLITE_ROW
		return rc;
	}
	for (int c = 0; c < ncol && c < rawMaxCols; c++) {
		r->type[c] = sqlite3_column_type(stmt, c);
		if (r->type[c] == 1) { // SQLITE_INTEGER
			r->i[c] = sqlite3_column_int64(stmt, c);
			r->p[c] = 0;
			r->n[c] = 0;
		} else {
			r->p[c] = sqlite3_column_blob(stmt, c);
			r->n[c] = sqlite3_column_bytes(stmt, c);
		}
	}
	return rc;
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unsafe"
)

// The start's scans read 100,000 rows. Through database/sql and the
// driver each row costs a Next, a Scan, a Go string per column and a copy
// of it (about half the start's time); a raw scan steps a row with one
// call into C and hands over pointers into SQLite's page, valid for the
// callback. It runs on a read-only connection of its own (no mutex: one
// goroutine uses it), opened and closed around its one statement, which
// is its own read transaction.

// SQLite result codes and flags the raw scans use.
const (
	sqliteOK      = 0
	sqliteRow     = 100
	sqliteDone    = 101
	sqliteInteger = 1
	sqliteNull    = 5
	openReadOnly  = 0x00000001
	openNoMutex   = 0x00008000
	rawScanPragma = "PRAGMA query_only = ON; PRAGMA trusted_schema = OFF;"
)

// errNoRawScan says the raw connection could not be opened or the
// statement prepared: the caller falls back to database/sql.
var errNoRawScan = errors.New("raw scan unavailable")

// rawRow is the current row of a raw scan.
type rawRow struct{ r *C.raw_row }

// null reports whether column c is NULL.
func (w rawRow) null(c int) bool { return w.r._type[c] == sqliteNull }

// bytes is column c's bytes (nil for NULL): valid during the callback.
// An integer column must be read with text.
func (w rawRow) bytes(c int) []byte {
	switch {
	case w.null(c):
		return nil
	case w.r.n[c] == 0:
		return []byte{}
	}
	return unsafe.Slice((*byte)(w.r.p[c]), int(w.r.n[c]))
}

// text appends column c as SQLite's || sees it; false for NULL.
func (w rawRow) text(b []byte, c int) ([]byte, bool) {
	switch w.r._type[c] {
	case sqliteNull:
		return b, false
	case sqliteInteger:
		return strconv.AppendInt(b, int64(w.r.i[c]), 10), true
	}
	return append(b, w.bytes(c)...), true
}

// rawScan runs query (ncol columns, no parameter) and calls fn with every
// row. It returns an error wrapping errNoRawScan when it read nothing.
func (s *Store) rawScan(ctx context.Context, query string, ncol int, fn func(rawRow) error) error {
	if ncol > C.rawMaxCols {
		return fmt.Errorf("%w: %d columns", errNoRawScan, ncol)
	}
	path := C.CString(s.DBPath())
	defer C.free(unsafe.Pointer(path))
	var db *C.sqlite3
	rc := C.sqlite3_open_v2(path, &db, openReadOnly|openNoMutex, nil)
	if db != nil {
		defer C.sqlite3_close_v2(db)
	}
	if rc != sqliteOK {
		return fmt.Errorf("%w: open: %s", errNoRawScan, sqliteErr(db))
	}
	C.sqlite3_busy_timeout(db, busyTimeoutMS)
	pragmas := C.CString(rawScanPragma)
	defer C.free(unsafe.Pointer(pragmas))
	if C.sqlite3_exec(db, pragmas, nil, nil, nil) != sqliteOK {
		return fmt.Errorf("%w: configure: %s", errNoRawScan, sqliteErr(db))
	}
	q := C.CString(query)
	defer C.free(unsafe.Pointer(q))
	var stmt *C.sqlite3_stmt
	if C.sqlite3_prepare_v2(db, q, -1, &stmt, nil) != sqliteOK {
		return fmt.Errorf("%w: prepare: %s", errNoRawScan, sqliteErr(db))
	}
	defer C.sqlite3_finalize(stmt)
	// The row lives in C memory: a Go pointer passed on every step would
	// be checked on every step.
	r := (*C.raw_row)(C.calloc(1, C.sizeof_raw_row))
	if r == nil {
		return fmt.Errorf("%w: out of memory", errNoRawScan)
	}
	defer C.free(unsafe.Pointer(r))
	for n := 0; ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch rc := C.raw_step(stmt, C.int(ncol), r); rc {
		case sqliteRow:
		case sqliteDone:
			return nil
		default:
			return fmt.Errorf("scan: %s", sqliteErr(db))
		}
		if err := fn(rawRow{r}); err != nil {
			return err
		}
	}
}

// headScanQuery reads what ConnectionHead holds; the version's three
// columns are joined in Go exactly as headColumns' expression joins them.
const headScanQuery = "SELECT app_id, slot, status, allowed_hosts, imported, requirement_version, updated_at FROM snug_connections"

// rawHeads is EachConnectionHead's scan.
func (s *Store) rawHeads(ctx context.Context, fn func(*ConnectionHead) error) error {
	var (
		h       ConnectionHead
		version []byte
	)
	return s.rawScan(ctx, headScanQuery, 7, func(w rawRow) error {
		h.AppID, h.Slot, h.Status, h.AllowedHosts = w.bytes(0), w.bytes(1), w.bytes(2), w.bytes(3)
		var ok1, ok2, ok3 bool
		version, ok1 = w.text(version[:0], 4)
		version = append(version, ',')
		version, ok2 = w.text(version, 5)
		version = append(version, ',')
		version, ok3 = w.text(version, 6)
		h.Version = version
		if !ok1 || !ok2 || !ok3 {
			h.Version = nil // || of a NULL is NULL
		}
		h.Imported = len(h.Version) > 1 && h.Version[0] == '1' && h.Version[1] == ',' // as eachHead
		return fn(&h)
	})
}

// textScanQuery reads what ConnectionText holds.
const textScanQuery = "SELECT app_id, slot, status, requirement_json, pending_requirement_json FROM snug_connections"

// rawTexts is EachConnectionText's scan. A column of another type than
// text reads as database/sql reads it into sql.RawBytes: its bytes, an
// integer or real in its text form.
func (s *Store) rawTexts(ctx context.Context, fn func(*ConnectionText) error) error {
	var (
		c   ConnectionText
		buf [5][]byte
	)
	return s.rawScan(ctx, textScanQuery, 5, func(w rawRow) error {
		col := func(i int) []byte {
			if w.r._type[i] == sqliteInteger {
				buf[i], _ = w.text(buf[i][:0], i)
				return buf[i]
			}
			return w.bytes(i)
		}
		c.AppID, c.Slot, c.Status, c.RequirementJSON, c.PendingRequirementJSON = col(0), col(1), col(2), col(3), col(4)
		return fn(&c)
	})
}

func sqliteErr(db *C.sqlite3) string {
	if db == nil {
		return "out of memory"
	}
	return C.GoString(C.sqlite3_errmsg(db))
}
