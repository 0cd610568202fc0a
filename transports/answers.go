package transports

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// AnswerWindow is the longest Answers keeps a vetted answer: a name is
// looked up afresh at least this often, so one that now points somewhere
// refused is refused from the first lookup after it. Browsers keep a host's
// answer about a minute; this is half that.
const AnswerWindow = 30 * time.Second

// MaxAnswers bounds how many host names Answers remembers. A new name
// beyond it takes the place of the name added longest ago.
const MaxAnswers = 1024

// TTLResolver is a Resolver that also reports how long its answer may be
// kept: the smallest TTL of the records it read. Answers keeps an answer
// for that long when it is shorter than AnswerWindow, and not at all when
// it is zero or negative. A plain Resolver's answer (net.Resolver reports
// no TTL) is kept for AnswerWindow.
type TTLResolver interface {
	Resolver
	LookupNetIPTTL(ctx context.Context, network, host string) ([]netip.Addr, time.Duration, error)
}

// Answers lets Public.Resolve reuse the vetted answer for a host name
// instead of asking the resolver on every request. It keeps only answers
// whose every address passed CheckAddr, each for at most AnswerWindow
// (less when the resolver reports a shorter TTL), at most MaxAnswers
// names; a refusal or a failed lookup is never kept, and it drops what was
// kept for the name. A reused answer is the very Resolved the lookup made,
// so the dial still goes to exactly the addresses that were checked and
// nowhere else. IP literals are never looked up, so never kept.
//
// The zero Answers is ready to use and safe for concurrent use. Give each
// Public its own: the answers are its resolver's.
type Answers struct {
	mu     sync.Mutex
	byName map[string]*answer
	// ring holds every name of byName once, in the order it was added;
	// next is the slot the next new name takes, evicting its occupant.
	ring []string
	next int
	// seq numbers the fresh lookups in the order they started: an entry
	// records the newest lookup that ended for its name, so one that
	// started earlier and ended later cannot overwrite a later refusal.
	seq uint64
}

// answer is what Answers holds for one name: the vetted Resolved and until
// when it may be reused, or (a zero until) nothing to reuse.
type answer struct {
	r     Resolved
	until time.Time
	seq   uint64
}

// lookup returns the kept answer for name if its time has not run out;
// else it returns false and the number the caller's fresh lookup starts
// as, to be handed to keep or drop.
func (c *Answers) lookup(name string, now time.Time) (Resolved, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.byName[name]; ok && now.Before(a.until) {
		return a.r, 0, true
	}
	c.seq++
	return Resolved{}, c.seq, false
}

// keep records r, vetted by the fresh lookup numbered seq that ended at
// now, for ttl (capped at AnswerWindow; nothing is kept when it is not
// positive).
func (c *Answers) keep(name string, seq uint64, r Resolved, now time.Time, ttl time.Duration) {
	if ttl <= 0 {
		c.drop(name, seq)
		return
	}
	c.set(name, answer{r: r, until: now.Add(min(ttl, AnswerWindow)), seq: seq})
}

// drop records that the fresh lookup numbered seq kept nothing for name:
// whatever an earlier lookup kept, or keeps when it ends after this one,
// is not reused.
func (c *Answers) drop(name string, seq uint64) {
	c.set(name, answer{seq: seq})
}

func (c *Answers) set(name string, a answer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.byName[name]; ok {
		if a.seq > cur.seq {
			*cur = a
		}
		return
	}
	if c.byName == nil {
		c.byName = make(map[string]*answer)
		c.ring = make([]string, MaxAnswers)
	}
	if old := c.ring[c.next]; old != "" {
		delete(c.byName, old)
	}
	c.ring[c.next] = name
	c.next = (c.next + 1) % len(c.ring)
	c.byName[name] = &a
}
