package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-sqlite3"
)

// Bounds on a user DB read by ReadUserDB.
const (
	MaxImportRows       = 10000   // 8 slots per app: over a thousand apps
	MaxImportValueBytes = 1 << 20 // per column value; a requirement is tens of KiB at most
	// MaxImportBytes bounds the column values of all rows together, so a
	// file of many large values cannot make ReadUserDB hold gigabytes: a
	// real row is a few KiB, and MaxImportRows of them fit many times over.
	MaxImportBytes = 64 << 20
)

// ErrNotUserDB: the file cannot be imported as a whole (not SQLite, another
// user_version, no usable snug_connections table, too many rows, damaged).
var ErrNotUserDB = errors.New("not an importable user DB")

// ImportRow is one snug_connections row of an untrusted user DB, with the
// values exactly as stored (timestamps as the file spells them). A row that
// is structurally unusable has Unusable set to why, and only the fields that
// passed their checks filled in (AppID and Slot when they did, for the
// report).
type ImportRow struct {
	Index                  int // 0-based position among the file's rows
	AppID                  string
	Slot                   string
	RequirementJSON        string
	RequirementVersion     int64
	Provenance             string
	Confidence             *float64
	Status                 string
	PendingRequirementJSON *string
	Imported               int64
	AllowedHosts           string
	ApprovedAt             *string
	RevokedAt              *string
	CreatedAt              string
	UpdatedAt              string
	Unusable               string // "" for a structurally sound row
}

// importColumn describes one column's DDL for structural checks.
type importColumn struct {
	name     string
	kind     string // "text", "integer" or "real"
	nullable bool
	set      func(r *ImportRow, v any)
}

func str(v any) string { return v.(string) }

func strPtr(v any) *string {
	if v == nil {
		return nil
	}
	s := v.(string)
	return &s
}

// userDBColumns are the 14 columns in DDL order.
func userDBColumns() []importColumn {
	return []importColumn{
		{"app_id", "text", false, func(r *ImportRow, v any) { r.AppID = str(v) }},
		{"slot", "text", false, func(r *ImportRow, v any) { r.Slot = str(v) }},
		{"requirement_json", "text", false, func(r *ImportRow, v any) { r.RequirementJSON = str(v) }},
		{"requirement_version", "integer", false, func(r *ImportRow, v any) { r.RequirementVersion = v.(int64) }},
		{"provenance", "text", false, func(r *ImportRow, v any) { r.Provenance = str(v) }},
		{"confidence", "real", true, func(r *ImportRow, v any) {
			if v != nil {
				f := v.(float64)
				r.Confidence = &f
			}
		}},
		{"status", "text", false, func(r *ImportRow, v any) { r.Status = str(v) }},
		{"pending_requirement_json", "text", true, func(r *ImportRow, v any) { r.PendingRequirementJSON = strPtr(v) }},
		{"imported", "integer", false, func(r *ImportRow, v any) { r.Imported = v.(int64) }},
		{"allowed_hosts", "text", false, func(r *ImportRow, v any) { r.AllowedHosts = str(v) }},
		{"approved_at", "text", true, func(r *ImportRow, v any) { r.ApprovedAt = strPtr(v) }},
		{"revoked_at", "text", true, func(r *ImportRow, v any) { r.RevokedAt = strPtr(v) }},
		{"created_at", "text", false, func(r *ImportRow, v any) { r.CreatedAt = str(v) }},
		{"updated_at", "text", false, func(r *ImportRow, v any) { r.UpdatedAt = str(v) }},
	}
}

