package api

import (
	"sync"
	"time"
)

// limiter is a token bucket per key: burst attempts at once, one more
// every period. Failed authentications (per origin and per token; wrong
// verifiers and wrong pairing invitations among them) and pairing
// requests (per origin, or per host name for a desktop request) each
// have one. Every caller's address is 127.0.0.1, so the address is no
// key, and no bucket can tell one local process from another: what must
// never be locked out (a valid token, the right verifier, an
// administrator's invitation) is checked before any bucket is read.
//
// Safe for concurrent use.
type limiter struct {
	mu      sync.Mutex
	now     func() time.Time
	burst   float64
	period  time.Duration
	maxKeys int
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// Limits.
const (
	// authBurst failed authentications per key, then one per authPeriod.
	authBurst  = 10
	authPeriod = 6 * time.Second
	// pairBurst pairing requests per origin, then one per pairPeriod.
	pairBurst  = 5
	pairPeriod = 2 * time.Minute
	// limiterKeys bounds the keys a limiter tracks; when full, buckets
	// that have refilled are forgotten first.
	limiterKeys = 4096
)

func newLimiter(now func() time.Time, burst int, period time.Duration) *limiter {
	return &limiter{now: now, burst: float64(burst), period: period, maxKeys: limiterKeys, buckets: map[string]*bucket{}}
}

// level returns key's bucket refilled to now; nil when untracked (full).
func (l *limiter) level(key string, now time.Time) *bucket {
	b := l.buckets[key]
	if b == nil {
		return nil
	}
	b.tokens += float64(now.Sub(b.at)) / float64(l.period)
	if b.tokens > l.burst {
		b.tokens = l.burst
	}
	b.at = now
	return b
}

// blocked returns how long until every key has an attempt left; 0 when
// they all have one now.
func (l *limiter) blocked(keys []string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waitLocked(keys, l.now())
}

func (l *limiter) waitLocked(keys []string, now time.Time) time.Duration {
	var wait time.Duration
	for _, k := range keys {
		if b := l.level(k, now); b != nil && b.tokens < 1 {
			wait = max(wait, time.Duration((1-b.tokens)*float64(l.period)))
		}
	}
	return wait
}

// fail spends one attempt of every key.
func (l *limiter) fail(keys []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.spendLocked(keys, l.now())
}

// take spends one attempt of every key when each has one and returns 0;
// otherwise it spends nothing and returns how long to wait.
func (l *limiter) take(keys []string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if wait := l.waitLocked(keys, now); wait > 0 {
		return wait
	}
	l.spendLocked(keys, now)
	return 0
}

func (l *limiter) spendLocked(keys []string, now time.Time) {
	for _, k := range keys {
		b := l.level(k, now)
		if b == nil {
			if len(l.buckets) >= l.maxKeys {
				l.sweepLocked(now)
			}
			if len(l.buckets) >= l.maxKeys {
				continue // untracked: the request's other keys still count it
			}
			b = &bucket{tokens: l.burst, at: now}
			l.buckets[k] = b
		}
		b.tokens = max(b.tokens-1, 0)
	}
}

// sweepLocked forgets buckets that have refilled: they hold nothing a
// fresh bucket would not.
func (l *limiter) sweepLocked(now time.Time) {
	for k := range l.buckets {
		if b := l.level(k, now); b.tokens >= l.burst {
			delete(l.buckets, k)
		}
	}
}
