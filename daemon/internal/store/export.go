package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mattn/go-sqlite3"
)

// Export writes a user DB to dest: a copy of snugd.db made with VACUUM INTO,
// from which every snug_secrets row and every snugd_* table is then removed,
// and which is VACUUMed again, so no free page still holds a removed byte.
// What remains is snug_connections (and the empty snug_secrets table) at
// user_version 6: a default export, holding no secrets. The file is
// written 0600 beside dest under a temporary name, synced, and renamed over
// dest, so dest is either untouched or the whole export.
func (s *Store) Export(ctx context.Context, dest string) (err error) {
	dest, err = filepath.Abs(dest)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	dir := filepath.Dir(dest)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dest)+".*.tmp") // O_EXCL, 0600
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	tmp := f.Name()
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(tmp)
			os.Remove(tmp + "-journal")
		}
	}()
	// VACUUM INTO fills an existing empty file and keeps its mode. It runs
	// on the write connection, so it copies one committed state.
	if _, err := s.w.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		return fmt.Errorf("export: copy database: %w", err)
	}
	if err := scrubExport(ctx, tmp); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if modesMatter {
		if err := os.Chmod(tmp, 0o600); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	if err := syncFile(tmp); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("export: sync %s: %w", dir, err)
	}
	return nil
}

// scrubExport removes from the copy at path everything a user DB must not
// carry, then rebuilds the file.
func scrubExport(ctx context.Context, path string) error {
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{ConnectHook: execHook(commonPragmas)}, dsn: fileURI(path, "_foreign_keys=0")})
	defer db.Close()
	db.SetMaxOpenConns(1)
	// The rollback journal would hold the pages being cleared; keep it in
	// memory: a crash only loses this temporary file.
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode = MEMORY"); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM snug_secrets"); err != nil {
		return fmt.Errorf("clear snug_secrets: %w", err)
	}
	tables, err := snugdTables(ctx, tx)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := tx.ExecContext(ctx, "DROP TABLE "+quoteIdent(t)); err != nil {
			return fmt.Errorf("drop %s: %w", t, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	// Check what is about to be handed out, not what was meant to be.
	var secrets, userVersion int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM snug_secrets").Scan(&secrets); err != nil {
		return err
	}
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&userVersion); err != nil {
		return err
	}
	left, err := snugdTables(ctx, db)
	if err != nil {
		return err
	}
	if secrets != 0 || len(left) != 0 || userVersion != UserVersion {
		return errors.New("scrubbed copy still holds secrets or snugd tables")
	}
	return nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// snugdTables lists the tables whose names start with "snugd_" exactly
// (substr, not LIKE, whose '_' matches any character).
func snugdTables(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, 6) = 'snugd_' ORDER BY name")
	if err != nil {
		return nil, err
	}
	return collect(rows, scanString)
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(name string) string {
	out := []byte{'"'}
	for i := 0; i < len(name); i++ {
		if name[i] == '"' {
			out = append(out, '"')
		}
		out = append(out, name[i])
	}
	return string(append(out, '"'))
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}
