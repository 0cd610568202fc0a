package journal

import (
	"context"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hostauth"
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

	// Act names a person's act (Outcome "act"): approve, reapprove,
	// revoke, reconnect, credentials-set, confirm-allow, confirm-deny,
	// host-pair, host-unpair, import, unlink, relink, credential-replace. Note says who and what (field names
	// only, never a value).
	Act string
	// Count is how many repeated refusals the entry stands for (1 for
	// one); LastAt is the latest (zero while Count is 1).
	Count  int
	LastAt time.Time
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
	// VisibleTo is the paired host whose view the page is ("" for the
	// administrator): Records.Journal sets it from the caller.
	VisibleTo string
}

// journal is the executor's journal: the store it writes to, its clock
// and logger, and the batcher of ordinary entries (a service the daemon
// runs, daemon/services.go).
type Journal struct {
	st    *store.Store
	Now   func() time.Time
	log   *slog.Logger
	Batch *journalBatcher
}

func NewJournal(st *store.Store, now func() time.Time, log *slog.Logger) *Journal {
	return &Journal{st: st, Now: now, log: log, Batch: NewJournalBatcher(st, log)}
}

func (j *Journal) Query(ctx context.Context, q JournalQuery) ([]JournalEntry, error) {
	if q.Limit < 0 || q.Limit > 1000 || q.Before < 0 {
		return nil, errcode.New(errcode.BadRequest, "limit must be 0-1000 and before not negative")
	}
	if q.Kind != "" && q.Kind != "acts" && q.Kind != "requests" {
		return nil, errcode.New(errcode.BadRequest, `kind must be "acts" or "requests"`)
	}
	j.Batch.Flush()
	var rows []store.JournalEntry
	err := j.st.View(ctx, func(tx *store.Tx) error {
		var err error
		rows, err = tx.Journal(store.JournalQuery(q))
		return err
	})
	if err != nil {
		j.log.Error("read journal", "err", err)
		return nil, errcode.Wrap(errcode.Internal, "read journal failed", err)
	}
	out := make([]JournalEntry, len(rows))
	for i, r := range rows {
		out[i] = JournalEntry(r)
	}
	return out, nil
}

// add queues an ordinary entry.
func (j *Journal) Add(e store.JournalEntry) { j.Batch.Add(e) }

// writeNow writes e synchronously (an unattended act) and reports whether
// it was written.
func (j *Journal) WriteNow(ctx context.Context, e store.JournalEntry) bool {
	e.At = j.Now()
	err := j.st.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		_, err := tx.InsertJournal(e)
		return err
	})
	if err != nil {
		j.log.Error("write journal entry", "outcome", e.Outcome, "err", err)
		return false
	}
	return true
}

// journalQueue bounds the batcher's queue; a full queue makes add wait
// (back-pressure) rather than drop an entry.
//
// journalLinger is how long the batcher waits, after an entry arrives,
// for more to share its transaction: one request at a time would
// otherwise cost a transaction and an fsync each (synchronous=FULL), about
// a sixth of a small request's CPU. An entry is on disk at most this long
// after its request answered, or at once when the journal is read
// (flush) or the daemon closes; a crash loses at most what is queued, as
// it did before the linger. An unattended act never waits: it is written
// synchronously, before its send.
const (
	journalQueue  = 1024
	journalBatch  = 256
	JournalLinger = 20 * time.Millisecond
)

// journalBatcher writes queued entries in batches, one transaction each.
// It is a service (daemon/services.go): Run writes until its context is done,
// then writes what is queued and returns; add after that drops the entry
// (only a closing daemon adds then).
type journalBatcher struct {
	st  *store.Store
	log *slog.Logger
	in  chan journalOp

	// recent maps a refusal's repeatKey to the entry that counts its
	// repeats: the loop's alone.
	recent map[repeatKey]repeatEntry

	mu     sync.RWMutex // held shared by add and flush, exclusively to close in
	closed bool
}

