package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Names of the files the store keeps in its data directory.
const (
	DBFile      = "snugd.db"    // the one SQLite database
	LockFile    = "snugd.lock"  // flock'd while a Store is open; records the holder
	KeyFileName = "secrets.key" // the master key of the file key source
)

// UserVersion is Part II's user-DB version: PRAGMA user_version
// of snugd.db, of every export, and the only version ReadUserDB accepts.
const UserVersion = 6

// TimeFormat is how every timestamp the store writes is spelled: RFC 3339 in
// UTC with exactly three fractional digits ("2026-05-01T10:00:00.000Z"). It is
// the form JavaScript's Date.toISOString writes, so rows a Snug host wrote and
// rows snugd wrote read alike, and because its width is fixed, comparing two
// such strings byte by byte orders them in time.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// DefaultJournalKeep is how many journal entries the store keeps in all
// when Options.JournalKeep is zero; DefaultJournalKeepPerApp how many of
// one app's executor entries, and again of its user acts, when
// Options.JournalKeepPerApp is zero.
const (
	DefaultJournalKeep       = 200000
	DefaultJournalKeepPerApp = 10000
)

// Errors callers branch on.
var (
	// ErrNotFound: the row, secret, host or pairing asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a compare-and-set found the row in another state.
	ErrConflict = errors.New("state changed concurrently")
	// ErrReadOnly: a write was attempted inside View.
	ErrReadOnly = errors.New("write in a read-only transaction")
	// ErrInvalid: a value handed to a write method breaks the table's rules.
	ErrInvalid = errors.New("invalid value")
	// ErrLocked: another process holds the data directory.
	ErrLocked = errors.New("data directory in use")
	// ErrNewerSchema: snugd.db was migrated by a newer snugd.
	ErrNewerSchema = errors.New("database written by a newer snugd")
	// ErrDatabaseGone: snugd.db is missing, empty or a new database while
	// the master key it was sealed with is still there: the file was
	// deleted, emptied or replaced since snugd last ran. Open never starts
	// over on its own; Reset does, when the administrator says so.
	ErrDatabaseGone = errors.New("database lost")
)

// Options configures Open. Only Dir is required.
type Options struct {
	// Dir is the data directory. It is created 0700 when missing; an
	// existing one must be 0700 (no group or other access) and owned by the
	// effective user, or Open refuses it.
	Dir string
	// Now is the clock every timestamp comes from. Nil means time.Now.
	Now func() time.Time
	// Logger receives operational messages (never a credential value). Nil
	// discards them.
	Logger *slog.Logger
	// Keys holds the master key that seals snug_secrets. Nil means the file
	// Dir/secrets.key (KeyFile).
	Keys KeySource
	// JournalKeep bounds snugd_journal to JournalKeep entries in all:
	// past it, the class (app, acts or not) holding the most entries loses
	// its oldest. Zero means DefaultJournalKeep.
	JournalKeep int
	// JournalKeepPerApp bounds each app's executor entries, and its user
	// acts apart, to their newest JournalKeepPerApp (at most JournalKeep).
	// Zero means DefaultJournalKeepPerApp.
	JournalKeepPerApp int
}

// Store is snugd's database. It is safe for concurrent use: write
// transactions run one at a time, read transactions run beside them on a
// consistent snapshot.
type Store struct {
	dir               string
	now               func() time.Time
	log               *slog.Logger
	lock              *dirLock
	w                 *sql.DB // exactly one connection; every Update runs BEGIN IMMEDIATE on it
	r                 *sql.DB // query_only connections for View
	sealer            *sealer
	journalKeep       int
	journalKeepPerApp int

	// relaxed is the writer's driver connection while UpdateJournal left
	// it at synchronous=NORMAL, nil or another (closed) connection while
	// it is at FULL: Update sets it back before its transaction, so the
	// journal's commits in a row pay no pragma. Only the holder of the one
	// writer connection reads or writes it (the pool hands it over).
	relaxed any

	closeOnce sync.Once
	closeErr  error

	// damaged is the first damage seen (Check, or SQLite reporting a
	// damaged file in any transaction); from then on Update refuses.
	damaged atomic.Pointer[error]
	// unreadable is the sealed values seen not to open (unreadable.go).
	unreadable unreadableKeys
}

