package fetch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/ident"
	"github.com/snug/snugd/daemon/journal"
)

// The confirm broker of gate 6 (DESIGN.md Executor).
// A mutating request parks a Confirm here and waits for the user; a host
// lists the queue (FIFO), shows a confirm to the user and posts the
// decision. The broker is the only place a confirm is approved: an inline
// card in a chat surface is presentation, and only DecideConfirm with the confirm's
// unguessable id resolves it.
//
// Each parked confirm has its own resolver, so a second confirm never
// orphans the first. A request whose caller goes away denies its own
// parked confirm, found by reference identity, never by a key two
// requests could share. A confirm is decided once: a later decision,
// a timeout or a caller going away after that is a no-op.
//
// Withdrawal: unpairing a host (WithdrawHost) and shutting down
// (Shutdown) deny, inside the call and before it returns, every confirm
// the host (or anyone) parked, and also every allow its waiting request
// has not yet taken: an allow counts only once the request takes it
// (claim), under the broker's lock, so an allow that raced the unpair can
// never carry the request past gate 6. A decision for a withdrawn confirm
// is a no-op answered CONFIRM_WITHDRAWN.

// Confirm is what the user is asked: the resolved host, the method, the
// full URL with the resolved host (no query credential: none is rendered
// before the confirm) and, for an app or chat-lane send, the slot and the
// body (what a standing approval decides on). On the wizard's
// probe path Slot and Body are empty and Probe is set.
type Confirm struct {
	ID        string // ≥ 128 random bits
	AppID     string
	Host      string
	Method    string
	URL       string
	Slot      string
	Body      string
	Probe     bool
	Delivery  Delivery // the chat lane (llm) may render the confirm inline
	CreatedAt time.Time
	ExpiresAt time.Time
	// HostID is the paired host that forwarded the request (from its ctx),
	// "" for the ctl channel. Unpairing it withdraws the confirm. It is
	// the broker's bookkeeping, not shown to the user.
	HostID string
}

// Remember says how long an allow holds.
type Remember int

const (
	// RememberOnce allows this one request.
	RememberOnce Remember = iota
	// RememberSession also allows later requests with the same (app, host,
	// method) until snugd restarts or any of the app's connections is
	// written. Never consulted by probes or standing approvals.
	RememberSession
)

// decidedKeep bounds how many decided confirm ids are remembered, so a
// late second decision is a no-op rather than NOT_FOUND.
const decidedKeep = 1024

// Bounds of the queue. Each parked confirm holds a request (its body up to
// 256 KiB) and its caller for up to the confirm timeout, and an app can
// send as many mutating requests as its host forwards; nobody can review
// more than a few at once. A request beyond either bound is denied at once,
// without asking.
const (
	MaxParkedPerApp = 16
	MaxParked       = 256
	// maxParkedBytes bounds what the parked confirms hold in total
	// (bodies and URLs): 256 of them at 256 KiB each would be 64 MiB
	// held on callers' behalf. Past it a new confirm is denied at once.
	MaxParkedBytes = 16 << 20
)

// withdrawal says why a confirm was denied without the user: "" when it
// was not (the user, its timeout or its caller decided it).
type withdrawal string

const (
	withdrawnUnpaired withdrawal = "unpaired" // its host was unpaired
	withdrawnShutdown withdrawal = "shutdown" // snugd is shutting down
)

type ConfirmBroker struct {
	timeout time.Duration
	hints   *hints.Bus
	now     func() time.Time

	Mu        sync.Mutex
	Queue     []*parkedConfirm        // FIFO
	unclaimed map[*parkedConfirm]bool // allowed, not yet taken by their request
	decided   map[string]withdrawal   // decided ids → why, when withdrawn
	order     []string                // decided ids, oldest first
	Session   map[SessionKey]struct{}
	gen       map[string]uint64 // per app: bumped by every connection write
	closed    bool
}

type SessionKey struct{ App, Host, Method string }

type parkedConfirm struct {
	c          Confirm
	gen        uint64
	done       chan struct{} // closed by the one decision
	decided    bool
	allow      bool
	withdrawn  withdrawal
	remembered bool   // its allow added the session memory entry
	by         string // who or what denied it (a Denied* note), set with decided
}

// The journal's notes for a confirm that ended in a deny: who or what
// decided it, so a user's deny and a timeout read differently.
const (
	DeniedByUser     = "denied by the user"
	DeniedByTimeout  = "denied: nobody answered the confirm in time"
	DeniedByCaller   = "denied: the caller went away while the confirm waited"
	DeniedByShutdown = "denied: snugd shut down while the confirm waited"
	DeniedByUnpair   = "denied: the host that sent the request was unpaired"
	DeniedQueueFull  = "denied without asking: too many confirms are waiting"
)