// judge checks one value of the column; it returns the value in its Go
// type, or why the row is unusable. The reason names the column and the
// type, never the value.
func (c importColumn) judge(typ string, size sql.NullInt64, v any) (any, string) {
	if typ == "null" {
		if c.nullable {
			return nil, ""
		}
		return nil, c.name + " is NULL"
	}
	if size.Int64 > MaxImportValueBytes || v == nil {
		return nil, fmt.Sprintf("%s is %d bytes, over the %d-byte bound", c.name, size.Int64, MaxImportValueBytes)
	}
	switch c.kind {
	case "text":
		s, ok := v.(string)
		if typ != "text" || !ok {
			return nil, fmt.Sprintf("%s is %s, want text", c.name, typ)
		}
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			return nil, c.name + " is not valid UTF-8 text"
		}
		return s, ""
	case "integer":
		if i, ok := v.(int64); ok && typ == "integer" {
			return i, ""
		}
		return nil, fmt.Sprintf("%s is %s, want integer", c.name, typ)
	default: // real; SQLite stores a whole number in a REAL column as either
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int64:
			f = float64(x)
		default:
			return nil, fmt.Sprintf("%s is %s, want real", c.name, typ)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, c.name + " is not a finite number"
		}
		return f, ""
	}
}

// untrustedPragmas harden the connection to a file someone else wrote: no
// schema function that is not marked harmless, no writes, page cells checked
// as they are read, and no memory-mapped I/O (a damaged file could fault).
const untrustedPragmas = `PRAGMA trusted_schema = OFF;
PRAGMA query_only = ON;
PRAGMA cell_size_check = ON;
PRAGMA mmap_size = 0;`

// ReadUserDB reads the snug_connections rows of the user DB at path, an
// untrusted file. It opens the file read-only and immutable,
// with trusted_schema off; refuses (ErrNotUserDB) a file that is not SQLite,
// whose user_version is not 6, whose snug_connections is missing, a view, a
// virtual table, lacks a column or computes one, holds more than
// MaxImportRows rows or more than MaxImportBytes of values, fails SQLite's
// quick check of that table, or has a non-empty write-ahead log beside it. Every
// other row is returned, a structurally unusable one (a wrong column type,
// NULL in a NOT NULL column, a value over MaxImportValueBytes, text that is
// not UTF-8) with Unusable saying why. It never reads snug_secrets or any
// other table. Judging the rows (the three branches) is the caller's.
func ReadUserDB(ctx context.Context, path string) ([]ImportRow, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := checkSQLiteHeader(path); err != nil {
		return nil, err
	}
	// The file is read immutable, so SQLite ignores a write-ahead log
	// beside it: committed transactions still in there would silently be
	// missing (a Snug app that has the file open holds its newest rows
	// there). Such a file is refused instead of read stale.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%w: %s has changes in %s-wal that are not in the file yet: close the program that has it open, then import again", ErrNotUserDB, path, filepath.Base(path))
	}
	hook := func(c *sqlite3.SQLiteConn) error {
		// A value past this length fails the whole read instead of being
		// loaded; octet_length below reports sizes without loading them.
		c.SetLimit(sqlite3.SQLITE_LIMIT_LENGTH, 4*MaxImportValueBytes)
		c.SetLimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
		return execHook(untrustedPragmas)(c)
	}
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{ConnectHook: hook}, dsn: fileURI(path, "mode=ro&immutable=1")})
	defer db.Close()
	db.SetMaxOpenConns(1)
	notUserDB := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrNotUserDB, path, fmt.Sprintf(format, args...))
	}

	var userVersion int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&userVersion); err != nil {
		return nil, notUserDB("not a readable SQLite database (%v)", err)
	}
	if userVersion != UserVersion {
		return nil, notUserDB("user_version is %d; snugd imports user DBs of version %d only", userVersion, UserVersion)
	}
	var typ, ddl sql.NullString
	err = db.QueryRowContext(ctx, "SELECT type, sql FROM sqlite_schema WHERE name = 'snug_connections' COLLATE NOCASE").Scan(&typ, &ddl)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, notUserDB("no snug_connections table")
	case err != nil:
		return nil, notUserDB("unreadable schema (%v)", err)
	case typ.String != "table":
		return nil, notUserDB("snug_connections is a %s, not a table", typ.String)
	case strings.HasPrefix(strings.ToUpper(strings.Join(strings.Fields(ddl.String), " ")), "CREATE VIRTUAL"):
		return nil, notUserDB("snug_connections is a virtual table")
	}
	if err := checkUserDBColumns(ctx, db); err != nil {
		return nil, notUserDB("%v", err)
	}
	var count int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM snug_connections").Scan(&count); err != nil {
		return nil, notUserDB("cannot count rows (%v)", err)
	}
	if count > MaxImportRows {
		return nil, notUserDB("%d connection rows, over the bound of %d", count, MaxImportRows)
	}
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check(snug_connections)").Scan(&check); err != nil || check != "ok" {
		return nil, notUserDB("snug_connections fails SQLite's integrity check")
	}
	return readUserDBRows(ctx, db)
}

