package lan

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/grandcat/zeroconf"
)

// Discovery bounds.
const (
	DefaultDiscoverTimeout = 3 * time.Second
	MaxDiscoverTimeout     = 10 * time.Second
	DefaultDiscoverMax     = 16
	MaxDiscoverMax         = 64
)

// hueService is the DNS-SD service type Hue bridges announce (BSB002 and
// later; the round BSB001 announces none).
const hueService = "_hue._tcp"

// DiscoverConfig bounds one discovery. The zero value is ready to use.
type DiscoverConfig struct {
	// Timeout is how long to listen for answers: zero means
	// DefaultDiscoverTimeout; it is capped at MaxDiscoverTimeout.
	Timeout time.Duration

	// Max is the most bridges returned: zero means DefaultDiscoverMax; it is
	// capped at MaxDiscoverMax. Discovery stops listening once it has Max.
	Max int

	// Interfaces to browse on; nil means every interface that is up,
	// multicast-capable, not loopback and holds an IPv4 address. A listed
	// interface that is not all of these is skipped.
	Interfaces []net.Interface
}

// Discover browses the local network for Hue bridges (mDNS / DNS-SD,
// `_hue._tcp.local.`, over IPv4) and returns the bridges that answered
// before the timeout, ctx's end or the Max-th bridge, whichever comes
// first, in the order they answered. It sends queries only while it runs:
// nothing listens between calls.
//
// Answers are deduplicated by bridge id; two answers claiming one bridge id
// at different addresses become one entry that is not selectable
// (ReasonConflicting), since at most one of them is the bridge. A
// cancelled ctx ends the browse early and returns what was found, with a
// nil error. Errors: ErrNoInterface when no interface qualifies, or the
// mDNS library's failure to open its sockets or send its query.
//
// Discover asks again after 1 s, 3 s and 7 s while it runs (see
// firstRequery). It is safe for concurrent use.
func Discover(ctx context.Context, cfg DiscoverConfig) ([]Bridge, error) {
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultDiscoverTimeout
	}
	timeout = min(timeout, MaxDiscoverTimeout)
	limit := cfg.Max
	if limit <= 0 {
		limit = DefaultDiscoverMax
	}
	limit = min(limit, MaxDiscoverMax)

	ifaces := cfg.Interfaces
	if ifaces == nil {
		all, err := net.Interfaces()
		if err != nil {
			return nil, fmt.Errorf("list interfaces: %w", err)
		}
		ifaces = all
	}
	ifaces = eligible(ifaces)
	if len(ifaces) == 0 {
		return nil, ErrNoInterface
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	answers := make(chan answer)
	var wg sync.WaitGroup
	defer func() {
		// Every round's forwarder ends once the library has closed its
		// entries channel, which it does as it closes its sockets.
		cancel()
		wg.Wait()
	}()
	stop, err := browse(ctx, ifaces, answers, &wg)
	if err != nil {
		return nil, err
	}
	wait := firstRequery
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var c collector
	for c.len() < limit {
		select {
		case a := <-answers:
			c.add(bridgeFrom(a))
		case <-timer.C:
			// A new round opens its socket and asks before the old one
			// closes, so no answer falls between them. If it cannot
			// start, the old round keeps listening.
			if s, err := browse(ctx, ifaces, answers, &wg); err == nil {
				stop()
				stop = s
			}
			wait *= 2
			timer.Reset(wait)
		case <-ctx.Done():
			return c.bridges(), nil
		}
	}
	return c.bridges(), nil
}

// firstRequery is when Discover first asks again; the interval then
// doubles (1 s, 3 s, 7 s after the start), as RFC 6762 §5.2 wants.
// zeroconf v1.0.0 asks once and backs off two to six seconds before it
// asks again, and a responder that multicast its answer in the last second
// stays silent (§6: another client's browse just now is enough), so
// within a three-second browse one query can go unanswered. Each round is
// a fresh resolver: the library has no way to ask again.
const firstRequery = time.Second

// browse starts one round: a resolver on ifaces that sends a query and
// forwards what it hears to answers until ctx ends or stop is called. wg
// counts the round until the library has closed its entries channel.
func browse(ctx context.Context, ifaces []net.Interface, answers chan<- answer, wg *sync.WaitGroup) (stop func(), err error) {
	r, err := zeroconf.NewResolver(zeroconf.SelectIfaces(ifaces), zeroconf.SelectIPTraffic(zeroconf.IPv4))
	if err != nil {
		return nil, fmt.Errorf("mdns: %w", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	entries := make(chan *zeroconf.ServiceEntry)
	// Browse starts the library's goroutines; they end when rctx does,
	// and the library then closes entries. Until it is closed entries
	// must be drained, or the library's receive loop blocks on its send
	// and never sees rctx end.
	if err := r.Browse(rctx, hueService, "local.", entries); err != nil {
		cancel()
		for range entries {
		}
		return nil, fmt.Errorf("mdns: %w", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e := range entries {
			select {
			case answers <- entryAnswer(e):
			case <-rctx.Done(): // drain after stop or the end of Discover
			}
		}
	}()
	return cancel, nil
}

// entryAnswer copies what Discover reads from a library entry.
func entryAnswer(e *zeroconf.ServiceEntry) answer {
	a := answer{instance: e.Instance, port: e.Port, txt: e.Text}
	for _, ip := range e.AddrIPv4 {
		if v, ok := netip.AddrFromSlice(ip); ok {
			a.ipv4 = append(a.ipv4, v.Unmap())
		}
	}
	return a
}

// eligible keeps the interfaces a browse may use: up, multicast-capable,
// not loopback, with at least one IPv4 address (the browse is IPv4 only:
// a LAN row can collect nothing else).
func eligible(ifaces []net.Interface) []net.Interface {
	var out []net.Interface
	for _, ifi := range ifaces {
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagMulticast == 0 || ifi.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				out = append(out, ifi)
				break
			}
		}
	}
	return out
}

// collector gathers bridges in answer order, one per bridge id (and one
// per name and address for answers without a valid id).
type collector struct {
	list  []Bridge
	index map[string]int
}

func (c *collector) len() int { return len(c.list) }

func (c *collector) add(b Bridge) {
	if c.index == nil {
		c.index = make(map[string]int)
	}
	key := "id:" + b.BridgeID
	if b.BridgeID == "" {
		key = "anon:" + b.Name + "|" + b.Address
	}
	i, ok := c.index[key]
	if !ok {
		c.index[key] = len(c.list)
		c.list = append(c.list, b)
		return
	}
	if old := c.list[i]; b.BridgeID != "" && old.Address != b.Address {
		old.Selectable = false
		old.Reason = ReasonConflicting
		c.list[i] = old
	}
}

func (c *collector) bridges() []Bridge {
	if c.list == nil {
		return []Bridge{}
	}
	return c.list
}