// Open opens (creating when needed) the store in o.Dir: it checks or creates
// the directory, takes the directory lock, applies pending migrations, and
// loads the master key (creating it on first use). A second Open of the same
// directory, from this process or another, fails with ErrLocked naming the
// holder. A database migrated by a newer snugd fails with ErrNewerSchema;
// a disk too full to open on, or a read-only one, with ErrStorageFull; a
// missing, empty or new snugd.db beside an existing master key with
// ErrDatabaseGone (Open creates a database only where there is no key
// either).
func Open(ctx context.Context, o Options) (*Store, error) {
	s, err := open(ctx, o)
	return s, classify(err)
}

func open(ctx context.Context, o Options) (_ *Store, err error) {
	if o.Dir == "" {
		return nil, errors.New("store: no data directory given")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("store: data directory %s: %w", o.Dir, err)
	}
	s := &Store{dir: dir, now: o.Now, log: o.Logger, journalKeep: o.JournalKeep, journalKeepPerApp: o.JournalKeepPerApp}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "store")
	if s.journalKeep <= 0 {
		s.journalKeep = DefaultJournalKeep
	}
	if s.journalKeepPerApp <= 0 {
		s.journalKeepPerApp = DefaultJournalKeepPerApp
	}
	s.journalKeepPerApp = min(s.journalKeepPerApp, s.journalKeep)
	keys := o.Keys
	if keys == nil {
		keys = KeyFile{Path: filepath.Join(dir, KeyFileName)}
	}

	if err := ensurePrivateDir(dir); err != nil {
		return nil, err
	}
	if s.lock, err = acquireLock(dir, s.now()); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()

	dbPath := s.DBPath()
	// A missing or empty snugd.db beside a master key is not a first
	// start: refuse before SQLite creates or writes the file.
	if what, ok := missingDB(dbPath); ok {
		if err := refuseGoneDB(ctx, keys, dbPath, what); err != nil {
			return nil, err
		}
	}
	if err := ensurePrivateFile(dbPath, true, s.log); err != nil {
		return nil, err
	}
	if s.w, err = openWriter(ctx, dbPath); err != nil {
		return nil, err
	}
	if current, err := s.schemaVersion(ctx); err == nil && current == 0 {
		// A database file without a single table: a new one.
		if err := refuseGoneDB(ctx, keys, dbPath, "a new, empty database"); err != nil {
			return nil, err
		}
	}
	version, err := s.migrate(ctx)
	if err != nil {
		return nil, err
	}
	// SQLite gives -wal and -shm the database file's mode; tighten any left
	// wider by an older process all the same.
	for _, p := range []string{dbPath + "-wal", dbPath + "-shm"} {
		if err := ensurePrivateFile(p, false, s.log); err != nil {
			return nil, err
		}
	}
	if s.r, err = openReader(ctx, dbPath); err != nil {
		return nil, err
	}
	if err := s.loadMasterKey(ctx, keys); err != nil {
		return nil, err
	}
	s.log.Info("store open", "dir", dir, "schema", version, "keys", keys.String())
	return s, nil
}

// Dir returns the absolute data directory.
func (s *Store) Dir() string { return s.dir }

// DBPath returns the absolute path of snugd.db.
func (s *Store) DBPath() string { return filepath.Join(s.dir, DBFile) }

// Close closes the database and releases the directory lock. It is safe to
// call more than once; later calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		if s.w != nil {
			// Best effort: leave the planner statistics fresh, but none
			// of the journal's: taken while it was small, they would
			// have every journal statement scan once it is large (its
			// statements are planned, and tested, on the defaults).
			_, _ = s.w.Exec("PRAGMA optimize")
			_, _ = s.w.Exec("DELETE FROM sqlite_stat1 WHERE tbl = 'snugd_journal'")
			errs = append(errs, s.w.Close())
		}
		if s.lock != nil {
			errs = append(errs, s.lock.release())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Update runs fn in a write transaction and commits it when fn returns nil;
// an error or a panic from fn rolls everything back. The transaction starts
// with BEGIN IMMEDIATE, so what fn reads cannot change before it writes:
// read-check-write is race-free. Write transactions run one at a time; fn
// must not call Update or View itself (it would wait for itself). fn's error
// is returned as is, except that a failure SQLite or the OS reported as a
// full disk or a read-only file system also matches ErrStorageFull, and
// one reported as a damaged file also matches ErrDamaged (errors.Is finds
// both the sentinel and everything fn's error wrapped). Once the store has
// seen its file damaged (Damaged), Update refuses with that error without
// running fn: writing on would spread the damage.
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	return s.run(ctx, s.w, true, fn)
}