// checkUserDBColumns requires the 14 columns, none of them generated or
// hidden (a generated column would compute schema-supplied SQL).
func checkUserDBColumns(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT name, hidden FROM pragma_table_xinfo('snug_connections')")
	if err != nil {
		return fmt.Errorf("cannot read the columns of snug_connections (%v)", err)
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		var hidden int
		if err := rows.Scan(&name, &hidden); err != nil {
			return err
		}
		if hidden != 0 {
			return fmt.Errorf("snug_connections has a generated or hidden column")
		}
		have[strings.ToLower(name)] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, c := range userDBColumns() {
		if !have[c.name] {
			return fmt.Errorf("snug_connections has no %s column", c.name)
		}
	}
	return nil
}

func readUserDBRows(ctx context.Context, db *sql.DB) ([]ImportRow, error) {
	cols := userDBColumns()
	var sel []string
	for _, c := range cols {
		sel = append(sel, fmt.Sprintf("typeof(%[1]s), octet_length(%[1]s), CASE WHEN octet_length(%[1]s) <= %[2]d THEN %[1]s END", c.name, MaxImportValueBytes))
	}
	rows, err := db.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM snug_connections")
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read snug_connections (%v)", ErrNotUserDB, err)
	}
	defer rows.Close()
	types := make([]string, len(cols))
	sizes := make([]sql.NullInt64, len(cols))
	values := make([]any, len(cols))
	dest := make([]any, 0, 3*len(cols))
	for i := range cols {
		dest = append(dest, &types[i], &sizes[i], &values[i])
	}
	var out []ImportRow
	var total int64
	for rows.Next() {
		if len(out) == MaxImportRows {
			return nil, fmt.Errorf("%w: more than %d connection rows", ErrNotUserDB, MaxImportRows)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("%w: cannot read snug_connections (%v)", ErrNotUserDB, err)
		}
		for _, size := range sizes {
			if size.Int64 <= MaxImportValueBytes {
				total += size.Int64 // a larger value is not loaded
			}
		}
		if total > MaxImportBytes {
			return nil, fmt.Errorf("%w: the connection rows hold more than %d bytes, over the bound", ErrNotUserDB, MaxImportBytes)
		}
		r := ImportRow{Index: len(out)}
		for i, c := range cols {
			v, why := c.judge(types[i], sizes[i], values[i])
			if why != "" {
				if r.Unusable == "" {
					r.Unusable = why
				}
				continue
			}
			c.set(&r, v)
		}
		if r.Unusable != "" {
			// Keep only what a report needs.
			r = ImportRow{Index: r.Index, AppID: r.AppID, Slot: r.Slot, Unusable: r.Unusable}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%w: cannot read snug_connections (%v)", ErrNotUserDB, err)
	}
	return out, nil
}

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// checkSQLiteHeader refuses anything but a regular file that starts like an
// SQLite database, before SQLite itself looks at it.
func checkSQLiteHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotUserDB, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotUserDB, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrNotUserDB, path)
	}
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, []byte(sqliteMagic)) {
		return fmt.Errorf("%w: %s is not an SQLite database", ErrNotUserDB, path)
	}
	return nil
}
