package pairing

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hints"
)

// Pairing flows: the OAuth consent, the Hue link-button exchange
// and the QR device link each run as a Flow that a host (or snugd ctl)
// starts for one (app, slot) and then follows through GET /v1/flows/{id}
// and the flow-updated hint. A flow's state lives here, in memory: a flow
// is minutes long and a restart ends it (the host starts another). What a
// flow must persist — an OAuth flow's verifier in auth:_flow:<id> —
// its own kind writes to the store.

// A FlowKind names the pairing family a flow runs.
type FlowKind string

const (
	FlowOAuth      FlowKind = "oauth"       // authorization code with PKCE
	FlowLANPair    FlowKind = "lan-pair"    // the Hue link-button exchange
	FlowDeviceLink FlowKind = "device-link" // a helper's QR device link
)

// A FlowState is where a flow is. Each kind uses the states that fit it
// (API.md lists them per kind); FlowExpired and FlowFailed end every kind.
type FlowState string

const (
	FlowPending     FlowState = "pending"      // started, waiting for the person (OAuth consent)
	FlowVerifying   FlowState = "verifying"    // the verify probe runs (exchange)
	FlowPressButton FlowState = "press-button" // waiting for the bridge's link button (exchange)
	FlowQR          FlowState = "qr"           // a QR code is shown (device link)
	FlowConnected   FlowState = "connected"    // OAuth: tokens stored
	FlowPaired      FlowState = "paired"       // exchange: key and pin stored
	FlowLinked      FlowState = "linked"       // device link: token stored
	FlowDenied      FlowState = "denied"       // the person or provider said no
	FlowExpired     FlowState = "expired"      // its time ran out
	FlowFailed      FlowState = "failed"       // see Message
)

// ended reports whether s is a final state.
func (s FlowState) Ended() bool {
	switch s {
	case FlowConnected, FlowPaired, FlowLinked, FlowDenied, FlowExpired, FlowFailed:
		return true
	}
	return false
}

// A Flow is one pairing flow as a host sees it: references and fixed
// sentences only, never a credential, a code or a provider's text.
type Flow struct {
	ID     string
	Kind   FlowKind
	AppID  string
	Slot   string
	State  FlowState
	HostID string // the paired host that started it; "" for snugd ctl
	// Message is a fixed sentence saying why a flow failed, was denied or
	// what the person should do next; never derived from outside input.
	Message string
	// QR and QRExpiresAt are the device link's current code (state qr).
	QR          string
	QRExpiresAt time.Time
	// Deadline is when the person's part must be done (press-button).
	Deadline time.Time
	// Label names what was linked or paired, as the counterparty calls
	// itself (shown to the person; printed through ctl's visible filter).
	Label string
	// Fingerprint and PreviousFingerprint are a LAN pin's SHA-256 (hex),
	// the new one and, on a re-pin, the one it replaces.
	Fingerprint         string
	PreviousFingerprint string
	CreatedAt           time.Time
	UpdatedAt           time.Time
	ExpiresAt           time.Time
}

// Flow limits.
const (
	// maxFlows bounds the flows held at once, ended ones included until
	// they are swept.
	MaxFlows = 256
	// flowKeep is how long an ended flow stays readable, so a host that
	// polls a moment late still learns how it ended.
	FlowKeep = 10 * time.Minute
)

type flowSlot struct{ appID, slot string }

type liveFlow struct {
	Flow
	Cancel context.CancelFunc // ends the flow's work; nil once ended
}

// flowBook holds the flows. Its methods are safe for concurrent use.
type FlowBook struct {
	mu     sync.Mutex
	now    func() time.Time
	hints  *hints.Bus
	ByID   map[string]*liveFlow
	bySlot map[flowSlot]string // the one live flow per (app, slot)
	closed bool
}

func NewFlowBook(now func() time.Time, hints *hints.Bus) *FlowBook {
	return &FlowBook{now: now, hints: hints, ByID: map[string]*liveFlow{}, bySlot: map[flowSlot]string{}}
}

