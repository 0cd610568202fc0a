package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"time"

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
		err = classify(fmt.Errorf("quick_check of %s: %w", s.DBPath(), err))
		if errors.Is(err, ErrDamaged) {
			s.markDamaged(err)
		}
		return err
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
	err = &storageError{kind: ErrDamaged, err: fmt.Errorf("quick_check of %s found %d %s, first: %s", s.DBPath(), len(bad), noun, bad[0])}
	s.markDamaged(err)
	return err
}

// Damaged returns the first damage the store has seen, nil while it has
// seen none: a Check that failed, or SQLite reporting the file damaged in
// any transaction. The error matches ErrDamaged and says what was found
// ("the database is damaged: quick_check of … found 3 problems, first:
// …"). Once it is set, Update refuses and View still reads, until the
// store is closed: the way out is a backup, then a restart. Safe for
// concurrent use.
func (s *Store) Damaged() error {
	if p := s.damaged.Load(); p != nil {
		return *p
	}
	return nil
}

// markDamaged records err as the store's damage, unless one is recorded
// already, and logs it once.
func (s *Store) markDamaged(err error) {
	if s.damaged.CompareAndSwap(nil, &err) {
		s.log.Error("database damaged: refusing writes until a restart", "err", err)
	}
}

// logSeals runs CheckSeals and logs what it found: the keys whose value
// does not open (key names, never a value).
func (s *Store) logSeals(ctx context.Context) {
	start := time.Now()
	bad, err := s.CheckSeals(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Warn("seal check did not run", "err", err)
	case len(bad) > 0:
		s.log.Error("sealed values do not open under the master key: their connections read credential unreadable", "keys", bad)
	default:
		s.log.Debug("seal check ok", "took", time.Since(start))
	}
}

// RunChecks runs Check at once and then every every, until ctx is done
// (it then returns nil) or a check finds damage (it returns that error,
// which Damaged returns from then on). After each sound check it runs
// CheckSeals, so a sealed value that no longer opens is known. A check
// that could not run for another reason is logged and tried again at the
// next tick. The daemon runs it beside serving, so a start never waits
// for a full check of a large database. every must be positive.
func (s *Store) RunChecks(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("%w: check every %v", ErrInvalid, every)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		start := time.Now()
		err := s.Check(ctx)
		switch {
		case errors.Is(err, ErrDamaged):
			return err
		case ctx.Err() != nil:
			return nil
		case err != nil:
			s.log.Warn("integrity check did not run", "err", err)
		default:
			s.log.Debug("integrity check ok", "took", time.Since(start))
			s.logSeals(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