// journalOp is an entry, or a flush request (done set).
type journalOp struct {
	e    store.JournalEntry
	done chan struct{}
}

func NewJournalBatcher(st *store.Store, log *slog.Logger) *journalBatcher {
	return &journalBatcher{st: st, log: log, in: make(chan journalOp, journalQueue), recent: map[repeatKey]repeatEntry{}}
}

// Add queues e for the next batch; once the batcher has stopped (the
// daemon is shutting down while the API drains), e is written at once.
func (b *journalBatcher) Add(e store.JournalEntry) {
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		b.writeOne(e)
		return
	}
	b.in <- journalOp{e: e}
	b.mu.RUnlock()
}

// writeOne writes e in its own transaction, outside the loop (which owns
// the repeat counts).
func (b *journalBatcher) writeOne(e store.JournalEntry) {
	err := b.st.Update(context.Background(), func(tx *store.Tx) error {
		_, err := tx.InsertJournals([]store.JournalEntry{e})
		return err
	})
	if err != nil {
		b.log.Error("write journal entry", "outcome", e.Outcome, "err", err)
	}
}

// flush waits until every entry queued before it is written.
func (b *journalBatcher) Flush() {
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

// Run writes queued entries until ctx is done, then writes what is left
// and returns nil. The loop keeps draining while the queue is closed, so
// an add blocked on a full queue always gets through first.
func (b *journalBatcher) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.closed = true
		close(b.in)
	})
	defer stop()
	b.loop()
	return nil
}

