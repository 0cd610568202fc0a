package oauth_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snug/snugd/daemon/oauth"
)

// conformance: P3-C13-23
func TestNeedsRefresh(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		left time.Duration
		want bool
	}{
		{-time.Second, true}, {0, true}, {59 * time.Second, true}, {60 * time.Second, true},
		{61 * time.Second, false}, {15 * time.Minute, false},
	} {
		if got := oauth.NeedsRefresh(now.Add(tc.left), now); got != tc.want {
			t.Errorf("NeedsRefresh(expiring in %v) = %t, want %t", tc.left, got, tc.want)
		}
	}
	if oauth.NeedsRefresh(time.Time{}, now) {
		t.Error("NeedsRefresh(no expiry) = true, want false")
	}
}

// TestRefresherSharesFailure: while one refresh is in flight, every
// caller for the key waits for it and gets its failure; a caller for
// another key is not held; a waiter whose ctx ends leaves alone.
func TestRefresherSharesFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r oauth.Refresher
		stale := oauth.Token{AccessToken: "old", ExpiresIn: time.Minute, ObtainedAt: time.Now().Add(-30 * time.Second)}
		load := func(context.Context) (oauth.Token, error) { return stale, nil }
		release := make(chan struct{})
		var calls atomic.Int64
		boom := errors.New("refresh failed")
		refresh := func(ctx context.Context, _ oauth.Token) (oauth.Token, error) {
			calls.Add(1)
			<-release
			return oauth.Token{}, boom
		}
		key := oauth.Key{AppID: "a", Slot: "s"}
		const n = 32
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { _, errs[i] = r.Fresh(t.Context(), key, load, refresh) })
		}
		// A caller that gives up.
		quit, cancel := context.WithCancel(t.Context())
		var quitErr error
		wg.Go(func() { _, quitErr = r.Fresh(quit, key, load, refresh) })
		synctest.Wait()
		if c := calls.Load(); c != 1 {
			t.Fatalf("refresh calls = %d with %d waiting, want 1", c, n)
		}
		cancel()
		synctest.Wait()
		if !errors.Is(quitErr, context.Canceled) {
			t.Fatalf("a cancelled waiter got %v, want context.Canceled", quitErr)
		}
		// The flight survives the cancelled waiter.
		close(release)
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, boom) {
				t.Fatalf("caller %d got %v, want the shared failure", i, err)
			}
		}
		// The next call starts a new flight.
		fresh := oauth.Token{AccessToken: "new", ExpiresIn: time.Hour, ObtainedAt: time.Now()}
		got, err := r.Fresh(t.Context(), key, load, func(context.Context, oauth.Token) (oauth.Token, error) {
			calls.Add(1)
			return fresh, nil
		})
		if err != nil || got.AccessToken != "new" || calls.Load() != 2 {
			t.Fatalf("Fresh after the failure = %v, %v (calls %d)", got.AccessToken, err, calls.Load())
		}
	})
}

// TestRefresherRechecksInsideTheFlight: a caller that read the stale token
// before another's refresh stored the new one posts nothing (a rotated
// refresh token is never redeemed twice).
func TestRefresherRechecksInsideTheFlight(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	cur := oauth.Token{AccessToken: "old", ExpiresIn: time.Minute, ObtainedAt: now.Add(-30 * time.Second)}
	reads := 0
	load := func(context.Context) (oauth.Token, error) {
		mu.Lock()
		defer mu.Unlock()
		reads++
		t := cur
		if reads == 1 {
			// Between this caller's first read and its flight, another
			// flight stores a fresh token.
			cur = oauth.Token{AccessToken: "new", ExpiresIn: time.Hour, ObtainedAt: now}
		}
		return t, nil
	}
	var r oauth.Refresher
	got, err := r.Fresh(t.Context(), oauth.Key{}, load, func(context.Context, oauth.Token) (oauth.Token, error) {
		t.Fatal("refresh ran although the stored token was fresh")
		return oauth.Token{}, nil
	})
	if err != nil || got.AccessToken != "new" {
		t.Fatalf("Fresh = %q, %v; want the stored fresh token", got.AccessToken, err)
	}
	// A fresh token needs no flight at all.
	if got, _ := r.Fresh(t.Context(), oauth.Key{}, load, nil); got.AccessToken != "new" {
		t.Fatalf("Fresh(fresh) = %q", got.AccessToken)
	}
}

// TestRefresherObtainsAMissingToken: a client-credentials row has no token
// before its first use; Fresh obtains one (issue 17: "fetched at first use").
func TestRefresherObtainsAMissingToken(t *testing.T) {
	var r oauth.Refresher
	calls := 0
	got, err := r.Fresh(t.Context(), oauth.Key{}, func(context.Context) (oauth.Token, error) { return oauth.Token{}, nil },
		func(context.Context, oauth.Token) (oauth.Token, error) {
			calls++
			return oauth.Token{AccessToken: "first"}, nil
		})
	if err != nil || got.AccessToken != "first" || calls != 1 {
		t.Fatalf("Fresh(no token) = %q, %v after %d calls; want one fetch", got.AccessToken, err, calls)
	}
}