// View runs fn in a read transaction over one consistent snapshot. Write
// methods called inside it fail with ErrReadOnly. Its errors are marked as
// Update's are.
func (s *Store) View(ctx context.Context, fn func(*Tx) error) error {
	return s.run(ctx, s.r, false, fn)
}

// UpdateJournal is Update for the journal's own commits: the transaction
// runs with synchronous=NORMAL instead of FULL, so its commit appends to
// the WAL without waiting for an fsync. In WAL mode such a commit survives
// a crash of snugd (the kernel has the pages); only a power cut or a
// kernel crash can drop the last ones. Every other write transaction
// (Update) sets the writer connection back to FULL before it begins. Its
// errors are Update's.
func (s *Store) UpdateJournal(ctx context.Context, fn func(*Tx) error) error {
	if err := s.Damaged(); err != nil {
		return err
	}
	err := classify(s.runWrite(ctx, true, fn))
	if errors.Is(err, ErrDamaged) {
		s.markDamaged(err)
	}
	return err
}

func (s *Store) run(ctx context.Context, db *sql.DB, writable bool, fn func(*Tx) error) error {
	var err error
	if writable {
		if err := s.Damaged(); err != nil {
			return err
		}
		err = s.runWrite(ctx, false, fn)
	} else {
		err = s.runTx(ctx, db, false, fn)
	}
	err = classify(err)
	if errors.Is(err, ErrDamaged) {
		s.markDamaged(err)
	}
	return err
}

// runWrite runs fn in a write transaction on the one writer connection,
// synchronous=NORMAL when relax (the journal) and FULL otherwise.
func (s *Store) runWrite(ctx context.Context, relax bool, fn func(*Tx) error) error {
	onCommit, err := s.runWriteTx(ctx, relax, fn)
	if err != nil {
		return err
	}
	// Once the connection is back in the pool: f may write itself.
	for _, f := range onCommit {
		f()
	}
	return nil
}

// runWriteTx runs fn's transaction on the writer connection, held for the
// whole transaction, and returns what it registered with OnCommit.
func (s *Store) runWriteTx(ctx context.Context, relax bool, fn func(*Tx) error) ([]func(), error) {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: writer connection: %w", err)
	}
	defer conn.Close()
	if err := s.syncMode(conn, relax); err != nil {
		return nil, err
	}
	var onCommit []func()
	err = s.runTxOn(ctx, conn.BeginTx, true, func(tx *Tx) error {
		err := fn(tx)
		onCommit, tx.onCommit = tx.onCommit, nil // run by runWrite, after the connection is released
		return err
	})
	return onCommit, err
}

// syncMode sets conn's synchronous mode for the transaction to come, when
// it is not that already. A connection whose mode could not be set is
// discarded (the pool opens a new one, FULL by its DSN): a writer never
// runs on a connection whose mode is unknown.
func (s *Store) syncMode(conn *sql.Conn, relax bool) error {
	return conn.Raw(func(dc any) error {
		if (s.relaxed == dc) == relax {
			return nil
		}
		c, ok := dc.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("store: writer connection is a %T", dc)
		}
		mode := "FULL"
		if relax {
			mode = "NORMAL"
			s.relaxed = dc // from here on it may be NORMAL
		}
		if _, err := c.Exec("PRAGMA synchronous = "+mode, nil); err != nil {
			return fmt.Errorf("store: set synchronous=%s: %w (%w)", mode, err, driver.ErrBadConn)
		}
		if !relax {
			s.relaxed = nil
		}
		return nil
	})
}