// deniedBy is the note of a withdrawal.
func (w withdrawal) deniedBy() string {
	if w == withdrawnUnpaired {
		return DeniedByUnpair
	}
	return DeniedByShutdown
}

func NewConfirmBroker(timeout time.Duration, hints *hints.Bus, now func() time.Time) *ConfirmBroker {
	return &ConfirmBroker{
		timeout:   timeout,
		hints:     hints,
		now:       now,
		unclaimed: map[*parkedConfirm]bool{},
		decided:   map[string]withdrawal{},
		Session:   map[SessionKey]struct{}{},
		gen:       map[string]uint64{},
	}
}

// askResult is how ask ended.
type askResult int

const (
	askDenied   askResult = iota // the user denied, or a timeout or the caller did
	AskAllowed                   // the user allowed, and the allow was taken
	AskFull                      // denied without asking: the queue is at a bound
	askUnpaired                  // withdrawn: the host that sent the request was unpaired
	askShutdown                  // withdrawn, or never parked: snugd is shutting down
)

// TestHookClaim, when set (only by tests), runs in ask after the decision arrived and
// before the request takes it: the one point where an unpair or a shutdown
// can land between an allow and gate 6's end. Nil in production.
var TestHookClaim atomic.Pointer[func(Confirm)]

// ask parks c and waits for its decision: the user's, a timeout (deny),
// the caller going away (deny), its host's unpairing or the daemon's
// shutdown (withdrawn). A confirm beyond the queue's bounds is not parked
// at all (askFull). For a confirm that did not end askAllowed it also
// says who or what denied it (a Denied* note, for the journal).
func (b *ConfirmBroker) Ask(ctx context.Context, c Confirm) (askResult, string) {
	c.ID = ident.Random(16)
	c.CreatedAt = b.now()
	c.ExpiresAt = c.CreatedAt.Add(b.timeout)
	p := &parkedConfirm{c: c, done: make(chan struct{})}
	b.Mu.Lock()
	if b.closed {
		b.Mu.Unlock()
		return askShutdown, DeniedByShutdown
	}
	if len(b.Queue) >= MaxParked || b.parkedBy(c.AppID) >= MaxParkedPerApp || b.parkedBytes()+ConfirmBytes(c) > MaxParkedBytes {
		b.Mu.Unlock()
		return AskFull, DeniedQueueFull
	}
	p.gen = b.gen[c.AppID]
	b.Queue = append(b.Queue, p)
	b.Mu.Unlock()
	b.hints.Publish(hints.Hint{Type: hints.ConfirmPending, ID: c.ID})

	timer := time.NewTimer(b.timeout)
	defer timer.Stop()
	why := DeniedByTimeout
	select {
	case <-p.done:
	case <-ctx.Done():
		why = DeniedByCaller
	case <-timer.C:
	}
	b.ResolveBy(p, false, RememberOnce, why) // a no-op if it was decided first
	if hook := TestHookClaim.Load(); hook != nil {
		(*hook)(p.c)
	}
	return b.claim(p)
}

// claim takes p's decision for its request, with who or what denied it.
// An allow counts only here: one withdrawn between the decision and now
// is a denial.
func (b *ConfirmBroker) claim(p *parkedConfirm) (askResult, string) {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	delete(b.unclaimed, p)
	switch {
	case p.withdrawn == withdrawnUnpaired:
		return askUnpaired, p.withdrawn.deniedBy()
	case p.withdrawn == withdrawnShutdown:
		return askShutdown, p.withdrawn.deniedBy()
	case p.allow:
		return AskAllowed, ""
	}
	return askDenied, p.by
}

// parkedBy counts appID's parked confirms. The caller holds b.mu.
func (b *ConfirmBroker) parkedBy(appID string) int {
	n := 0
	for _, q := range b.Queue {
		if q.c.AppID == appID {
			n++
		}
	}
	return n
}

// parkedBytes sums what the parked confirms hold. The caller holds b.mu.
func (b *ConfirmBroker) parkedBytes() int {
	n := 0
	for _, q := range b.Queue {
		n += ConfirmBytes(q.c)
	}
	return n
}

// confirmBytes is what one parked confirm holds of its caller's request.
func ConfirmBytes(c Confirm) int {
	return len(c.Body) + len(c.URL) + len(c.Host) + len(c.Method) + len(c.Slot)
}

