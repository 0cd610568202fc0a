package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"

	"github.com/mattn/go-sqlite3"
)

// QuickCheck runs SQLite's quick_check on the data directory's database over
// a read-only connection, for diagnostics (snugd ctl doctor), and returns
// the problems it reports (none when the file is sound). With shared set, a
// running daemon holds the file and the read shares its WAL; without it the
// file is opened immutable, so not even a -shm file is created. quick_check
// names pages and indexes, never row contents.
func QuickCheck(ctx context.Context, dir string, shared bool) ([]string, error) {
	q := fmt.Sprintf("mode=ro&_busy_timeout=%d", busyTimeoutMS)
	if !shared {
		q += "&immutable=1"
	}
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: fileURI(filepath.Join(dir, DBFile), q)})
	defer db.Close()
	rows, err := db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return nil, fmt.Errorf("quick_check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, fmt.Errorf("quick_check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("quick_check: %w", err)
	}
	return problems, nil
}

// Check runs SQLite's quick_check on the open store, over one of its read
// connections (so beside writes, on a snapshot), and returns nil when the
// file is sound. Damage is an error matching ErrDamaged that says how many
// problems quick_check found and names the first (pages and indexes, never
// row contents); a check that could not run returns that error, matching
// ErrDamaged too when SQLite said the file is damaged. The daemon runs it
// at start and on a schedule; it reads every page, so its time grows with
// the size of the database. Safe for concurrent use.
func (s *Store) Check(ctx context.Context) error {
	var problems []string
	err := s.runTx(ctx, s.r, false, func(tx *Tx) error {
		var err error
		problems, err = queryAll(tx, "quick_check", scanString, "PRAGMA quick_check")
		return err
	})
	if err != nil {
		return classify(fmt.Errorf("quick_check of %s: %w", s.DBPath(), err))
	}
	var bad []string
	for _, p := range problems {
		if p != "ok" {
			bad = append(bad, p)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	noun := "problems"
	if len(bad) == 1 {
		noun = "problem"
	}
	return &storageError{kind: ErrDamaged, err: fmt.Errorf("quick_check of %s found %d %s, first: %s", s.DBPath(), len(bad), noun, bad[0])}
}
