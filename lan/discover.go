package lan

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grandcat/zeroconf"
	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
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

	// Max is how many devices' entries are listed: zero means
	// DefaultDiscoverMax; it is capped at MaxDiscoverMax. It counts
	// distinct devices (answering addresses) with at least one answer
	// that could be selected, in the order they answered; a device whose
	// answers cannot be (no valid bridge id, no RFC-1918 address, another
	// port) does not count, however much it sends. Devices past Max are
	// still heard until the timeout, and their claims still mark
	// conflicts among the listed entries.
	Max int

	// Interfaces to browse on; nil means every interface that is up,
	// multicast-capable, not loopback and holds an IPv4 address. A listed
	// interface that is not all of these is skipped.
	Interfaces []net.Interface
}

// Bounds on what one browse keeps. Every answer is attacker-chosen, so
// memory is bounded whatever arrives; past a bound that could leave
// another device's entry out, the result says so (Discovery.Truncated).
const (
	maxDevices        = 256 // addresses announcing a Hue service tracked
	maxPerDevice      = 8   // service instances kept per answering address
	maxHostsPerDevice = 16  // host names whose A records are kept per address
	maxAddrsPerHost   = 4   // A records kept per host name
	maxShownConflicts = 8   // addresses a conflict's reason names
)

// Discovery is what one browse heard.
type Discovery struct {
	// Bridges are the entries, in the order they first answered.
	Bridges []Bridge

	// LimitReached reports that more devices than DiscoverConfig.Max
	// sent answers that could be selected: the entries of those after
	// the Max-th are not listed (their claims still mark conflicts).
	LimitReached bool

	// Truncated reports that answers were heard and not listed: a device
	// announced more than 8 services, more than 256 addresses announced
	// one, or more answers that cannot be selected arrived than Max. Entries that
	// could be selected are always listed.
	Truncated bool
}

// Browse browses the local network for Hue bridges (mDNS / DNS-SD,
// `_hue._tcp.local.`, over IPv4) until the timeout or ctx's end, whichever
// comes first: a burst of answers does not end it, so an answer that
// contradicts an early one is still heard. It listens only while it runs:
// nothing listens between calls, and it never answers anyone.
//
// Every mDNS response that reaches the browsed interfaces during the
// browse is read, from every source address: zeroconf sends the queries,
// and a listener of Browse's own on the mDNS group and port hears every
// answer (the library keeps the first answer per instance name and drops
// the rest, and drops a whole message when one record in it does not
// parse). Records are read one by one (parseResponse), and records from
// one address are combined only with records from that address.
//
// There is one entry per bridge id (or, without a valid id, per instance
// name) and device address: the address it announced, else the address
// it answered from. When one bridge id or one instance name is claimed at
// two or more addresses, every such entry is not selectable, its Reason
// names the addresses and Conflicts lists them: at most one of them is the
// bridge, and which one answered first says nothing. A cancelled ctx ends
// the browse early and returns what was heard, with a nil error.
//
// Errors: ErrNoInterface when no interface qualifies, or a failure to open
// the listener or the library's sockets or to send its query. Browse asks
// again after 1 s, 3 s and 7 s while it runs (see firstRequery). Every
// socket it opens is opened on the calling goroutine, so a caller that
// pins its thread to a network namespace browses there. It is safe for
// concurrent use, though two browses at once each hear the other's
// answers.
func Browse(ctx context.Context, cfg DiscoverConfig) (Discovery, error) {
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
			return Discovery{}, fmt.Errorf("list interfaces: %w", err)
		}
		ifaces = all
	}
	ifaces = eligible(ifaces)
	if len(ifaces) == 0 {
		return Discovery{}, ErrNoInterface
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	// The listener opens before the first query, so no answer can arrive
	// before it hears.
	l, err := listen(ifaces)
	if err != nil {
		cancel()
		return Discovery{}, err
	}
	packets := make(chan packet)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ends when the listener's socket closes, below
		defer wg.Done()
		l.run(ctx, packets)
	}()
	defer func() {
		// Every query round's drain ends once the library has closed its
		// entries channel, which it does as it closes its sockets; the
		// listener's loop ends when its socket closes.
		cancel()
		l.close()
		wg.Wait()
	}()
	stop, err := query(ctx, ifaces, &wg)
	if err != nil {
		return Discovery{}, err
	}
	wait := firstRequery
	timer := time.NewTimer(wait)
	defer timer.Stop()
	c := newCollector(limit)
	for {
		select {
		case p := <-packets:
			c.add(p.src, p.data)
		case <-timer.C:
			// A new round opens its socket and asks before the old one
			// closes. If it cannot start, the old round's query stands.
			if s, err := query(ctx, ifaces, &wg); err == nil {
				stop()
				stop = s
			}
			wait *= 2
			timer.Reset(wait)
		case <-ctx.Done():
			return c.result(), nil
		}
	}
}

