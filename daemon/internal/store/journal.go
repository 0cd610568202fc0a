package store

import (
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// JournalEntry is one snugd_journal row: an executor decision or an
// unattended act, metadata only. No field may carry a credential, a
// credentialed URL or a body; Host is a host name, never a URL.
type JournalEntry struct {
	ID         int64 // assigned by InsertJournal; grows with every entry
	At         time.Time
	AppID      string
	Slot       string
	Host       string
	Method     string
	Outcome    string // e.g. "sent", "refused", "confirm-denied"
	Gate       string // the gate that decided, when one refused
	Code       string // the registry code answered, if any
	Status     int    // the upstream HTTP status, 0 when nothing was fetched
	Duration   time.Duration
	Unattended bool // a standing approval answered instead of the user
	Note       string

	// ResolvedHost is the host a connection-URL request (Host
	// snug-connection://<slot>) went to, for the administrator; "" else.
	ResolvedHost string

	// Act names a person's act (Outcome OutcomeAct): approve, revoke,
	// credentials-set, … An act may have no app (a host paired).
	Act string
	// Count is how many repeated refusals the entry stands for (1 for
	// one), LastAt the latest of them (zero while Count is 1).
	Count  int
	LastAt time.Time
}

// OutcomeAct is the outcome of a person's act. Acts are retained apart
// from executor entries: no flood of requests pushes one out.
const OutcomeAct = "act"

// maxJournalText bounds each text field of an entry.
const maxJournalText = 1024

const journalColumns = "id, at, app_id, slot, host, resolved_host, method, outcome, gate, code, status, duration_ms, unattended, note, act, count, last_at"

// InsertJournal appends e (At defaults to the transaction's time) and drops
// the entries that fall out of the retention bounds: e's class (its app's
// executor entries, or its app's acts) keeps its newest
// Options.JournalKeepPerApp, and past Options.JournalKeep in all the
// fattest class loses its oldest. Each bound costs a few index seeks per
// entry, whatever the table holds: the counts are kept in
// snugd_journal_counts, never counted, and every delete names its index
// (retentionStatements; TestJournalRetentionPlans asserts the plans). It
// returns the entry as stored.
func (tx *Tx) InsertJournal(e JournalEntry) (JournalEntry, error) {
	e, err := tx.insertJournal(e)
	if err != nil {
		return JournalEntry{}, err
	}
	if err := tx.retainInserted(map[journalClass]int{{e.AppID, e.Outcome == OutcomeAct}: 1}); err != nil {
		return JournalEntry{}, fmt.Errorf("prune journal: %w", err)
	}
	return e, nil
}

// InsertJournals appends es as InsertJournal does, in order, with one
// retention pass for the batch, and returns their ids.
func (tx *Tx) InsertJournals(es []JournalEntry) ([]int64, error) {
	ids := make([]int64, len(es))
	added := map[journalClass]int{}
	for i, e := range es {
		e, err := tx.insertJournal(e)
		if err != nil {
			return nil, err
		}
		ids[i] = e.ID
		added[journalClass{e.AppID, e.Outcome == OutcomeAct}]++
	}
	if err := tx.retainInserted(added); err != nil {
		return nil, fmt.Errorf("prune journal: %w", err)
	}
	return ids, nil
}

// retainInserted counts the entries just inserted (added, per class) and
// applies the bounds; where entries appended uncounted are pending (a
// mark is set), it counts every entry past the mark instead, these with
// them.
func (tx *Tx) retainInserted(added map[journalClass]int) error {
	counted, ok, err := tx.journalCounted()
	if err != nil {
		return err
	}
	if ok {
		return tx.countJournalSince(counted)
	}
	return tx.retainJournal(added)
}

// The journal's own commits append their entries uncounted
// (InsertJournalsUncounted) and count them in a retention pass every few
// dozen entries (CountJournal): the counters' pages are then not written
// with every request's row, which is most of a lone row's commit. The
// counts stay exact: snugd_meta's journal_counted_to is the newest id they
// include, so a pass (or the next exact insert) counts every entry past it,
// whatever a crash cut short; absent, every entry is counted. Between
// passes the bounds may be exceeded by the entries not yet counted.
const metaJournalCounted = "journal_counted_to"

// journalCountedSince counts, per class, the entries past id, and their
// newest id. It walks the rowid from id (NOT INDEXED) and groups the few
// rows it finds: the planner would otherwise take (app_id, user_act, id)
// for its GROUP BY order and read the whole index.
const journalCountedSince = `SELECT app_id, user_act, COUNT(*), MAX(id) FROM snugd_journal NOT INDEXED WHERE id > ? GROUP BY app_id, user_act`

// journalCounted reads the newest id the retention counts include; ok is
// false when every entry is counted (no uncounted append ever happened).
func (tx *Tx) journalCounted() (id int64, ok bool, err error) {
	rows, err := tx.query(`SELECT value FROM snugd_meta WHERE key = ?`, metaJournalCounted)
	if err != nil {
		return 0, false, fmt.Errorf("read the journal's count mark: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, false, rows.Err()
	}
	if err := rows.Scan(&id); err != nil {
		return 0, false, fmt.Errorf("read the journal's count mark: %w", err)
	}
	return id, true, rows.Err()
}

// CountJournal is the retention pass of entries appended uncounted: it
// counts every entry past the mark, drops what falls out of the bounds
// and moves the mark to the newest id. Where no mark is set yet, every
// entry is counted: it sets the mark to the newest id. It must run before
// the first InsertJournalsUncounted of a store's life, and may run at any
// time.
func (tx *Tx) CountJournal() error {
	counted, ok, err := tx.journalCounted()
	if err != nil {
		return err
	}
	if !ok {
		_, err := tx.exec(`INSERT INTO snugd_meta (key, value) VALUES (?, (SELECT COALESCE(MAX(id), 0) FROM snugd_journal))`, metaJournalCounted)
		if err != nil {
			return fmt.Errorf("set the journal's count mark: %w", err)
		}
		return nil
	}
	if err := tx.countJournalSince(counted); err != nil {
		return fmt.Errorf("prune journal: %w", err)
	}
	return nil
}

// countJournalSince counts the entries past id, applies the bounds and
// moves the mark.
func (tx *Tx) countJournalSince(id int64) error {
	rows, err := tx.query(journalCountedSince, id)
	if err != nil {
		return err
	}
	added := map[journalClass]int{}
	newest := id
	for rows.Next() {
		var (
			c     journalClass
			n     int
			maxID int64
		)
		if err := rows.Scan(&c.appID, &c.act, &n, &maxID); err != nil {
			rows.Close()
			return err
		}
		added[c] += n
		newest = max(newest, maxID)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(added) == 0 {
		return nil
	}
	if err := tx.retainJournal(added); err != nil {
		return err
	}
	_, err = tx.exec(`UPDATE snugd_meta SET value = ? WHERE key = ?`, newest, metaJournalCounted)
	return err
}

// InsertJournalsUncounted appends es without the retention pass and
// returns their ids: CountJournal (or the next InsertJournal) counts them.
// Only after a CountJournal in the store's life (the mark must exist).
func (tx *Tx) InsertJournalsUncounted(es []JournalEntry) ([]int64, error) {
	ids := make([]int64, len(es))
	for i, e := range es {
		e, err := tx.insertJournal(e)
		if err != nil {
			return nil, err
		}
		ids[i] = e.ID
	}
	return ids, nil
}

// journalClass is what retention bounds apart: one app's executor
// entries, or its user acts.
type journalClass struct {
	appID string
	act   bool
}

func (tx *Tx) insertJournal(e JournalEntry) (JournalEntry, error) {
	act := e.Outcome == OutcomeAct
	if (e.AppID == "" && !act) || e.Outcome == "" {
		return JournalEntry{}, fmt.Errorf("%w: a journal entry needs an app id and an outcome", ErrInvalid)
	}
	for _, f := range []string{e.AppID, e.Slot, e.Host, e.ResolvedHost, e.Method, e.Outcome, e.Gate, e.Code, e.Note, e.Act} {
		if len(f) > maxJournalText {
			return JournalEntry{}, fmt.Errorf("%w: journal field longer than %d bytes", ErrInvalid, maxJournalText)
		}
	}
	if e.At.IsZero() {
		e.At = tx.now
	}
	e.At = e.At.UTC().Truncate(time.Millisecond)
	e.Duration = e.Duration.Truncate(time.Millisecond)
	e.Count, e.LastAt = 1, time.Time{}
	res, err := tx.exec(`INSERT INTO snugd_journal (at, app_id, slot, host, resolved_host, method, outcome, gate, code, status, duration_ms, unattended, note, user_act, act)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		FormatTime(e.At), e.AppID, e.Slot, e.Host, e.ResolvedHost, e.Method, e.Outcome, e.Gate, e.Code, e.Status,
		e.Duration.Milliseconds(), e.Unattended, e.Note, act, e.Act)
	if err != nil {
		return JournalEntry{}, fmt.Errorf("insert journal entry: %w", err)
	}
	if e.ID, err = res.LastInsertId(); err != nil {
		return JournalEntry{}, err
	}
	return e, nil
}

// The retention statements. Each names the index it walks, so a plan
// cannot degrade into a scan whatever statistics PRAGMA optimize left
// (SQLite fails an INDEXED BY statement rather than plan around it).
const (
	journalCountUp   = `INSERT INTO snugd_journal_counts (app_id, user_act, n) VALUES (?, ?, ?) ON CONFLICT (app_id, user_act) DO UPDATE SET n = n + excluded.n RETURNING n`
	journalCountSet  = `UPDATE snugd_journal_counts SET n = n - ? WHERE app_id = ? AND user_act = ?`
	journalSizeUp    = `INSERT INTO snugd_journal_size (id, n) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET n = n + excluded.n RETURNING n`
	journalSizeDown  = `UPDATE snugd_journal_size SET n = n - ? WHERE id = 1`
	journalDropOld   = `DELETE FROM snugd_journal WHERE id IN (SELECT id FROM snugd_journal INDEXED BY snugd_journal_retain WHERE app_id = ? AND user_act = ? ORDER BY id LIMIT ?)`
	journalFattest   = `SELECT app_id, user_act, n FROM snugd_journal_counts INDEXED BY snugd_journal_counts_n ORDER BY n DESC LIMIT 1`
	journalBumpEntry = `UPDATE snugd_journal SET count = count + ?, last_at = ? WHERE id = ?`
)

// retentionStatements are the statements retention runs, with sample
// arguments, for the plan test.
var retentionStatements = map[string][]any{
	journalCountUp: {"a", 0, 1}, journalCountSet: {1, "a", 0}, journalSizeUp: {1}, journalSizeDown: {1},
	journalDropOld: {"a", 0, 1}, journalFattest: nil, journalBumpEntry: {1, "t", 1},
	journalCountedSince: {1},
}

// retainJournal counts the entries just inserted per class and drops
// what falls out of the bounds.
func (tx *Tx) retainJournal(added map[journalClass]int) error {
	net := 0
	for c, k := range added {
		net += k
		var n int
		if err := tx.queryRow(journalCountUp, c.appID, c.act, k).Scan(&n); err != nil {
			return err
		}
		if over := n - tx.s.journalKeepPerApp; over > 0 {
			gone, err := tx.dropOldest(c.appID, c.act, over)
			if err != nil {
				return err
			}
			net -= gone
		}
	}
	var size int
	if err := tx.queryRow(journalSizeUp, net).Scan(&size); err != nil {
		return err
	}
	// Past the global cap the fattest class pays, an eighth of it a round
	// (so floods of equal size share the cost), in a bounded number of
	// rounds: what is left over goes with the next write.
	dropped := 0
	for range 64 {
		over := size - dropped - tx.s.journalKeep
		if over <= 0 {
			break
		}
		var (
			fatApp string
			fatAct bool
			fatN   int
		)
		if err := tx.queryRow(journalFattest).Scan(&fatApp, &fatAct, &fatN); err != nil {
			return err
		}
		gone, err := tx.dropOldest(fatApp, fatAct, min(over, max(1, fatN/8)))
		if err != nil {
			return err
		}
		if gone == 0 {
			break
		}
		dropped += gone
	}
	if dropped > 0 {
		if _, err := tx.exec(journalSizeDown, dropped); err != nil {
			return err
		}
	}
	return nil
}

// dropOldest deletes the n oldest entries of (appID, act), keeps its count
// in step and returns how many went (the caller keeps the size).
func (tx *Tx) dropOldest(appID string, act bool, n int) (int, error) {
	res, err := tx.exec(journalDropOld, appID, act, n)
	if err != nil {
		return 0, err
	}
	gone, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	_, err = tx.exec(journalCountSet, gone, appID, act)
	return int(gone), err
}

// OutcomeSentUnknown is the outcome of a row written before its request
// is sent (a mutating request): CompleteJournal replaces it with what
// happened. A row that still reads it once snugd restarted was being sent
// when snugd stopped: the request may have reached the upstream, and what
// the upstream answered is unknown.
const OutcomeSentUnknown = "sent-unknown"

// CompleteJournal writes the outcome of entry id, a row written before
// its send: e's outcome, gate, code, status, duration, note and resolved
// host replace the row's (its time, app, slot, host and method stay). It
// reports whether the entry still exists (retention may have dropped it;
// the caller then inserts e).
func (tx *Tx) CompleteJournal(id int64, e JournalEntry) (bool, error) {
	if e.Outcome == "" || e.Outcome == OutcomeAct {
		return false, fmt.Errorf("%w: a completed journal entry needs a request's outcome", ErrInvalid)
	}
	for _, f := range []string{e.ResolvedHost, e.Outcome, e.Gate, e.Code, e.Note} {
		if len(f) > maxJournalText {
			return false, fmt.Errorf("%w: journal field longer than %d bytes", ErrInvalid, maxJournalText)
		}
	}
	res, err := tx.exec(`UPDATE snugd_journal SET outcome = ?, gate = ?, code = ?, status = ?, duration_ms = ?, note = ?, resolved_host = ?
		WHERE id = ? AND user_act = 0`,
		e.Outcome, e.Gate, e.Code, e.Status, e.Duration.Truncate(time.Millisecond).Milliseconds(), e.Note, e.ResolvedHost, id)
	if err != nil {
		return false, fmt.Errorf("complete journal entry: %w", err)
	}
	rows, err := res.RowsAffected()
	return rows == 1, err
}

// BumpJournal counts n more repeats of entry id, the latest at at (an
// aggregated refusal), and reports whether the entry still exists
// (retention may have dropped it; the caller then inserts a new one).
func (tx *Tx) BumpJournal(id int64, n int, at time.Time) (bool, error) {
	res, err := tx.exec(journalBumpEntry, n, FormatTime(at.UTC().Truncate(time.Millisecond)), id)
	if err != nil {
		return false, fmt.Errorf("count journal repeat: %w", err)
	}
	rows, err := res.RowsAffected()
	return rows == 1, err
}

// JournalQuery selects a page of the journal, newest first.
type JournalQuery struct {
	AppID          string // "" for every app
	UnattendedOnly bool
	Before         int64 // only entries with ID < Before; 0 starts at the newest
	Limit          int   // 1..1000; 0 means 100
	// Kind selects user acts only ("acts") or everything else
	// ("requests": executor decisions, standing approvals); "" both.
	Kind string
	// VisibleTo limits the page to the entries paired host VisibleTo may
	// read: those of the apps it owns or was given, and of apps nobody
	// holds that have no row, never the daemon's own (app ""). "" is the
	// administrator, who reads everything. The filter is part of the
	// statement, so a page is full and its last ID is an honest cursor.
	VisibleTo string
}

// visibleApps is VisibleTo's condition, the ownership rule of the daemon's
// owners (held, or unclaimed with no row) in SQL.
const visibleApps = `app_id != '' AND (
	app_id IN (SELECT app_id FROM snugd_app_owners WHERE host_id = ?)
	OR app_id IN (SELECT app_id FROM snugd_app_shares WHERE host_id = ?)
	OR (app_id NOT IN (SELECT app_id FROM snugd_app_owners) AND app_id NOT IN (SELECT app_id FROM snug_connections)))`

// Journal returns one page of entries, newest first. The next page is
// JournalQuery{..., Before: the last entry's ID}.
func (tx *Tx) Journal(q JournalQuery) ([]JournalEntry, error) {
	query, args := journalQuery(q)
	return tx.scanJournal(query, args...)
}

// journalQuery builds Journal's statement. Every form is served by an index
// in id order, with no sort: the rowid alone, the partial index of
// unattended entries, or (app_id, user_act, id): one app's page of one
// kind walks its class, and of both kinds is the merge of its two classes'
// walks (UNION ALL under one ORDER BY), each stopping at the limit.
func journalQuery(q JournalQuery) (string, []any) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	var where []string
	var args []any
	if q.UnattendedOnly {
		where = append(where, "unattended = 1")
	}
	if q.Before > 0 {
		where, args = append(where, "id < ?"), append(args, q.Before)
	}
	if q.VisibleTo != "" {
		where, args = append(where, visibleApps), append(args, q.VisibleTo, q.VisibleTo)
	}
	var kinds []string
	switch q.Kind {
	case "acts":
		kinds = []string{"user_act = 1"}
	case "requests":
		kinds = []string{"user_act = 0"}
	default:
		if q.AppID != "" {
			kinds = []string{"user_act = 0", "user_act = 1"}
		}
	}
	if len(kinds) == 0 {
		return journalSelect(where) + " ORDER BY id DESC LIMIT ?", append(args, limit)
	}
	var arms []string
	var armArgs []any
	for _, k := range kinds {
		w := append([]string{k}, where...)
		a := args
		if q.AppID != "" {
			w, a = append([]string{"app_id = ?"}, w...), append([]any{q.AppID}, args...)
		}
		arms, armArgs = append(arms, journalSelect(w)), append(armArgs, a...)
	}
	return strings.Join(arms, " UNION ALL ") + " ORDER BY id DESC LIMIT ?", append(armArgs, limit)
}

// journalSelect is the SELECT of Journal's rows under where.
func journalSelect(where []string) string {
	query := "SELECT " + journalColumns + " FROM snugd_journal"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	return query
}

// JournalEntry returns entry id, or ErrNotFound.
func (tx *Tx) JournalEntry(id int64) (JournalEntry, error) {
	es, err := tx.scanJournal("SELECT "+journalColumns+" FROM snugd_journal WHERE id = ?", id)
	if err != nil {
		return JournalEntry{}, err
	}
	if len(es) == 0 {
		return JournalEntry{}, fmt.Errorf("journal entry %d: %w", id, ErrNotFound)
	}
	return es[0], nil
}

func (tx *Tx) scanJournal(query string, args ...any) ([]JournalEntry, error) {
	return queryAll(tx, "read journal", scanJournalEntry, query, args...)
}

func scanJournalEntry(rows *sql.Rows) (JournalEntry, error) {
	var (
		e          JournalEntry
		at, lastAt string
		durationMS int64
	)
	if err := rows.Scan(&e.ID, &at, &e.AppID, &e.Slot, &e.Host, &e.ResolvedHost, &e.Method, &e.Outcome, &e.Gate, &e.Code,
		&e.Status, &durationMS, &e.Unattended, &e.Note, &e.Act, &e.Count, &lastAt); err != nil {
		return JournalEntry{}, fmt.Errorf("read journal: %w", err)
	}
	e.Duration = time.Duration(durationMS) * time.Millisecond
	var err error
	if e.At, err = ParseTime(at); err != nil {
		return JournalEntry{}, fmt.Errorf("read journal entry %d: %w", e.ID, err)
	}
	if lastAt != "" {
		if e.LastAt, err = ParseTime(lastAt); err != nil {
			return JournalEntry{}, fmt.Errorf("read journal entry %d: %w", e.ID, err)
		}
	}
	return e, nil
}
