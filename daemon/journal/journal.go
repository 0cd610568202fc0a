package journal

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
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
// Every entry is committed before the request or act it records is
// answered (Journal); a mutating request's row is written before its send
// and completed after (store.OutcomeSentUnknown until then).

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

// Journal is the executor's journal: the store it writes to, its clock and
// logger, the group commit every entry goes through, and whether the
// journal can be written at present.
//
// Every entry is committed before the call that adds it returns, so an
// answer that waits for it (a net-response, a confirm decision) never
// leaves before its entry is on disk: a crash after the answer cannot
// lose the entry. Entries that arrive while a commit is in flight share
// the next transaction (group commit, no linger: nothing waits in memory
// for company), which runs with synchronous=NORMAL (store.UpdateJournal):
// in WAL mode a committed transaction survives a crash of snugd. Safe for
// concurrent use.
type Journal struct {
	st  *store.Store
	Now func() time.Time
	log *slog.Logger
	gc  committer

	// down is the failure of the latest journal commit, nil once one
	// succeeded again: while it is set the executor refuses every
	// credentialed request before its send unless that request's own
	// row, written first, commits (the probe that clears it).
	down atomic.Pointer[downState]
}

// downState is a failed journal commit: why, and since when.
type downState struct {
	err   error
	since time.Time
}

func NewJournal(st *store.Store, now func() time.Time, log *slog.Logger) *Journal {
	j := &Journal{st: st, Now: now, log: log}
	j.gc = committer{st: st, log: log, recent: map[repeatKey]repeatEntry{}, uncounted: -1, done: j.noteCommit}
	return j
}

