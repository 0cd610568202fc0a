package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snug/snugd/daemon/errcode"
)

// The confirm broker of gate 6 (§14, §16, ruling R10, DESIGN.md Executor).
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
// Withdrawal (issue 18): unpairing a host (WithdrawHost) and shutting down
// (Shutdown) deny, inside the call and before it returns, every confirm
// the host (or anyone) parked, and also every allow its waiting request
// has not yet taken: an allow counts only once the request takes it
// (claim), under the broker's lock, so an allow that raced the unpair can
// never carry the request past gate 6. A decision for a withdrawn confirm
// is a no-op answered CONFIRM_WITHDRAWN.

// Confirm is what the user is asked: the resolved host, the method, the
// full URL with the resolved host (no query credential: none is rendered
// before the confirm) and, for an app or chat-lane send, the slot and the
// body (what a standing approval decides on, §14 gate 6). On the wizard's
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
	// HostID is the paired host that forwarded the request (NetCall.HostID),
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
	// written (ruling R10). Never consulted by probes or standing approvals.
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
	maxParkedPerApp = 16
	maxParked       = 256
	// maxParkedBytes bounds what the parked confirms hold in total
	// (bodies and URLs): 256 of them at 256 KiB each would be 64 MiB
	// held on callers' behalf. Past it a new confirm is denied at once.
	maxParkedBytes = 16 << 20
)

// withdrawal says why a confirm was denied without the user: "" when it
// was not (the user, its timeout or its caller decided it).
type withdrawal string

const (
	withdrawnUnpaired withdrawal = "unpaired" // its host was unpaired
	withdrawnShutdown withdrawal = "shutdown" // snugd is shutting down
)

type confirmBroker struct {
	timeout time.Duration
	hints   *hintBus
	now     func() time.Time

	mu        sync.Mutex
	queue     []*parkedConfirm        // FIFO
	unclaimed map[*parkedConfirm]bool // allowed, not yet taken by their request
	decided   map[string]withdrawal   // decided ids → why, when withdrawn
	order     []string                // decided ids, oldest first
	session   map[sessionKey]struct{}
	gen       map[string]uint64 // per app: bumped by every connection write
	closed    bool
}

type sessionKey struct{ app, host, method string }

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

func newConfirmBroker(timeout time.Duration, hints *hintBus, now func() time.Time) *confirmBroker {
	return &confirmBroker{
		timeout:   timeout,
		hints:     hints,
		now:       now,
		unclaimed: map[*parkedConfirm]bool{},
		decided:   map[string]withdrawal{},
		session:   map[sessionKey]struct{}{},
		gen:       map[string]uint64{},
	}
}

// askResult is how ask ended.
type askResult int

const (
	askDenied   askResult = iota // the user denied, or a timeout or the caller did
	askAllowed                   // the user allowed, and the allow was taken
	askFull                      // denied without asking: the queue is at a bound
	askUnpaired                  // withdrawn: the host that sent the request was unpaired
	askShutdown                  // withdrawn, or never parked: snugd is shutting down
)

// testHookClaim, when set (only by tests, through export_test.go seams in
// the package's own tests), runs in ask after the decision arrived and
// before the request takes it: the one point where an unpair or a shutdown
// can land between an allow and gate 6's end. Nil in production.
var testHookClaim atomic.Pointer[func(Confirm)]

// ask parks c and waits for its decision: the user's, a timeout (deny),
// the caller going away (deny), its host's unpairing or the daemon's
// shutdown (withdrawn). A confirm beyond the queue's bounds is not parked
// at all (askFull). For a confirm that did not end askAllowed it also
// says who or what denied it (a Denied* note, for the journal).
func (b *confirmBroker) ask(ctx context.Context, c Confirm) (askResult, string) {
	c.ID = randomID(16)
	c.CreatedAt = b.now()
	c.ExpiresAt = c.CreatedAt.Add(b.timeout)
	p := &parkedConfirm{c: c, done: make(chan struct{})}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return askShutdown, DeniedByShutdown
	}
	if len(b.queue) >= maxParked || b.parkedBy(c.AppID) >= maxParkedPerApp || b.parkedBytes()+confirmBytes(c) > maxParkedBytes {
		b.mu.Unlock()
		return askFull, DeniedQueueFull
	}
	p.gen = b.gen[c.AppID]
	b.queue = append(b.queue, p)
	b.mu.Unlock()
	b.hints.publish(Hint{Type: HintConfirmPending, ID: c.ID})

	timer := time.NewTimer(b.timeout)
	defer timer.Stop()
	why := DeniedByTimeout
	select {
	case <-p.done:
	case <-ctx.Done():
		why = DeniedByCaller
	case <-timer.C:
	}
	b.resolveBy(p, false, RememberOnce, why) // a no-op if it was decided first
	if hook := testHookClaim.Load(); hook != nil {
		(*hook)(p.c)
	}
	return b.claim(p)
}

// claim takes p's decision for its request, with who or what denied it.
// An allow counts only here: one withdrawn between the decision and now
// is a denial.
func (b *confirmBroker) claim(p *parkedConfirm) (askResult, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.unclaimed, p)
	switch {
	case p.withdrawn == withdrawnUnpaired:
		return askUnpaired, p.withdrawn.deniedBy()
	case p.withdrawn == withdrawnShutdown:
		return askShutdown, p.withdrawn.deniedBy()
	case p.allow:
		return askAllowed, ""
	}
	return askDenied, p.by
}