// firstRequery is when Browse first asks again; the interval then
// doubles (1 s, 3 s, 7 s after the start), as RFC 6762 §5.2 wants.
// zeroconf v1.0.0 asks once and backs off two to six seconds before it
// asks again, and a responder that multicast its answer in the last second
// stays silent (RFC 6762 §6: another client's browse just now is enough), so
// within a three-second browse one query can go unanswered. Each round is
// a fresh resolver: the library has no way to ask again.
const firstRequery = time.Second

// query starts one round: a zeroconf resolver on ifaces that sends the
// browse's query until ctx ends or stop is called. What the library
// decodes itself is drained and dropped: the listener hears every answer
// it would, and the ones it drops. wg counts the round until the library
// has closed its entries channel.
func query(ctx context.Context, ifaces []net.Interface, wg *sync.WaitGroup) (stop func(), err error) {
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
		for range entries {
		}
	}()
	return cancel, nil
}

// packet is one datagram the listener accepted.
type packet struct {
	src  netip.Addr
	data []byte
}

// listener hears the mDNS group on the browsed interfaces for one browse.
type listener struct {
	pc     *ipv4.PacketConn
	ifaces map[int]bool // the interfaces it joined the group on
}

// listen opens the browse's listener: a UDP socket bound to
// 224.0.0.251:5353 that joins the group on each of ifaces. The standard
// library sets SO_REUSEADDR on a socket bound to a multicast address, so
// it shares the port with zeroconf's socket and any system responder's
// (avahi, mDNSResponder), and Linux and the BSDs hand each group datagram
// to every such socket. It never sends.
func listen(ifaces []net.Interface) (*listener, error) {
	c, err := net.ListenPacket("udp4", netip.AddrPortFrom(mdnsGroup, mdnsPort).String())
	if err != nil {
		return nil, fmt.Errorf("mdns listen: %w", err)
	}
	pc := ipv4.NewPacketConn(c)
	if err := pc.SetControlMessage(ipv4.FlagInterface, true); err != nil {
		pc.Close()
		return nil, fmt.Errorf("mdns listen: %w", err)
	}
	l := &listener{pc: pc, ifaces: make(map[int]bool)}
	group := &net.UDPAddr{IP: net.IP(mdnsGroup.AsSlice())}
	for i := range ifaces {
		if pc.JoinGroup(&ifaces[i], group) == nil {
			l.ifaces[ifaces[i].Index] = true
		}
	}
	if len(l.ifaces) == 0 {
		pc.Close()
		return nil, fmt.Errorf("mdns listen: could not join %s on any interface", mdnsGroup)
	}
	return l, nil
}

// run reads datagrams until the socket closes and forwards each one that
// arrived on a joined interface from an IPv4 source port 5353 (RFC 6762
// §6: a response from any other port is ignored); ctx's end stops the
// forwarding.
func (l *listener) run(ctx context.Context, out chan<- packet) {
	buf := make([]byte, maxPacket+1)
	for {
		n, cm, src, err := l.pc.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		ua, ok := src.(*net.UDPAddr)
		if !ok || n > maxPacket || cm == nil || !l.ifaces[cm.IfIndex] {
			continue
		}
		ap := ua.AddrPort()
		addr := ap.Addr().Unmap()
		if ap.Port() != mdnsPort || !addr.Is4() {
			continue
		}
		select {
		case out <- packet{src: addr, data: bytes.Clone(buf[:n])}:
		case <-ctx.Done():
			return
		}
	}
}

