package oauth

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Skew is how long before its expiry an access token is refreshed
// ("inside a 60-second expiry skew"). Wide enough that a token does not
// expire in flight, narrow enough that a token is not refreshed on every
// call (Nango's 15 minutes) or burned early.
const Skew = 60 * time.Second

// NeedsRefresh reports whether a token expiring at expiry must be
// refreshed before a request sent at now: it expires within Skew (59 s
// left: yes; 61 s: no). A zero expiry (the server gave no expires_in) never
// needs one; such a token is used until the provider refuses it.
//
// conformance: P3-C13-23
func NeedsRefresh(expiry, now time.Time) bool {
	return !expiry.IsZero() && expiry.Sub(now) <= Skew
}

// Key names what a refresh is shared for: one connection slot.
type Key struct {
	AppID, Slot string
}

// Refresher runs at most one refresh per Key at a time and hands its
// result — token or failure — to every caller that asked meanwhile
// (single flight). The zero Refresher is ready to use; it is safe for
// concurrent use and must not be copied after first use.
type Refresher struct {
	// Now is the clock NeedsRefresh is asked with (nil: time.Now).
	Now func() time.Time

	mu     sync.Mutex
	flight map[Key]*call
}

type call struct {
	done chan struct{}
	tok  Token
	err  error
}

// Fresh returns a token for key that does not need a refresh. load reads
// the stored token (the zero Token when there is none); when there is none
// or it expires within Skew, refresh obtains a new one — Client.Refresh
// for an authorization-code row, Client.ClientCredentials for a
// client-credentials row — and stores it (rotated refresh token and access
// token in one write) before returning it. Concurrent callers for one key share one refresh: the
// first runs it, the others wait for its result, errors included.
//
// Inside the shared call load runs again before refresh, so a caller that
// read the old token just before another's refresh finished finds the new
// one and posts nothing: a rotated refresh token is never redeemed twice.
//
// The shared refresh runs under a context detached from the callers'
// cancellation (one caller giving up must not fail the others); refresh
// bounds its own time (Client does). A caller whose ctx ends stops
// waiting and gets ctx.Err().
func (r *Refresher) Fresh(ctx context.Context, key Key, load func(context.Context) (Token, error), refresh func(context.Context, Token) (Token, error)) (Token, error) {
	t, err := load(ctx)
	if err != nil {
		return Token{}, err
	}
	if !r.needs(t) {
		return t, nil
	}
	r.mu.Lock()
	c, ok := r.flight[key]
	if !ok {
		c = &call{done: make(chan struct{})}
		if r.flight == nil {
			r.flight = map[Key]*call{}
		}
		r.flight[key] = c
		// The goroutine ends when refresh returns; refresh is bounded.
		go r.run(context.WithoutCancel(ctx), key, c, load, refresh)
	}
	r.mu.Unlock()
	select {
	case <-c.done:
		return c.tok.clone(), c.err
	case <-ctx.Done():
		return Token{}, ctx.Err()
	}
}

func (r *Refresher) run(ctx context.Context, key Key, c *call, load func(context.Context) (Token, error), refresh func(context.Context, Token) (Token, error)) {
	defer func() {
		r.mu.Lock()
		delete(r.flight, key)
		r.mu.Unlock()
		close(c.done)
	}()
	t, err := load(ctx)
	if err == nil && r.needs(t) {
		t, err = refresh(ctx, t)
	}
	c.tok, c.err = t, err
}

// needs reports whether t must be (re)obtained: there is no access token
// yet (a client-credentials row before its first use), or it expires
// within Skew.
func (r *Refresher) needs(t Token) bool {
	return t.AccessToken == "" || NeedsRefresh(t.Expiry(), r.now())
}

func (r *Refresher) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// clone gives each waiter its own scope slices.
func (t Token) clone() Token {
	t.Scopes = slices.Clone(t.Scopes)
	t.Wider = slices.Clone(t.Wider)
	return t
}
