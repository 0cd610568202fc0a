package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// busyTimeoutMS is how long a connection waits for a lock another
// connection holds (a checkpoint, say) before failing with SQLITE_BUSY.
const busyTimeoutMS = 5000

// connector opens mattn/go-sqlite3 connections without registering a driver
// name in database/sql's global table.
type connector struct {
	drv *sqlite3.SQLiteDriver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.drv }

// execHook runs statements the DSN cannot carry on every new connection.
func execHook(statements string) func(*sqlite3.SQLiteConn) error {
	return func(c *sqlite3.SQLiteConn) error {
		if _, err := c.Exec(statements, nil); err != nil {
			return fmt.Errorf("configure connection: %w", err)
		}
		return nil
	}
}

// commonPragmas hold on every connection to snugd.db:
//   - trusted_schema OFF: nothing in the schema may call a function that is
//     not marked harmless (defence in depth; the schema is our own).
//   - secure_delete ON: deleted content is overwritten with zeros, so a wiped
//     credential slice leaves no sealed bytes in free pages.
//   - fullfsync: on macOS, fsync alone does not reach the platter; with it
//     synchronous=FULL means what it says. Ignored elsewhere.
const commonPragmas = `PRAGMA trusted_schema = OFF;
PRAGMA secure_delete = ON;
PRAGMA fullfsync = ON;
PRAGMA checkpoint_fullfsync = ON;`

// fileURI spells path as an SQLite URI filename with the given query, so a
// path holding '?', '#' or '%' still names the right file.
func fileURI(path string, query string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive path: file:///C:/...
	}
	u := url.URL{Scheme: "file", Path: p, RawQuery: query}
	return u.String()
}

// openWriter opens the single write connection. synchronous=FULL: in WAL
// mode NORMAL already survives a crash of snugd itself, but a commit can
// still be lost to a power cut or a kernel crash after it was acknowledged.
// Some writes cannot be repeated (a helper's token is handed over exactly
// once, a token-claim setup token is spent by the claim), so every commit
// syncs the WAL before it returns. _txlock=immediate makes each write
// transaction take the write lock at BEGIN.
func openWriter(ctx context.Context, path string) (*sql.DB, error) {
	q := fmt.Sprintf("_journal_mode=WAL&_synchronous=FULL&_foreign_keys=1&_busy_timeout=%d&_txlock=immediate&_stmt_cache_size=64", busyTimeoutMS)
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{ConnectHook: execHook(commonPragmas)}, dsn: fileURI(path, q)})
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("open %s: journal mode is %q, not wal: the file system may not support SQLite's WAL (put the data directory on a local disk)", path, mode)
	}
	return db, nil
}

// readers bounds the read pool: Views run beside each other and beside the
// writer, never more than this many at once.
const readers = 8

// openReader opens the pool View uses: query_only connections that never
// take the write lock.
func openReader(ctx context.Context, path string) (*sql.DB, error) {
	q := fmt.Sprintf("_synchronous=FULL&_foreign_keys=1&_busy_timeout=%d&_query_only=1&_stmt_cache_size=64", busyTimeoutMS)
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{ConnectHook: execHook(commonPragmas)}, dsn: fileURI(path, q)})
	db.SetMaxOpenConns(readers)
	db.SetMaxIdleConns(readers)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	return db, nil
}