func (l *listener) close() { l.pc.Close() }

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

// collector gathers what one browse heard, per answering address.
type collector struct {
	limit      int
	devices    map[netip.Addr]*device
	seq        int // order of first hearing, across devices
	selectable int // devices with an answer that could be selected
	truncated  bool
}

// device is what one source address said. Its records are combined only
// with each other: another address cannot complete or change them.
type device struct {
	addr      netip.Addr
	instances map[string]*instance // by lowercase instance label
	hosts     map[string][]netip.Addr
	rank      int // 1 for the first device with an answer that could be selected, …; 0 for none yet
}

// instance is one service instance a device announced.
type instance struct {
	seq    int
	label  string // presentation form
	port   int
	target string // SRV target, lowercase
	txt    []string
}

func newCollector(limit int) *collector {
	return &collector{limit: limit, devices: make(map[netip.Addr]*device)}
}

// add reads one datagram from src: its Hue service records first, then
// its A records. Records with TTL 0 (a goodbye, RFC 6762 §10.1) are not
// answers and are ignored.
func (c *collector) add(src netip.Addr, msg []byte) {
	rrs, ok := parseResponse(msg)
	if !ok {
		return
	}
	var d *device
	dev := func() *device {
		if d == nil {
			if d = c.devices[src]; d == nil {
				if len(c.devices) >= maxDevices {
					c.truncated = true
					return nil
				}
				d = &device{addr: src, instances: make(map[string]*instance), hosts: make(map[string][]netip.Addr)}
				c.devices[src] = d
			}
		}
		return d
	}
	for _, rr := range rrs {
		h := rr.Header()
		if h.Ttl == 0 {
			continue
		}
		switch rr := rr.(type) {
		case *dns.PTR:
			if label, ok := instanceLabel(rr.Ptr); ok && isHueService(h.Name) {
				c.instance(dev(), label)
			}
		case *dns.SRV:
			if label, ok := instanceLabel(h.Name); ok {
				if in := c.instance(dev(), label); in != nil {
					in.port, in.target = int(rr.Port), strings.ToLower(rr.Target)
				}
			}
		case *dns.TXT:
			if label, ok := instanceLabel(h.Name); ok {
				if in := c.instance(dev(), label); in != nil {
					in.txt = slices.Clone(rr.Txt[:min(len(rr.Txt), maxTXTStrings)])
				}
			}
		}
	}
	// A records second, and only for a device that announced a Hue
	// service: the listener hears every mDNS response on the link, and
	// the rest of the LAN's devices are none of the browse's business.
	if d = c.devices[src]; d == nil {
		return
	}
	for _, rr := range rrs {
		if a, ok := rr.(*dns.A); ok && a.Hdr.Ttl != 0 {
			if ip, ok := netip.AddrFromSlice(a.A); ok {
				d.host(strings.ToLower(a.Hdr.Name), ip.Unmap())
			}
		}
	}
	if d.rank != 0 {
		return
	}
	for _, in := range d.instances {
		if bridgeFrom(d.answer(in)).Selectable {
			c.selectable++
			d.rank = c.selectable
			return
		}
	}
}

// instance returns d's instance named label, adding it when d has room.
func (c *collector) instance(d *device, label string) *instance {
	if d == nil {
		return nil
	}
	key := strings.ToLower(label)
	if in, ok := d.instances[key]; ok {
		return in
	}
	if len(d.instances) >= maxPerDevice {
		c.truncated = true
		return nil
	}
	in := &instance{seq: c.seq, label: label}
	c.seq++
	d.instances[key] = in
	return in
}

