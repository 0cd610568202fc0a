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
	Unattended bool // a standing approval answered instead of the user (§17)
	Note       string

	// ResolvedHost is the host a connection-URL request (Host
	// snug-connection://<slot>) went to, for the administrator; "" else.
	ResolvedHost string
}

// maxJournalText bounds each text field of an entry.
const maxJournalText = 1024

const journalColumns = "id, at, app_id, slot, host, resolved_host, method, outcome, gate, code, status, duration_ms, unattended, note"

// InsertJournal appends e (At defaults to the transaction's time) and, in
// the same statement batch, drops the entries that fall out of the
// retention bound (Options.JournalKeep): a delete by primary-key range that
// removes about one row per insert. It returns the entry as stored.
func (tx *Tx) InsertJournal(e JournalEntry) (JournalEntry, error) {
	if e.AppID == "" || e.Outcome == "" {
		return JournalEntry{}, fmt.Errorf("%w: a journal entry needs an app id and an outcome", ErrInvalid)
	}
	for _, f := range []string{e.AppID, e.Slot, e.Host, e.ResolvedHost, e.Method, e.Outcome, e.Gate, e.Code, e.Note} {
		if len(f) > maxJournalText {
			return JournalEntry{}, fmt.Errorf("%w: journal field longer than %d bytes", ErrInvalid, maxJournalText)
		}
	}
	if e.At.IsZero() {
		e.At = tx.now
	}
	e.At = e.At.UTC().Truncate(time.Millisecond)
	e.Duration = e.Duration.Truncate(time.Millisecond)
	res, err := tx.exec(`INSERT INTO snugd_journal (at, app_id, slot, host, resolved_host, method, outcome, gate, code, status, duration_ms, unattended, note)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		FormatTime(e.At), e.AppID, e.Slot, e.Host, e.ResolvedHost, e.Method, e.Outcome, e.Gate, e.Code, e.Status,
		e.Duration.Milliseconds(), e.Unattended, e.Note)
	if err != nil {
		return JournalEntry{}, fmt.Errorf("insert journal entry: %w", err)
	}
	if e.ID, err = res.LastInsertId(); err != nil {
		return JournalEntry{}, err
	}
	// The newest id is never deleted, so ids only grow (no AUTOINCREMENT
	// needed), and everything at or below id-keep is outside the bound.
	if _, err := tx.exec("DELETE FROM snugd_journal WHERE id <= ?", e.ID-int64(tx.s.journalKeep)); err != nil {
		return JournalEntry{}, fmt.Errorf("prune journal: %w", err)
	}
	return e, nil
}

// JournalQuery selects a page of the journal, newest first.
type JournalQuery struct {
	AppID          string // "" for every app
	UnattendedOnly bool
	Before         int64 // only entries with ID < Before; 0 starts at the newest
	Limit          int   // 1..1000; 0 means 100
}

// Journal returns one page of entries, newest first. The next page is
// JournalQuery{..., Before: the last entry's ID}.
func (tx *Tx) Journal(q JournalQuery) ([]JournalEntry, error) {
	query, args := journalQuery(q)
	return tx.scanJournal(query, args...)
}

// journalQuery builds Journal's statement. Every form is served by an index:
// the rowid alone, (app_id, id), or the partial index of unattended entries.
func journalQuery(q JournalQuery) (string, []any) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	var where []string
	var args []any
	if q.AppID != "" {
		where, args = append(where, "app_id = ?"), append(args, q.AppID)
	}
	if q.UnattendedOnly {
		where = append(where, "unattended = 1")
	}
	if q.Before > 0 {
		where, args = append(where, "id < ?"), append(args, q.Before)
	}
	query := "SELECT " + journalColumns + " FROM snugd_journal"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	return query + " ORDER BY id DESC LIMIT ?", append(args, limit)
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
		at         string
		durationMS int64
	)
	if err := rows.Scan(&e.ID, &at, &e.AppID, &e.Slot, &e.Host, &e.ResolvedHost, &e.Method, &e.Outcome, &e.Gate, &e.Code,
		&e.Status, &durationMS, &e.Unattended, &e.Note); err != nil {
		return JournalEntry{}, fmt.Errorf("read journal: %w", err)
	}
	e.Duration = time.Duration(durationMS) * time.Millisecond
	var err error
	if e.At, err = ParseTime(at); err != nil {
		return JournalEntry{}, fmt.Errorf("read journal entry %d: %w", e.ID, err)
	}
	return e, nil
}