func (j *Journal) Query(ctx context.Context, q JournalQuery) ([]JournalEntry, error) {
	if q.Limit < 0 || q.Limit > 1000 || q.Before < 0 {
		return nil, errcode.New(errcode.BadRequest, "limit must be 0-1000 and before not negative")
	}
	if q.Kind != "" && q.Kind != "acts" && q.Kind != "requests" {
		return nil, errcode.New(errcode.BadRequest, `kind must be "acts" or "requests"`)
	}
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

// Commit writes e and returns its id once it is committed. Attended
// executor refusals that repeat one of the last minute are counted on
// its entry instead (the id is then that entry's). An error is the
// store's (store.ErrStorageFull for a full or read-only disk); it also
// marks the journal unwritable until a commit succeeds.
func (j *Journal) Commit(e store.JournalEntry) (int64, error) {
	o := &journalOp{e: e}
	j.gc.do(o)
	return o.id, o.err
}

// Complete writes the outcome e of entry id, a row Commit wrote before
// its request was sent (outcome store.OutcomeSentUnknown), and returns
// once it is committed. Its errors are Commit's.
func (j *Journal) Complete(id int64, e store.JournalEntry) error {
	o := &journalOp{e: e, complete: id}
	j.gc.do(o)
	return o.err
}

// Add writes e, as Commit does, for a caller that has nothing to refuse
// when the journal cannot be written: the failure is logged.
func (j *Journal) Add(e store.JournalEntry) {
	if _, err := j.Commit(e); err != nil {
		j.log.Error("write journal entry", "outcome", e.Outcome, "err", err)
	}
}

// WriteNow writes e with the journal's clock as its time (an unattended
// act, before the send it records) and reports whether it was committed.
func (j *Journal) WriteNow(_ context.Context, e store.JournalEntry) bool {
	e.At = j.Now()
	if _, err := j.Commit(e); err != nil {
		j.log.Error("write journal entry", "outcome", e.Outcome, "err", err)
		return false
	}
	return true
}

// noteCommit keeps the journal's state after a commit: err nil clears a
// failure, a store failure (not an entry the store refused as invalid)
// sets it.
func (j *Journal) noteCommit(err error) {
	switch {
	case err == nil:
		if j.down.Load() != nil && j.down.Swap(nil) != nil {
			j.log.Info("the journal can be written again")
		}
	case errors.Is(err, store.ErrInvalid):
	default:
		if j.down.Load() == nil && j.down.CompareAndSwap(nil, &downState{err: err, since: j.Now()}) {
			j.log.Error("the journal cannot be written: credentialed requests are refused until it can", "err", err)
		}
	}
}

// Writable reports whether the latest journal commit succeeded (or none
// failed yet). One atomic load: the executor asks on every request.
func (j *Journal) Writable() bool { return j.down.Load() == nil }

// Unwritable reports, while the journal cannot be written, the fixed
// sentence that says why (UnwritableMessage) and since when; ok is false
// while it can.
func (j *Journal) Unwritable() (msg string, since time.Time, ok bool) {
	d := j.down.Load()
	if d == nil {
		return "", time.Time{}, false
	}
	return UnwritableMessage(d.err), d.since, true
}

// The fixed sentences of a request refused because the journal cannot be
// written: they name no path and no value.
const (
	MsgDiskFull     = "snugd cannot record requests because its disk is full"
	MsgDiskReadOnly = "snugd cannot record requests because its disk is read-only"
	MsgDamaged      = "snugd cannot record requests because its database is damaged"
	MsgUnwritable   = "snugd cannot record requests because its database cannot be written"
)

// UnwritableMessage is the fixed sentence for err, a failed journal
// commit.
func UnwritableMessage(err error) string {
	switch {
	case errors.Is(err, store.ErrReadOnlyDisk):
		return MsgDiskReadOnly
	case errors.Is(err, store.ErrStorageFull):
		return MsgDiskFull
	case errors.Is(err, store.ErrDamaged):
		return MsgDamaged
	}
	return MsgUnwritable
}

// Refusal is the NET_FETCH_FAILED refusal of a request whose row could
// not be committed (err): sent before the send, or instead of the answer.
func Refusal(err error) *errcode.Error {
	return errcode.Wrap(errcode.NetFetchFailed, UnwritableMessage(err), err)
}

// journalBatch bounds one commit; what is left waits for the next.
const journalBatch = 256

// committer is the journal's group commit. The first caller that finds
// no commit in flight leads: it commits every op queued by then (its own
// first) in one transaction, hands the lead to the oldest op queued
// meanwhile, and wakes the ops it committed. No goroutine of its own, no
// timer: an op alone is committed at once by its own caller.
type committer struct {
	st   *store.Store
	log  *slog.Logger
	done func(err error) // the state after each commit

	mu    sync.Mutex
	queue []*journalOp
	busy  bool // a leader is committing; it hands over to queue[0]

	// recent maps a refusal's repeatKey to the entry that counts its
	// repeats: the leader's alone (one leader at a time).
	recent map[repeatKey]repeatEntry
	// uncounted is how many entries this process appended since the last
	// retention pass (store.CountJournal), -1 before the first: the
	// leader's alone.
	uncounted int
}

// journalCountEvery is how many entries the journal appends between two
// retention passes: the bounds are exceeded by at most this many (plus a
// batch), and a lone request's commit skips the counters' pages.
const journalCountEvery = 64

// journalOp is one entry to insert, or the completion of entry complete.
type journalOp struct {
	e        store.JournalEntry
	complete int64 // >0: the row to complete with e
	id       int64 // the row written (or counting the repeat)
	err      error
	wake     chan bool // true: lead the next commit; false: committed (made only for an op that waits)
}

// do commits o, leading a commit or waiting for one, and returns with
// o.id and o.err set.
func (c *committer) do(o *journalOp) {
	c.mu.Lock()
	if !c.busy {
		// No commit in flight, so none queued: o leads, alone.
		c.busy = true
		c.mu.Unlock()
		alone := [1]*journalOp{o}
		c.lead(alone[:])
		return
	}
	// Every op queued while busy waits, and only those: a leader wakes
	// queue[0] to lead next and the rest of its batch once committed.
	o.wake = make(chan bool, 1)
	c.queue = append(c.queue, o)
	c.mu.Unlock()
	if lead := <-o.wake; !lead {
		return
	}
	c.mu.Lock()
	// o is queue[0]: the last leader handed over to the oldest op.
	n := min(len(c.queue), journalBatch)
	batch := c.queue[:n:n]
	if c.queue = c.queue[n:]; len(c.queue) == 0 {
		c.queue = nil
	}
	c.mu.Unlock()
	c.lead(batch)
}

// lead commits batch (the leader's op first, busy set), hands the lead
// to the oldest op queued meanwhile, if any, and wakes the ops of batch.
func (c *committer) lead(batch []*journalOp) {
	c.write(batch)

	c.mu.Lock()
	if len(c.queue) > 0 {
		c.queue[0].wake <- true // still busy: it leads next
	} else {
		c.busy = false
	}
	c.mu.Unlock()
	for _, b := range batch[1:] {
		b.wake <- false
	}
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

// write commits batch in one transaction and sets each op's result. When
// a batch of several fails for something else than the disk (an entry
// the store refuses), each op is committed alone, so one bad entry fails
// only its own request.
func (c *committer) write(batch []*journalOp) {
	err := c.commit(batch)
	if err != nil && len(batch) > 1 && !errors.Is(err, store.ErrStorageFull) && !errors.Is(err, store.ErrDamaged) {
		c.log.Warn("journal batch failed; committing its entries one by one", "entries", len(batch), "err", err)
		for _, o := range batch {
			o.err = c.commit([]*journalOp{o})
		}
		return
	}
	for _, o := range batch {
		o.err = err
	}
}

// commit writes ops in one transaction: completions, new entries with one
// retention pass, repeats of a recent refusal as counts on its entry. It
// sets each op's id on success.
func (c *committer) commit(ops []*journalOp) error {
	if len(c.recent) > journalRepeatKeys {
		clear(c.recent)
	}
	type slot struct {
		op  *journalOp
		key *repeatKey // a repeat: its id is the counting entry's
		idx int        // else its index in fresh
	}
	fresh := make([]store.JournalEntry, 0, len(ops))
	slots := make([]slot, 0, len(ops))
	touched := map[repeatKey]bool{}
	var completes []*journalOp
	for _, o := range ops {
		if o.complete > 0 {
			completes = append(completes, o)
			continue
		}
		e := o.e
		k, ok := repeatable(e)
		if !ok {
			slots = append(slots, slot{op: o, idx: len(fresh)})
			fresh = append(fresh, e)
			continue
		}
		if r, seen := c.recent[k]; seen && e.At.Sub(r.first) < journalRepeatWindow && !e.At.Before(r.first) {
			r.extra++
			r.lastAt = e.At
			c.recent[k], touched[k] = r, true
			key := k // a copy, so only a repeat's key goes to the heap
			slots = append(slots, slot{op: o, key: &key})
			continue
		}
		c.recent[k], touched[k] = repeatEntry{idx: len(fresh), first: e.At, e: e}, true
		slots = append(slots, slot{op: o, idx: len(fresh)})
		fresh = append(fresh, e)
	}
	uncounted := c.uncounted
	err := c.st.UpdateJournal(context.Background(), func(tx *store.Tx) error {
		for _, o := range completes {
			ok, err := tx.CompleteJournal(o.complete, o.e)
			if err != nil {
				return err
			}
			o.id = o.complete
			if !ok { // retention dropped the row meanwhile: write the outcome anew
				slots = append(slots, slot{op: o, idx: len(fresh)})
				fresh = append(fresh, o.e)
			}
		}
		// Repeats of an entry already written count on it; one retention
		// dropped is written anew.
		for k := range touched {
			r := c.recent[k]
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
				c.recent[k] = repeatEntry{idx: len(fresh), first: e.At, e: e, extra: r.extra - 1, lastAt: r.lastAt}
				fresh = append(fresh, e)
			}
		}
		// The retention counts: a pass on the first commit of the
		// process (which sets the store's mark, and counts whatever a
		// crash left uncounted), then every journalCountEvery entries.
		if c.uncounted < 0 {
			if err := tx.CountJournal(); err != nil {
				return err
			}
			uncounted = 0
		}
		ids, err := tx.InsertJournalsUncounted(fresh)
		if err != nil {
			return err
		}
		if uncounted += len(fresh); uncounted >= journalCountEvery {
			if err := tx.CountJournal(); err != nil {
				return err
			}
			uncounted = 0
		}
		for k := range touched {
			r := c.recent[k]
			if r.id == 0 {
				r.id = ids[r.idx]
				if r.extra > 0 {
					if _, err := tx.BumpJournal(r.id, r.extra, r.lastAt); err != nil {
						return err
					}
				}
			}
			r.extra = 0
			c.recent[k] = r
		}
		for _, s := range slots {
			if s.key != nil {
				s.op.id = c.recent[*s.key].id
			} else {
				s.op.id = ids[s.idx]
			}
		}
		return nil
	})
	if err != nil {
		clear(c.recent) // nothing of the batch was written: count afresh
	} else {
		c.uncounted = uncounted
	}
	c.done(err)
	return err
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
