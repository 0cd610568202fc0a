package hints

import (
	"context"
	"sync"
)

// Type names a hint of the /v1/events stream (API.md).
type Type string

const (
	ConfirmPending    Type = "confirm-pending"
	ConnectionChanged Type = "connection-changed"
	FlowUpdated       Type = "flow-updated"
	HelperChanged     Type = "helper-changed"
)

// A Hint is a doorbell, not a delivery: it carries references
// only — ids, an app and a slot — never content. A subscriber that misses
// one refetches; nothing can be injected through a hint.
type Hint struct {
	Type  Type
	ID    string // confirm, flow or helper id
	AppID string
	Slot  string
}

// hintBuffer is each subscriber's queue. A subscriber that falls this far
// behind loses hints (each costs it one refetch), never blocks a writer.
const hintBuffer = 64

// Bus is the hint stream: every part publishes to it, the API's event
// stream subscribes. Safe for concurrent use.
type Bus struct {
	mu     sync.Mutex
	subs   map[chan Hint]struct{}
	closed bool
	done   chan struct{} // closed by close
}

// NewBus returns an open bus.
func NewBus() *Bus {
	return &Bus{subs: map[chan Hint]struct{}{}, done: make(chan struct{})}
}

// Publish rings every subscriber; one whose queue is full misses h.
func (b *Bus) Publish(h Hint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- h:
		default:
		}
	}
}

// Close closes every subscription; later ones are closed at once.
func (b *Bus) Close() {
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

// Subscribe subscribes to every hint until ctx is done or the bus
// closes, when the channel is closed.
func (b *Bus) Subscribe(ctx context.Context) <-chan Hint {
	ch := make(chan Hint, hintBuffer)
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