func (s *Store) runTx(ctx context.Context, db *sql.DB, writable bool, fn func(*Tx) error) error {
	return s.runTxOn(ctx, db.BeginTx, writable, fn)
}

func (s *Store) runTxOn(ctx context.Context, begin func(context.Context, *sql.TxOptions) (*sql.Tx, error), writable bool, fn func(*Tx) error) (err error) {
	since := s.unreadable.begin() // before the snapshot
	stx, err := begin(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	tx := &Tx{ctx: ctx, tx: stx, s: s, writable: writable, now: s.stamp(), since: since}
	committed := false
	defer func() {
		if !committed {
			_ = stx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if !writable {
		return nil
	}
	if err := stx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	committed = true
	for _, f := range tx.onCommit {
		f()
	}
	return nil
}

// stamp reads the clock at the store's timestamp precision.
func (s *Store) stamp() time.Time {
	return s.now().UTC().Truncate(time.Millisecond)
}

// Tx is one transaction, valid only inside the function given to Update or
// View. It carries that call's context (as *sql.Tx does): every method uses
// it. A Tx is not safe for concurrent use.
type Tx struct {
	ctx      context.Context
	tx       *sql.Tx
	s        *Store
	writable bool
	now      time.Time
	onCommit []func()
	// since is the unreadable set's sequence number when the transaction
	// began (unreadableKeys.begin).
	since uint64
}

// Now returns the transaction's timestamp: the clock read once when the
// transaction began, at millisecond precision, in UTC. Every timestamp the
// transaction writes by itself is this one.
func (tx *Tx) Now() time.Time { return tx.now }

// OnCommit registers f to run after the transaction commits (in
// registration order, before Update returns). Nothing runs when the
// transaction rolls back. Reading the committed state inside the transaction
// and publishing it from f keeps an in-memory copy exactly in step with the
// database, since no other write can come between. In View, f never runs.
func (tx *Tx) OnCommit(f func()) { tx.onCommit = append(tx.onCommit, f) }

func (tx *Tx) exec(query string, args ...any) (sql.Result, error) {
	if !tx.writable {
		return nil, ErrReadOnly
	}
	return tx.tx.ExecContext(tx.ctx, query, args...)
}

func (tx *Tx) query(query string, args ...any) (*sql.Rows, error) {
	return tx.tx.QueryContext(tx.ctx, query, args...)
}

// Read runs f in a read-only transaction (View) and returns what it read:
// the one place the View-and-capture boilerplate is written.
//
//	hosts, err := store.Read(ctx, st, (*store.Tx).Hosts)
func Read[T any](ctx context.Context, s *Store, f func(*Tx) (T, error)) (T, error) {
	var v T
	err := s.View(ctx, func(tx *Tx) error {
		var err error
		v, err = f(tx)
		return err
	})
	return v, err
}

// queryAll runs query and reads every row with scan, in order. A failed
// query is wrapped as "<what>: <err>"; scan's errors pass as they are.
func queryAll[T any](tx *Tx, what string, scan func(*sql.Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := tx.query(query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return collect(rows, scan)
}

// collect reads every row of rows with scan, in order, and closes rows.
func collect[T any](rows *sql.Rows, scan func(*sql.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// scanString reads a row of one text column.
func scanString(rows *sql.Rows) (string, error) {
	var s string
	err := rows.Scan(&s)
	return s, err
}

// queryOne is queryAll for a query that matches at most one row: no row is
// ErrNotFound, as "<name>: not found".
func queryOne[T any](tx *Tx, what, name string, scan func(*sql.Rows) (T, error), query string, args ...any) (T, error) {
	vs, err := queryAll(tx, what, scan, query, args...)
	var zero T
	if err != nil {
		return zero, err
	}
	if len(vs) == 0 {
		return zero, fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	return vs[0], nil
}

func (tx *Tx) queryRow(query string, args ...any) *sql.Row {
	return tx.tx.QueryRowContext(tx.ctx, query, args...)
}

// FormatTime spells t in TimeFormat (UTC, milliseconds).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// ParseTime reads a timestamp written in TimeFormat.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeFormat, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q is not in the store's format", s)
	}
	return t, nil
}
