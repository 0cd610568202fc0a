package scrub

import (
	"slices"
	"strconv"
	"sync"

	"github.com/snug/snugd/daemon/internal/multimatch"
)

// Cache shares the compiled spellings of a value set (the candidates and
// the one-pass matcher) between the requests that inject the same values,
// so a request pays for neither unless its values are new: expanding the
// spellings is most of a small answer's scrub, and building the matcher
// about 2–3 ms of a 1 MiB one.
//
// An entry is keyed by the values themselves (sorted, length-prefixed),
// never by a connection or a version number, so it cannot go stale: a
// rotated credential is a different key, compiled on the first request
// that injects it, and two connections share an entry only when they
// inject exactly the same values, when the entries would be identical.
// Forget drops every entry; the daemon calls it after every connection
// and credential write, so a replaced value does not linger in memory
// longer than the credential cache holds it. The cache is bounded
// (maxCacheEntries; when full it starts over) and safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	entries map[string]*compiled
}

// maxCacheEntries bounds a Cache. A value set rendered per request (an
// HMAC over the request, a timestamped JWT) is a new key every time;
// starting over when full keeps such churn from growing the cache.
const maxCacheEntries = 256

// compiled is one value set's spellings and, built on first use, its
// matcher. It is immutable once built and shared read-only.
type compiled struct {
	cands []string
	once  sync.Once
	m     *multimatch.Matcher
}

func (c *compiled) matcher() *multimatch.Matcher {
	c.once.Do(func() { c.m = newMatcher(c.cands) })
	return c.m
}

func newMatcher(cands []string) *multimatch.Matcher {
	ps := make([][]byte, len(cands))
	for i, s := range cands {
		ps[i] = []byte(s)
	}
	return multimatch.New(ps)
}

// Forget drops every entry.
func (c *Cache) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
}

// Len reports how many value sets the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// lookup returns the compiled spellings of vals (unique, non-empty),
// compiling them on a miss.
func (c *Cache) lookup(vals []string) *compiled {
	// The key is built on the stack for the usual set (a few values):
	// a hit, every request but a value set's first, allocates nothing.
	var buf [256]byte
	var tmp [8]string
	key := appendCacheKey(buf[:0], tmp[:0], vals)
	c.mu.Lock()
	if e, ok := c.entries[string(key)]; ok {
		c.mu.Unlock()
		return e
	}
	c.mu.Unlock()
	e := &compiled{cands: spellings(vals)} // outside the lock: it can take a while
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.entries[string(key)]; ok {
		return prev // a concurrent miss won; share its matcher
	}
	if c.entries == nil || len(c.entries) >= maxCacheEntries {
		c.entries = make(map[string]*compiled)
	}
	c.entries[string(key)] = e
	return e
}

// cacheKey is vals in sorted order, each prefixed by its length, so no
// two sets share a key whatever bytes the values hold.
func cacheKey(vals []string) string { return string(appendCacheKey(nil, nil, vals)) }

// appendCacheKey appends cacheKey(vals) to dst, sorting a copy of vals
// in scratch's array when it has the room.
func appendCacheKey(dst []byte, scratch, vals []string) []byte {
	sorted := append(scratch[:0], vals...)
	slices.Sort(sorted)
	for _, v := range sorted {
		dst = strconv.AppendInt(dst, int64(len(v)), 10)
		dst = append(dst, ':')
		dst = append(dst, v...)
	}
	return dst
}
