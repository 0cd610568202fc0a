package daemon

import (
	"context"
	"sync"
)

// HintType names a hint of the /v1/events stream (API.md).
type HintType string

const (
	HintConfirmPending    HintType = "confirm-pending"
	HintConnectionChanged HintType = "connection-changed"
	HintFlowUpdated       HintType = "flow-updated"
	HintHelperChanged     HintType = "helper-changed"
)

// A Hint is a doorbell, not a delivery (Part I R7): it carries references
// only — ids, an app and a slot — never content. A subscriber that misses
// one refetches; nothing can be injected through a hint.
type Hint struct {
	Type  HintType
	ID    string // confirm, flow or helper id
	AppID string
	Slot  string
}

// hintBuffer is each subscriber's queue. A subscriber that falls this far
// behind loses hints (each costs it one refetch), never blocks a writer.
const hintBuffer = 64

type hintBus struct {
	mu     sync.Mutex
	subs   map[chan Hint]struct{}
	closed bool
	done   chan struct{} // closed by close
}

func newHintBus() *hintBus {
	return &hintBus{subs: map[chan Hint]struct{}{}, done: make(chan struct{})}
}

func (b *hintBus) publish(h Hint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- h:
		default:
		}
	}
}

func (b *hintBus) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.done)
	for ch := range b.subs {
		close(ch)
		delete(b.subs, ch)
	}
}

// Hints subscribes to the hint stream until ctx is done or the daemon
// closes, when the channel is closed.
func (d *Daemon) Hints(ctx context.Context) <-chan Hint {
	ch := make(chan Hint, hintBuffer)
	b := d.hints
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		close(ch)
		return ch
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	// This goroutine lives until ctx is done or the bus closes.
	go func() {
		select {
		case <-ctx.Done():
		case <-b.done:
			return
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[ch]; ok {
			delete(b.subs, ch)
			close(ch)
		}
	}()
	return ch
}

// connectionChanged runs after every committed connection or credential
// write. It clears the credential cache, the app's "allow for this session"
// memory (ruling R10) and disarms a
// standing approval armed on the slot (its frozen scope described the row
// as it was), then rings the doorbell.
func (d *Daemon) connectionChanged(appID, slot string) {
	d.secretCache.forget()
	d.confirms.forgetApp(appID)
	d.standing.disarmSlot(appID, slot)
	d.hints.publish(Hint{Type: HintConnectionChanged, AppID: appID, Slot: slot})
}