// parkedBy counts appID's parked confirms. The caller holds b.mu.
func (b *confirmBroker) parkedBy(appID string) int {
	n := 0
	for _, q := range b.queue {
		if q.c.AppID == appID {
			n++
		}
	}
	return n
}

// parkedBytes sums what the parked confirms hold. The caller holds b.mu.
func (b *confirmBroker) parkedBytes() int {
	n := 0
	for _, q := range b.queue {
		n += confirmBytes(q.c)
	}
	return n
}

// confirmBytes is what one parked confirm holds of its caller's request.
func confirmBytes(c Confirm) int {
	return len(c.Body) + len(c.URL) + len(c.Host) + len(c.Method) + len(c.Slot)
}

// resolveBy decides p once; by says who or what decided a deny.
func (b *confirmBroker) resolveBy(p *parkedConfirm, allow bool, remember Remember, by string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.decideLocked(p, allow, remember, "", by) {
		close(p.done)
	}
}

// decideLocked decides p once (a later call is a no-op: deny after
// decide, decide after decide) and reports whether this call decided it;
// that caller, and only it, then closes p.done to wake p's request. The
// caller holds b.mu.
func (b *confirmBroker) decideLocked(p *parkedConfirm, allow bool, remember Remember, why withdrawal, by string) bool {
	if p.decided {
		return false
	}
	p.decided, p.allow, p.withdrawn = true, allow, why
	if !allow {
		p.by = by
	}
	for i, q := range b.queue {
		if q == p { // reference identity
			b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
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
		k := sessionKey{p.c.AppID, p.c.Host, p.c.Method}
		if _, had := b.session[k]; !had && remember == RememberSession && !p.c.Probe && b.gen[p.c.AppID] == p.gen {
			// Remembered only if no connection write of the app happened
			// since the confirm was shown.
			b.session[k] = struct{}{}
			p.remembered = true
		}
	}
	return true
}

// withdrawLocked denies p for why: parked, it is decided now; allowed but
// not yet taken by its request, the allow is void, and so is the session
// memory it added. The caller holds b.mu.
func (b *confirmBroker) withdrawLocked(p *parkedConfirm, why withdrawal) {
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
			delete(b.session, sessionKey{p.c.AppID, p.c.Host, p.c.Method})
		}
	}
}

// sessionAllows reports whether "allow for this session" covers (app,
// host, method), keyed exactly.
func (b *confirmBroker) sessionAllows(app, host, method string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.session[sessionKey{app, host, method}]
	return ok
}

// forgetApp clears appID's session memory; it runs after every committed
// write to the app's connections (ruling R10).
func (b *confirmBroker) forgetApp(appID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen[appID]++
	for k := range b.session {
		if k.app == appID {
			delete(b.session, k)
		}
	}
}

// WithdrawHost denies every confirm host id parked, and every allow its
// requests have not yet taken, before it returns (issue 18). It is the
// unpairing's half of the broker: DeleteHost calls it. It reports how
// many it withdrew.
func (b *confirmBroker) WithdrawHost(id string) int {
	if id == "" {
		return 0 // the ctl channel is no paired host
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, p := range append([]*parkedConfirm(nil), b.queue...) {
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
func (b *confirmBroker) Shutdown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, p := range append([]*parkedConfirm(nil), b.queue...) {
		b.withdrawLocked(p, withdrawnShutdown)
	}
	for p := range b.unclaimed {
		b.withdrawLocked(p, withdrawnShutdown)
	}
}

// Pending returns the pending confirms, oldest first (FIFO).
func (b *confirmBroker) Pending() []Confirm {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Confirm, len(b.queue))
	for i, p := range b.queue {
		out[i] = p.c
	}
	return out
}

// ConfirmByID returns the pending confirm id.
func (b *confirmBroker) ConfirmByID(id string) (Confirm, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.queue {
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
func (b *confirmBroker) DecideConfirm(id string, allow bool, remember Remember, decided func(Confirm)) error {
	b.mu.Lock()
	for _, p := range b.queue {
		if p.c.ID == id {
			b.decideLocked(p, allow, remember, "", DeniedByUser) // parked: this call decides it
			b.mu.Unlock()
			if decided != nil {
				decided(p.c)
			}
			close(p.done)
			return nil
		}
	}
	defer b.mu.Unlock()
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

// Confirms returns the pending confirms, oldest first (FIFO).
func (d *Daemon) Confirms() []Confirm { return d.confirms.Pending() }

// ConfirmByID returns the pending confirm id (the broker's).
func (d *Daemon) ConfirmByID(id string) (Confirm, bool) { return d.confirms.ConfirmByID(id) }

// DecideConfirm records the user's decision on confirm id (the broker's).
// The decision is journaled as an act by the administrator;
// DecideConfirmBy names the deciding host.
func (d *Daemon) DecideConfirm(id string, allow bool, remember Remember) error {
	return d.DecideConfirmBy(context.Background(), id, allow, remember)
}

// DecideConfirmBy is DecideConfirm by ctx's caller (a paired host or the
// ctl channel), whom the journal's act names.
func (d *Daemon) DecideConfirmBy(ctx context.Context, id string, allow bool, remember Remember) error {
	return d.confirms.DecideConfirm(id, allow, remember, func(c Confirm) {
		act := actConfirmDeny
		if allow {
			act = actConfirmAllow
		}
		note := c.Method + " " + c.Host + ", once"
		if remember == RememberSession {
			note = c.Method + " " + c.Host + ", for the session"
		}
		d.journalAct(ctx, act, c.AppID, c.Slot, note)
	})
}