// resolveBy decides p once; by says who or what decided a deny.
func (b *ConfirmBroker) ResolveBy(p *parkedConfirm, allow bool, remember Remember, by string) {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	if b.decideLocked(p, allow, remember, "", by) {
		close(p.done)
	}
}

// decideLocked decides p once (a later call is a no-op: deny after
// decide, decide after decide) and reports whether this call decided it;
// that caller, and only it, then closes p.done to wake p's request. The
// caller holds b.mu.
func (b *ConfirmBroker) decideLocked(p *parkedConfirm, allow bool, remember Remember, why withdrawal, by string) bool {
	if p.decided {
		return false
	}
	p.decided, p.allow, p.withdrawn = true, allow, why
	if !allow {
		p.by = by
	}
	for i, q := range b.Queue {
		if q == p { // reference identity
			b.Queue = append(b.Queue[:i:i], b.Queue[i+1:]...)
			break
		}
	}
	b.decided[p.c.ID] = why
	b.order = append(b.order, p.c.ID)
	if len(b.order) > decidedKeep {
		delete(b.decided, b.order[0])
		b.order = b.order[1:]
	}
	if allow {
		b.unclaimed[p] = true
		k := SessionKey{p.c.AppID, p.c.Host, p.c.Method}
		if _, had := b.Session[k]; !had && remember == RememberSession && !p.c.Probe && b.gen[p.c.AppID] == p.gen {
			// Remembered only if no connection write of the app happened
			// since the confirm was shown.
			b.Session[k] = struct{}{}
			p.remembered = true
		}
	}
	return true
}

// withdrawLocked denies p for why: parked, it is decided now; allowed but
// not yet taken by its request, the allow is void, and so is the session
// memory it added. The caller holds b.mu.
func (b *ConfirmBroker) withdrawLocked(p *parkedConfirm, why withdrawal) {
	if b.decideLocked(p, false, RememberOnce, why, why.deniedBy()) {
		close(p.done)
		return
	}
	if b.unclaimed[p] {
		delete(b.unclaimed, p)
		p.allow, p.withdrawn = false, why
		b.decided[p.c.ID] = why
		if p.remembered && b.gen[p.c.AppID] == p.gen {
			// The allow never took effect, so neither does its
			// "allow for this session".
			delete(b.Session, SessionKey{p.c.AppID, p.c.Host, p.c.Method})
		}
	}
}

// sessionAllows reports whether "allow for this session" covers (app,
// host, method), keyed exactly.
func (b *ConfirmBroker) SessionAllows(app, host, method string) bool {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	_, ok := b.Session[SessionKey{app, host, method}]
	return ok
}

// forgetApp clears appID's session memory; it runs after every committed
// write to the app's connections.
func (b *ConfirmBroker) ForgetApp(appID string) {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	b.gen[appID]++
	for k := range b.Session {
		if k.App == appID {
			delete(b.Session, k)
		}
	}
}

// WithdrawHost denies every confirm host id parked, and every allow its
// requests have not yet taken, before it returns. It is the
// unpairing's half of the broker: DeleteHost calls it. It reports how
// many it withdrew.
func (b *ConfirmBroker) WithdrawHost(id string) int {
	if id == "" {
		return 0 // the ctl channel is no paired host
	}
	b.Mu.Lock()
	defer b.Mu.Unlock()
	n := 0
	for _, p := range append([]*parkedConfirm(nil), b.Queue...) {
		if p.c.HostID == id {
			b.withdrawLocked(p, withdrawnUnpaired)
			n++
		}
	}
	for p := range b.unclaimed {
		if p.c.HostID == id {
			b.withdrawLocked(p, withdrawnUnpaired)
			n++
		}
	}
	return n
}

// Shutdown denies every parked confirm and every allow not yet taken, and
// denies every later ask at once (askShutdown): once shutdown begins
// nobody can decide a confirm any more. It is idempotent.
func (b *ConfirmBroker) Shutdown() {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	b.closed = true
	for _, p := range append([]*parkedConfirm(nil), b.Queue...) {
		b.withdrawLocked(p, withdrawnShutdown)
	}
	for p := range b.unclaimed {
		b.withdrawLocked(p, withdrawnShutdown)
	}
}

// Pending returns the pending confirms, oldest first (FIFO).
func (b *ConfirmBroker) Pending() []Confirm {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	out := make([]Confirm, len(b.Queue))
	for i, p := range b.Queue {
		out[i] = p.c
	}
	return out
}