func (b *journalBatcher) loop() {
	batch := make([]store.JournalEntry, 0, journalBatch)
	var waiting []chan struct{}
	linger := time.NewTimer(JournalLinger)
	linger.Stop()
	for op := range b.in {
		batch, waiting = b.take(op, batch, waiting)
		// Wait a little for more entries to share the transaction,
		// unless a reader waits for the flush.
		if len(waiting) == 0 {
			linger.Reset(JournalLinger)
		wait:
			for len(batch) < journalBatch && len(waiting) == 0 {
				select {
				case op, ok := <-b.in:
					if !ok {
						break wait
					}
					batch, waiting = b.take(op, batch, waiting)
				case <-linger.C:
					break wait
				}
			}
			linger.Stop()
		}
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

// Repeated executor refusals (same app, slot, host, gate, code and note within
// journalRepeatWindow of the first) are one entry with a count: a loop
// of refused requests costs one row, and cannot push out what it repeats.
const (
	journalRepeatWindow = time.Minute
	journalRepeatKeys   = 4096 // refusals tracked at once; past it the oldest window restarts
)

// repeatKey is what makes two refusals the same: app, slot, host (and
// where it resolved), gate, code, and the note (who or what denied).
type repeatKey struct{ app, slot, host, resolved, gate, code, note string }

// repeatEntry is the entry counting a refusal's repeats: its id once
// written (0 while it waits in the batch at index idx), when it began,
// and the repeats not yet written.
type repeatEntry struct {
	id     int64
	idx    int
	first  time.Time
	extra  int
	lastAt time.Time
	e      store.JournalEntry // the first, to write anew if retention dropped it
}

// repeatable reports e's repeat key: an attended executor refusal.
func repeatable(e store.JournalEntry) (repeatKey, bool) {
	if e.Outcome != "refused" || e.Unattended || e.Code == "" {
		return repeatKey{}, false
	}
	return repeatKey{e.AppID, e.Slot, e.Host, e.ResolvedHost, e.Gate, e.Code, e.Note}, true
}

// write writes batch in one transaction: new entries with one retention
// pass, repeats of a recent refusal as counts on its entry.
func (b *journalBatcher) write(batch []store.JournalEntry) {
	if len(batch) == 0 {
		return
	}
	if len(b.recent) > journalRepeatKeys {
		clear(b.recent)
	}
	fresh := make([]store.JournalEntry, 0, len(batch))
	touched := map[repeatKey]bool{}
	for _, e := range batch {
		k, ok := repeatable(e)
		if !ok {
			fresh = append(fresh, e)
			continue
		}
		if r, seen := b.recent[k]; seen && e.At.Sub(r.first) < journalRepeatWindow && !e.At.Before(r.first) {
			r.extra++
			r.lastAt = e.At
			b.recent[k], touched[k] = r, true
			continue
		}
		b.recent[k], touched[k] = repeatEntry{idx: len(fresh), first: e.At, e: e}, true
		fresh = append(fresh, e)
	}
	err := b.st.Update(context.Background(), func(tx *store.Tx) error {
		// Repeats of an entry already written count on it; one retention
		// dropped is written anew.
		for k := range touched {
			r := b.recent[k]
			if r.id == 0 || r.extra == 0 {
				continue
			}
			ok, err := tx.BumpJournal(r.id, r.extra, r.lastAt)
			if err != nil {
				return err
			}
			if !ok {
				e := r.e
				e.At = r.lastAt
				b.recent[k] = repeatEntry{idx: len(fresh), first: e.At, e: e, extra: r.extra - 1, lastAt: r.lastAt}
				fresh = append(fresh, e)
			}
		}
		ids, err := tx.InsertJournals(fresh)
		if err != nil {
			return err
		}
		for k := range touched {
			r := b.recent[k]
			if r.id == 0 {
				r.id = ids[r.idx]
				if r.extra > 0 {
					if _, err := tx.BumpJournal(r.id, r.extra, r.lastAt); err != nil {
						return err
					}
				}
			}
			r.extra = 0
			b.recent[k] = r
		}
		return nil
	})
	if err != nil {
		clear(b.recent) // nothing of the batch was written: count afresh
		b.log.Error("write journal batch", "entries", len(batch), "err", err)
	}
}

// A person's acts are journaled with outcome "act" (store.OutcomeAct),
// kept apart from executor entries (no flood of requests pushes one
// out): approve, reapprove, revoke, reconnect, credentials-set (field
// names only), confirm-allow and confirm-deny (who decided), host-pair
// and host-unpair, import, unlink (a linked device forgotten), relink (a
// new device link replaced a working one) and credential-replace (a Hue
// re-pair, a new SimpleFIN claim or a new OAuth sign-in replaced a working
// credential). Metadata only, as every entry.
const (
	ActApprove        = "approve"
	ActReapprove      = "reapprove"
	ActRevoke         = "revoke"
	ActReconnect      = "reconnect"
	ActCredentialsSet = "credentials-set"
	ActConfirmAllow   = "confirm-allow"
	ActConfirmDeny    = "confirm-deny"
	ActHostPair       = "host-pair"
	ActHostUnpair     = "host-unpair"
	ActImport         = "import"
	ActUnlink         = "unlink"
	ActRelink         = "relink"
	ActReplace        = "credential-replace"
)

// actor says who acted: the paired host the request came from, or the
// administrator (the ctl channel, or an in-process caller).
func actor(ctx context.Context) string {
	if id, ok := hostauth.CallerHost(ctx); ok && id != "" {
		return "by host " + id
	}
	return "by the administrator"
}

// actEntry is the journal entry of act on (appID, slot) by ctx's caller,
// note (never a value) after who.
func ActEntry(ctx context.Context, act, appID, slot, note string) store.JournalEntry {
	n := actor(ctx)
	if note != "" {
		n += "; " + note
	}
	return store.JournalEntry{AppID: appID, Slot: slot, Outcome: store.OutcomeAct, Act: act, Note: truncateNote(n)}
}

// truncateNote keeps a note within the store's bound for a text field.
func truncateNote(s string) string {
	const max = 1000
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// act writes an act that committed in its own transaction (a host
// paired, a confirm decided, an import), synchronously: an administrator
// reading the journal after the act sees it.
func (j *Journal) Act(ctx context.Context, act, appID, slot, note string) {
	j.WriteNow(ctx, ActEntry(ctx, act, appID, slot, note))
}