// host records an A record of d's. Past the bounds it is dropped: only
// d's own entries can miss it.
func (d *device) host(name string, a netip.Addr) {
	addrs, ok := d.hosts[name]
	if !a.Is4() || !ok && len(d.hosts) >= maxHostsPerDevice || len(addrs) >= maxAddrsPerHost {
		return
	}
	if !slices.Contains(addrs, a) {
		d.hosts[name] = append(addrs, a)
	}
}

// answer is in as d announced it, with the addresses of its SRV target.
func (d *device) answer(in *instance) answer {
	return answer{instance: in.label, port: in.port, txt: in.txt, ipv4: d.hosts[in.target]}
}

// heard is one device's answer for one instance, as an entry would show it.
type heard struct {
	seq    int
	bridge Bridge
	at     string // the device's address: the one announced, else the source
	rank   int    // its device's
}

// result turns what was heard into entries (see Browse): one per claim
// (bridge id, else instance name) and address, conflicts marked among
// everything heard. Entries that could be selected are listed for the
// first limit devices; the others, in answer order, up to limit.
func (c *collector) result() Discovery {
	var all []heard
	for _, d := range c.devices {
		for _, in := range d.instances {
			b := bridgeFrom(d.answer(in))
			at := b.Address
			if at == "" {
				at = d.addr.String()
			}
			all = append(all, heard{seq: in.seq, bridge: b, at: at, rank: d.rank})
		}
	}
	slices.SortFunc(all, func(a, b heard) int { return a.seq - b.seq })

	// Who claims each bridge id and each instance name, and when each
	// address first answered.
	byID := map[string][]string{}
	byName := map[string][]string{}
	first := map[string]int{}
	claim := func(m map[string][]string, key, at string) {
		if key != "" && !slices.Contains(m[key], at) {
			m[key] = append(m[key], at)
		}
	}
	for _, h := range all {
		claim(byID, h.bridge.BridgeID, h.at)
		claim(byName, strings.ToLower(h.bridge.Name), h.at)
		if _, ok := first[h.at]; !ok {
			first[h.at] = h.seq
		}
	}

	out := Discovery{Bridges: []Bridge{}, Truncated: c.truncated}
	seen := map[string]bool{}
	others := 0
	for _, h := range all {
		b := h.bridge
		key := "name:" + strings.ToLower(b.Name) + "|" + h.at
		if b.BridgeID != "" {
			key = "id:" + b.BridgeID + "|" + h.at
		}
		if seen[key] {
			continue // the same claim again from the same device
		}
		seen[key] = true
		claimants := slices.Clone(byID[b.BridgeID])
		if b.BridgeID == "" {
			claimants = nil
		}
		for _, at := range byName[strings.ToLower(b.Name)] {
			if b.Name != "" && !slices.Contains(claimants, at) {
				claimants = append(claimants, at)
			}
		}
		slices.SortFunc(claimants, func(x, y string) int { return first[x] - first[y] })
		couldSelect := b.Selectable
		if len(claimants) > 1 {
			b.Selectable = false
			b.Conflicts = claimants
			b.Reason = conflictReason(claimants)
		}
		switch {
		case couldSelect && h.rank > c.limit:
			out.LimitReached = true
			continue
		case !couldSelect && others == c.limit:
			out.Truncated = true
			continue
		case !couldSelect:
			others++
		}
		out.Bridges = append(out.Bridges, b)
	}
	return out
}

// conflictReason is the Reason of an entry claimed at several addresses:
// "two devices claim to be this bridge: 192.168.77.10, 192.168.77.23".
// The addresses are canonical dotted quads this package formatted.
func conflictReason(addrs []string) string {
	n := strconv.Itoa(len(addrs))
	if w := []string{"", "", "two", "three", "four", "five", "six", "seven", "eight", "nine"}; len(addrs) < len(w) {
		n = w[len(addrs)]
	}
	shown := strings.Join(addrs[:min(len(addrs), maxShownConflicts)], ", ")
	if len(addrs) > maxShownConflicts {
		shown += ", ..."
	}
	return n + " " + ReasonConflicting + ": " + shown
}
