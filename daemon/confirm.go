package daemon

import (
	"context"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/errcode"
)

// The confirm broker of gate 6 (§14, §16, ruling R10, DESIGN.md Executor).
// A mutating request parks a Confirm here and waits for the user; a host
// lists the queue (FIFO), shows a confirm to the user and posts the
// decision. The broker is the only approval seat: an inline card in a chat
// surface is presentation, and only DecideConfirm with the confirm's
// unguessable id resolves it.
//
// Each parked confirm has its own resolver, so a second confirm never
// orphans the first. A request whose caller goes away denies its own
// parked confirm, found by reference identity, never by a key two
// requests could share. A confirm is decided once: a later decision,
// a timeout or a caller going away after that is a no-op.

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

type confirmBroker struct {
	timeout time.Duration
	hints   *hintBus
	now     func() time.Time

	mu      sync.Mutex
	queue   []*parkedConfirm // FIFO
	decided map[string]struct{}
	order   []string // decided ids, oldest first
	session map[sessionKey]struct{}
	gen     map[string]uint64 // per app: bumped by every connection write
	closed  bool
}

type sessionKey struct{ app, host, method string }

type parkedConfirm struct {
	c       Confirm
	gen     uint64
	done    chan bool // receives the one decision
	decided bool
}

func newConfirmBroker(timeout time.Duration, hints *hintBus, now func() time.Time) *confirmBroker {
	return &confirmBroker{
		timeout: timeout,
		hints:   hints,
		now:     now,
		decided: map[string]struct{}{},
		session: map[sessionKey]struct{}{},
		gen:     map[string]uint64{},
	}
}

// askResult is how ask ended.
type askResult int

const (
	askDenied  askResult = iota // the user denied, or a timeout, the caller or the daemon did
	askAllowed                  // the user allowed
	askFull                     // denied without asking: the queue is at a bound, or closed
)

// ask parks c and waits for its decision: the user's, a timeout (deny),
// the caller going away (deny) or the daemon closing (deny). A confirm
// beyond the queue's bounds is not parked at all (askFull).
func (b *confirmBroker) ask(ctx context.Context, c Confirm) askResult {
	c.ID = randomID(16)
	c.CreatedAt = b.now()
	c.ExpiresAt = c.CreatedAt.Add(b.timeout)
	p := &parkedConfirm{c: c, done: make(chan bool, 1)}
	b.mu.Lock()
	if b.closed || len(b.queue) >= maxParked || b.parkedBy(c.AppID) >= maxParkedPerApp || b.parkedBytes()+confirmBytes(c) > maxParkedBytes {
		b.mu.Unlock()
		return askFull
	}
	p.gen = b.gen[c.AppID]
	b.queue = append(b.queue, p)
	b.mu.Unlock()
	b.hints.publish(Hint{Type: HintConfirmPending, ID: c.ID})

	timer := time.NewTimer(b.timeout)
	defer timer.Stop()
	select {
	case allow := <-p.done:
		return answer(allow)
	case <-ctx.Done():
	case <-timer.C:
	}
	b.resolve(p, false, RememberOnce) // a no-op if the user decided first
	return answer(<-p.done)
}

func answer(allow bool) askResult {
	if allow {
		return askAllowed
	}
	return askDenied
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

// resolve decides p once. It is the only writer of p.done.
func (b *confirmBroker) resolve(p *parkedConfirm, allow bool, remember Remember) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.decided {
		return // deny-after-decide, decide-after-decide: no-op
	}
	p.decided = true
	for i, q := range b.queue {
		if q == p { // reference identity
			b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
			break
		}
	}
	b.decided[p.c.ID] = struct{}{}
	b.order = append(b.order, p.c.ID)
	if len(b.order) > decidedKeep {
		delete(b.decided, b.order[0])
		b.order = b.order[1:]
	}
	if allow && remember == RememberSession && !p.c.Probe && b.gen[p.c.AppID] == p.gen {
		// Remembered only if no connection write of the app happened
		// since the confirm was shown.
		b.session[sessionKey{p.c.AppID, p.c.Host, p.c.Method}] = struct{}{}
	}
	p.done <- allow
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

// close denies every parked confirm; later asks are denied at once.
func (b *confirmBroker) close() {
	b.mu.Lock()
	b.closed = true
	parked := append([]*parkedConfirm(nil), b.queue...)
	b.mu.Unlock()
	for _, p := range parked {
		b.resolve(p, false, RememberOnce)
	}
}

func (b *confirmBroker) pending() []Confirm {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Confirm, len(b.queue))
	for i, p := range b.queue {
		out[i] = p.c
	}
	return out
}

// Confirms returns the pending confirms, oldest first (FIFO).
func (d *Daemon) Confirms() []Confirm { return d.confirms.pending() }

// ConfirmByID returns the pending confirm id.
func (d *Daemon) ConfirmByID(id string) (Confirm, bool) {
	b := d.confirms
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
// returns nil.
func (d *Daemon) DecideConfirm(id string, allow bool, remember Remember) error {
	b := d.confirms
	b.mu.Lock()
	var p *parkedConfirm
	for _, q := range b.queue {
		if q.c.ID == id {
			p = q
			break
		}
	}
	_, done := b.decided[id]
	b.mu.Unlock()
	switch {
	case p != nil:
		b.resolve(p, allow, remember)
		return nil
	case done:
		return nil
	}
	return errcode.New(errcode.NotFound, "no such confirm")
}
