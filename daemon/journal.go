package daemon

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/internal/store"
)

// The journal: one metadata-only entry per executor request (app, slot,
// host, method, outcome, the gate that decided, code, upstream status,
// duration), plus the standing approvals' acts. An entry never holds a
// URL, a body or a header value; for a connection-URL request the host is
// the symbolic snug-connection://<slot> and ResolvedHost, beside it, the
// host it went to (for the administrator: the app never reads the journal).
//
// Ordinary entries are written off the hot path by a bounded batcher,
// flushed on Close; unattended acts (§17) are written synchronously,
// before the send they record.

// JournalEntry is one journal entry.
type JournalEntry struct {
	ID         int64
	At         time.Time
	AppID      string
	Slot       string
	Host       string
	Method     string
	Outcome    string // sent, refused, standing-approved, standing-refused, standing-armed, …
	Gate       string // the gate that refused, "" when none did
	Code       string // the code answered, "" for a response
	Status     int    // upstream status, 0 when nothing was fetched
	Duration   time.Duration
	Unattended bool
	Note       string

	// ResolvedHost is where a connection-URL request (Host is the symbolic
	// snug-connection://<slot>) went: for the administrator, never the app.
	ResolvedHost string
}

// JournalQuery selects a page of the journal, newest first.
type JournalQuery struct {
	AppID          string // "" for every app
	UnattendedOnly bool
	Before         int64 // only entries with ID < Before; 0 starts at the newest
	Limit          int   // 1..1000; 0 means 100
}

// Journal returns one page of the journal, newest first, after flushing
// the entries still queued.
func (d *Daemon) Journal(ctx context.Context, q JournalQuery) ([]JournalEntry, error) {
	if q.Limit < 0 || q.Limit > 1000 || q.Before < 0 {
		return nil, errcode.New(errcode.BadRequest, "limit must be 0-1000 and before not negative")
	}
	d.journal.flush()
	var rows []store.JournalEntry
	err := d.store.View(ctx, func(tx *store.Tx) error {
		var err error
		rows, err = tx.Journal(store.JournalQuery(q))
		return err
	})
	if err != nil {
		return nil, d.internal("read journal", err)
	}
	out := make([]JournalEntry, len(rows))
	for i, r := range rows {
		out[i] = JournalEntry(r)
	}
	return out, nil
}

// journalNow writes e synchronously (an unattended act) and reports
// whether it was written.
func (d *Daemon) journalNow(ctx context.Context, e store.JournalEntry) bool {
	e.At = d.now()
	err := d.store.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		_, err := tx.InsertJournal(e)
		return err
	})
	if err != nil {
		d.log.Error("write journal entry", "outcome", e.Outcome, "err", err)
		return false
	}
	return true
}

// record queues the journal entry of one executor request.
func (d *Daemon) record(f *fetch, res NetResult) {
	if checkAppID(f.call.AppID) != nil {
		return // no identity to file it under
	}
	e := store.JournalEntry{
		At:       f.start,
		AppID:    f.call.AppID,
		Host:     f.journalHost(),
		Method:   f.req.Method,
		Duration: d.now().Sub(f.start),
		Status:   res.Status,
		Code:     string(res.Code),
		Note:     "",
	}
	e.ResolvedHost = f.resolvedHost()
	if f.grant != nil {
		e.Slot = f.grant.slot
	} else if f.conn != nil {
		e.Slot = f.conn.slot
	}
	switch {
	case f.err != nil:
		e.Outcome, e.Gate = "refused", f.failedGate
		if f.resp != nil || f.departed {
			e.Outcome = "failed"
		}
	default:
		e.Outcome = "sent"
	}
	switch f.approval {
	case "standing":
		e.Unattended, e.Note = true, "approved by a standing approval"
	case "session":
		e.Note = "approved by session memory"
	case "user":
		e.Note = "approved by the user"
	case "":
		if f.denial != "" {
			e.Note = f.denial // who or what denied the confirm
		}
	}
	if f.probe {
		e.Note = "probe"
	}
	d.journal.add(e)
}

// journalHost is the host the journal records: the symbolic form for a
// connection URL, else the normalized host (or, when the host did not
// normalize, nothing).
func (f *fetch) journalHost() string {
	if f.conn != nil {
		return f.conn.symbolic()
	}
	return f.host
}

// resolvedHost is the host a connection-URL request resolved to, for the
// administrator's journal; "" for a literal URL (its host is already in
// Host) or when nothing resolved.
func (f *fetch) resolvedHost() string {
	if f.conn != nil {
		return f.host
	}
	return ""
}

// journalQueue bounds the batcher's queue; a full queue makes add wait
// (back-pressure) rather than drop an entry.
const (
	journalQueue = 1024
	journalBatch = 256
)

// journalBatcher writes queued entries in batches, one transaction each.
type journalBatcher struct {
	st  *store.Store
	log *slog.Logger
	in  chan journalOp
	wg  sync.WaitGroup

	mu     sync.RWMutex // held shared by add, exclusively by close
	closed bool
}

// journalOp is an entry, or a flush request (done set).
type journalOp struct {
	e    store.JournalEntry
	done chan struct{}
}

func newJournalBatcher(st *store.Store, log *slog.Logger) *journalBatcher {
	b := &journalBatcher{st: st, log: log, in: make(chan journalOp, journalQueue)}
	b.wg.Add(1)
	// The batcher lives until close.
	go b.loop()
	return b
}

func (b *journalBatcher) add(e store.JournalEntry) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return
	}
	b.in <- journalOp{e: e}
}

// flush waits until every entry queued before it is written.
func (b *journalBatcher) flush() {
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return
	}
	done := make(chan struct{})
	b.in <- journalOp{done: done}
	b.mu.RUnlock()
	<-done
}

// close writes what is queued and stops the batcher.
func (b *journalBatcher) close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.in)
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *journalBatcher) loop() {
	defer b.wg.Done()
	batch := make([]store.JournalEntry, 0, journalBatch)
	var waiting []chan struct{}
	for op := range b.in {
		batch, waiting = b.take(op, batch, waiting)
		// Take whatever else is queued, up to one batch.
	drain:
		for len(batch) < journalBatch {
			select {
			case op, ok := <-b.in:
				if !ok {
					break drain
				}
				batch, waiting = b.take(op, batch, waiting)
			default:
				break drain
			}
		}
		b.write(batch)
		batch = batch[:0]
		for _, w := range waiting {
			close(w)
		}
		waiting = waiting[:0]
	}
}

func (b *journalBatcher) take(op journalOp, batch []store.JournalEntry, waiting []chan struct{}) ([]store.JournalEntry, []chan struct{}) {
	if op.done != nil {
		return batch, append(waiting, op.done)
	}
	return append(batch, op.e), waiting
}

func (b *journalBatcher) write(batch []store.JournalEntry) {
	if len(batch) == 0 {
		return
	}
	err := b.st.Update(context.Background(), func(tx *store.Tx) error {
		for _, e := range batch {
			if _, err := tx.InsertJournal(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.log.Error("write journal batch", "entries", len(batch), "err", err)
	}
}