// start opens a flow of kind for (appID, slot), living until ttl from now,
// in state first. A live flow of the same (app, slot) is ended first
// (FlowFailed, "a newer flow replaced this one"): one flow per slot. The
// returned context ends when the flow ends, expires or the book closes; the
// flow's work runs under it.
func (b *FlowBook) Start(parent context.Context, kind FlowKind, appID, slot, hostID string, first FlowState, ttl time.Duration) (Flow, context.Context, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return Flow{}, nil, errcode.New(errcode.Internal, "snugd is shutting down")
	}
	now := b.now()
	b.sweepLocked(now)
	if id, ok := b.bySlot[flowSlot{appID, slot}]; ok {
		b.endLocked(b.ByID[id], FlowFailed, "a newer flow replaced this one", now)
	}
	if len(b.ByID) >= MaxFlows {
		return Flow{}, nil, errcode.New(errcode.RateLimited, "too many pairing flows are open; try again in a few minutes")
	}
	// The work's deadline is real time (a test's fixed clock must not end
	// it at once); what a host reads expires by the daemon's clock.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), ttl)
	f := &liveFlow{Flow: Flow{ID: newFlowID(), Kind: kind, AppID: appID, Slot: slot, HostID: hostID, State: first,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(ttl)}, Cancel: cancel}
	b.ByID[f.ID] = f
	b.bySlot[flowSlot{appID, slot}] = f.ID
	b.publishLocked(f)
	return f.Flow, ctx, nil
}

// update changes a live flow through fn and announces it. It reports
// false, changing nothing, when the flow has ended or is gone: a flow's
// work that outlived its flow writes nothing more.
func (b *FlowBook) Update(id string, fn func(*Flow)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.ByID[id]
	if !ok || f.Cancel == nil {
		return false
	}
	now := b.now()
	if !now.Before(f.ExpiresAt) {
		b.endLocked(f, FlowExpired, "the flow expired; start again", now)
		return false
	}
	id0, kind, app, slot, host, created, expires := f.ID, f.Kind, f.AppID, f.Slot, f.HostID, f.CreatedAt, f.ExpiresAt
	fn(&f.Flow)
	// fn changes the state and what it shows, never who the flow is for.
	f.ID, f.Kind, f.AppID, f.Slot, f.HostID, f.CreatedAt, f.ExpiresAt = id0, kind, app, slot, host, created, expires
	f.UpdatedAt = now
	if f.State.Ended() {
		f.Cancel()
		f.Cancel = nil
		b.releaseLocked(f)
	}
	b.publishLocked(f)
	return true
}

// end ends a live flow in state with msg; a no-op for an ended one.
func (b *FlowBook) end(id string, state FlowState, msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f, ok := b.ByID[id]; ok {
		b.endLocked(f, state, msg, b.now())
	}
}

// get returns a flow, expiring it first when its time is up.
func (b *FlowBook) Get(id string) (Flow, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.ByID[id]
	if !ok {
		return Flow{}, false
	}
	if now := b.now(); f.Cancel != nil && !now.Before(f.ExpiresAt) {
		b.endLocked(f, FlowExpired, "the flow expired; start again", now)
	}
	return f.Flow, true
}

// close ends every live flow (shutdown) and refuses new ones.
func (b *FlowBook) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	now := b.now()
	for _, f := range b.ByID {
		b.endLocked(f, FlowFailed, "snugd stopped; start again", now)
	}
}

func (b *FlowBook) endLocked(f *liveFlow, state FlowState, msg string, now time.Time) {
	if f == nil || f.Cancel == nil {
		return
	}
	f.Cancel()
	f.Cancel = nil
	f.State, f.Message, f.UpdatedAt = state, msg, now
	f.QR = "" // a code is never shown once the flow has ended
	b.releaseLocked(f)
	b.publishLocked(f)
}

func (b *FlowBook) releaseLocked(f *liveFlow) {
	k := flowSlot{f.AppID, f.Slot}
	if b.bySlot[k] == f.ID {
		delete(b.bySlot, k)
	}
}

// sweepLocked drops ended flows older than flowKeep and expires live ones
// past their time.
func (b *FlowBook) sweepLocked(now time.Time) {
	for id, f := range b.ByID {
		if f.Cancel != nil && !now.Before(f.ExpiresAt) {
			b.endLocked(f, FlowExpired, "the flow expired; start again", now)
		}
		if f.Cancel == nil && now.Sub(f.UpdatedAt) > FlowKeep {
			delete(b.ByID, id)
		}
	}
}

func (b *FlowBook) publishLocked(f *liveFlow) {
	if b.hints != nil {
		b.hints.Publish(hints.Hint{Type: hints.FlowUpdated, ID: f.ID, AppID: f.AppID, Slot: f.Slot})
	}
}

func newFlowID() string {
	var b [16]byte
	rand.Read(b[:])
	return "f_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// Flow returns the pairing flow with this id, or NOT_FOUND. A host sees
// only the flows of apps it may reach (daemon/grants): another host's flow
// answers exactly as an unknown id.
func (d *Service) Flow(ctx context.Context, id string) (Flow, error) {
	f, ok := d.flows.Get(id)
	if !ok || d.grants.CheckApp(ctx, f.AppID) != nil {
		return Flow{}, errcode.New(errcode.NotFound, "no such flow")
	}
	return f, nil
}

// Flows is the book of flows in progress.
func (d *Service) Flows() *FlowBook { return d.flows }