// ConfirmByID returns the pending confirm id.
func (b *ConfirmBroker) ConfirmByID(id string) (Confirm, bool) {
	b.Mu.Lock()
	defer b.Mu.Unlock()
	for _, p := range b.Queue {
		if p.c.ID == id {
			return p.c, true
		}
	}
	return Confirm{}, false
}

// DecideConfirm records the user's decision on confirm id. remember
// applies to an allow only. An unknown id is NOT_FOUND; a confirm already
// decided (by the user, a timeout or its caller going away) is a no-op and
// returns nil; a confirm withdrawn (its host unpaired, or snugd shutting
// down) is a no-op that says so: CONFIRM_WITHDRAWN. The lookup and the
// decision are one step under the broker's lock, so a withdrawal cannot
// fall between them.
//
// decided, when not nil, is called with the confirm when this call is the
// one that decides it, after the broker's lock is let go (it may write to
// storage) and before the waiting request is woken: what it records (the
// journal's act) is there by the time the request answers.
func (b *ConfirmBroker) DecideConfirm(id string, allow bool, remember Remember, decided func(Confirm)) error {
	b.Mu.Lock()
	for _, p := range b.Queue {
		if p.c.ID == id {
			b.decideLocked(p, allow, remember, "", DeniedByUser) // parked: this call decides it
			b.Mu.Unlock()
			if decided != nil {
				decided(p.c)
			}
			close(p.done)
			return nil
		}
	}
	defer b.Mu.Unlock()
	why, done := b.decided[id]
	switch {
	case !done:
		return errcode.New(errcode.NotFound, "no such confirm")
	case why == withdrawnUnpaired:
		return errcode.New(errcode.ConfirmWithdrawn, "the confirm was withdrawn when its host was unpaired; nothing was allowed")
	case why == withdrawnShutdown:
		return errcode.New(errcode.ConfirmWithdrawn, "the confirm was withdrawn when snugd began shutting down; nothing was allowed")
	}
	return nil
}

// Confirms returns the pending confirms ctx's caller may see, oldest
// first (FIFO): every one for the administrator, a paired host's own
// apps' for a host.
func (e *Executor) Confirms(ctx context.Context) []Confirm {
	all := e.confirms.Pending()
	out := all[:0:0]
	for _, c := range all {
		if e.visible(ctx, c.AppID) {
			out = append(out, c)
		}
	}
	return out
}

// ConfirmByID returns pending confirm id when ctx's caller may see it;
// another host's confirm is not there for it.
func (e *Executor) ConfirmByID(ctx context.Context, id string) (Confirm, bool) {
	c, ok := e.confirms.ConfirmByID(id)
	if !ok || !e.visible(ctx, c.AppID) {
		return Confirm{}, false
	}
	return c, true
}

// DecideConfirm records the administrator's decision on confirm id.
func (e *Executor) DecideConfirm(id string, allow bool, remember Remember) error {
	return e.DecideConfirmBy(context.Background(), id, allow, remember)
}

// DecideConfirmBy records the decision of ctx's caller (a paired host or
// the ctl channel), whom the journal's act names, on confirm id. A host
// decides only its own apps' confirms: another's is an unknown id
// (NOT_FOUND). One no longer pending is the broker's to answer (a no-op
// for a decided id, which nobody can guess).
func (e *Executor) DecideConfirmBy(ctx context.Context, id string, allow bool, remember Remember) error {
	if c, ok := e.confirms.ConfirmByID(id); ok && !e.visible(ctx, c.AppID) {
		return errcode.New(errcode.NotFound, "no such confirm")
	}
	return e.confirms.DecideConfirm(id, allow, remember, func(c Confirm) {
		act := journal.ActConfirmDeny
		if allow {
			act = journal.ActConfirmAllow
		}
		note := c.Method + " " + c.Host + ", once"
		if remember == RememberSession {
			note = c.Method + " " + c.Host + ", for the session"
		}
		e.journal.Act(ctx, act, c.AppID, c.Slot, note)
	})
}

// visible reports whether ctx's caller may see an item of appID: always
// for the administrator; for a paired host, when it may reach the app.
func (e *Executor) visible(ctx context.Context, appID string) bool {
	if _, ok := hostauth.CallerHost(ctx); !ok {
		return true
	}
	ok, err := e.owners.AppVisible(ctx, appID)
	return err == nil && ok
}

// PendingConfirms reports how many confirms of appID are parked.
func (e *Executor) PendingConfirms(appID string) int {
	n := 0
	for _, c := range e.confirms.Pending() {
		if c.AppID == appID {
			n++
		}
	}
	return n
}
