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
