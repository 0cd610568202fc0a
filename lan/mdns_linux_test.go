//go:build linux

package lan_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"

	"github.com/snug/snugd/lan"
	"github.com/snug/snugd/lan/huesim"
)

// The crafted-answer tests' network: a client namespace (Discover, and
// the dials of the verify probe) and a responder namespace holding every
// answering address, joined by one veth pair created inside them. Nothing
// is added to the machine's own namespace; names carry the test binary's
// pid and a counter, so concurrent runs never share one.
const (
	lanClient = "192.168.77.2"
	lanBridge = "192.168.77.10"
	lanOther  = "192.168.77.23"
	respLink  = "slm-r0"
	cliLink2  = "slm-c0"
)

var netnsSeq atomic.Int32

// testLAN is one pair of namespaces.
type testLAN struct {
	cli, resp string
}

// requireRoot skips unless the test can make network namespaces.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces (CI runs as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (apt-get install iproute2)")
	}
}

// newLAN makes the two namespaces, the responder's addresses (every one
// of respAddrs on its end of the pair) and the client's; t.Cleanup
// removes them.
func newLAN(t *testing.T, respAddrs ...string) testLAN {
	t.Helper()
	requireRoot(t)
	n := netnsSeq.Add(1)
	l := testLAN{cli: fmt.Sprintf("slm%d-%dc", os.Getpid(), n), resp: fmt.Sprintf("slm%d-%dr", os.Getpid(), n)}
	for _, ns := range []string{l.cli, l.resp} {
		if _, err := os.Stat("/run/netns/" + ns); err == nil {
			t.Fatalf("namespace %s exists: another run holds it", ns)
		}
	}
	t.Cleanup(func() {
		_ = ipCmd("netns", "del", l.resp) // takes the veth pair with it
		_ = ipCmd("netns", "del", l.cli)
	})
	steps := [][]string{
		{"netns", "add", l.resp},
		{"netns", "add", l.cli},
		{"-n", l.resp, "link", "add", respLink, "type", "veth", "peer", "name", cliLink2, "netns", l.cli},
		{"-n", l.cli, "addr", "add", lanClient + "/24", "dev", cliLink2},
	}
	for _, a := range respAddrs {
		steps = append(steps, []string{"-n", l.resp, "addr", "add", a + "/24", "dev", respLink})
	}
	steps = append(steps,
		[]string{"-n", l.resp, "link", "set", respLink, "up"},
		[]string{"-n", l.cli, "link", "set", cliLink2, "up"},
		[]string{"-n", l.resp, "link", "set", "lo", "up"},
		[]string{"-n", l.cli, "link", "set", "lo", "up"},
	)
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			t.Fatalf("set up the test network: %v", err)
		}
	}
	return l
}

// send is one datagram a responder multicasts after a query: from one
// of its addresses, port 5353, delay after the query arrived.
type send struct {
	delay time.Duration
	from  string
	pkt   []byte
}

// respond starts a responder in l's responder namespace: on every query
// for `_hue._tcp.local.` it multicasts script, in order, each datagram
// from its own source address. It is a crafted-packet mDNS responder in
// the test's namespace, nothing more; t.Cleanup stops it.
func (l testLAN) respond(t *testing.T, script []send) {
	t.Helper()
	var recv *ipv4.PacketConn
	senders := map[string]*ipv4.PacketConn{}
	err := inNetns(l.resp, func() error {
		ifi, err := net.InterfaceByName(respLink)
		if err != nil {
			return err
		}
		c, err := net.ListenPacket("udp4", "224.0.0.251:5353")
		if err != nil {
			return err
		}
		recv = ipv4.NewPacketConn(c)
		if err := recv.JoinGroup(ifi, &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251)}); err != nil {
			return err
		}
		lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
			})
			if err != nil {
				return err
			}
			return serr
		}}
		for _, s := range script {
			if senders[s.from] != nil {
				continue
			}
			c, err := lc.ListenPacket(context.Background(), "udp4", s.from+":5353")
			if err != nil {
				return err
			}
			p := ipv4.NewPacketConn(c)
			senders[s.from] = p
			if err := p.SetMulticastInterface(ifi); err != nil {
				return err
			}
		}
		return nil
	})
	closeAll := func() {
		if recv != nil {
			recv.Close()
		}
		for _, p := range senders {
			p.Close()
		}
	}
	if err != nil {
		closeAll()
		t.Fatalf("start the responder: %v", err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(done)
		closeAll()
		wg.Wait()
	})
	group := &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251), Port: 5353}
	wg.Add(1)
	go func() { // ends when recv closes
		defer wg.Done()
		buf := make([]byte, 9000)
		for {
			n, _, _, err := recv.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dns.Msg
			if m.Unpack(buf[:n]) != nil || m.Response || len(m.Question) == 0 || !strings.EqualFold(m.Question[0].Name, "_hue._tcp.local.") {
				continue
			}
			wg.Add(1)
			go func() { // one query's answers; ends with the script or the test
				defer wg.Done()
				for _, s := range script {
					select {
					case <-done:
						return
					case <-time.After(s.delay):
					}
					senders[s.from].WriteTo(s.pkt, nil, group)
				}
			}()
		}
	}()
}

// packet packs an mDNS response from records in zone-file form.
func packet(t *testing.T, records ...string) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.Response, m.Authoritative = true, true
	for _, s := range records {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("record %q: %v", s, err)
		}
		m.Answer = append(m.Answer, rr)
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hueAnswer is what a bridge named name with bridge id id answers,
// announcing address at and port.
func hueAnswer(t *testing.T, name, id, at string, port int) []byte {
	t.Helper()
	inst := strings.ReplaceAll(name, " ", `\ `) + "._hue._tcp.local."
	host := "h" + strings.ReplaceAll(at, ".", "-") + ".local."
	return packet(t,
		"_hue._tcp.local. 4500 IN PTR "+inst,
		fmt.Sprintf("%s 120 IN SRV 0 0 %d %s", inst, port, host),
		inst+` 4500 IN TXT "bridgeid=`+id+`" "modelid=BSB002"`,
		host+" 120 IN A "+at,
	)
}

const (
	realID   = "001788fffe6a2b3c"
	realName = "Hue Bridge - 6A2B3C"
)

// TestDiscoverImpostorFirst: real multicast between namespaces. A device
// announces the bridge's own instance name and id at its address before
// the bridge answers; both answers are heard, and neither entry is
// selectable, the reason naming both addresses.
func TestDiscoverImpostorFirst(t *testing.T) {
	l := newLAN(t, lanBridge, lanOther)
	l.respond(t, []send{
		{0, lanOther, hueAnswer(t, realName, realID, lanOther, 443)},
		{150 * time.Millisecond, lanBridge, hueAnswer(t, realName, realID, lanBridge, 443)},
	})
	d, err := browseIn(t.Context(), l.cli, lan.DiscoverConfig{Timeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Bridges) != 2 {
		t.Fatalf("Browse = %+v, want the impostor's entry and the bridge's", d.Bridges)
	}
	for i, at := range []string{lanOther, lanBridge} {
		b := d.Bridges[i]
		want := lan.Bridge{BridgeID: realID, Address: at, Port: 443, Name: realName, ModelID: "BSB002",
			Reason:    "two devices claim to be this bridge: " + lanOther + ", " + lanBridge,
			Conflicts: []string{lanOther, lanBridge}}
		if !reflect.DeepEqual(b, want) {
			t.Errorf("entry %d =\n%+v, want\n%+v", i, b, want)
		}
	}
}

// TestDiscoverBurst: a burst of answers never hides the bridge. Sixteen
// junk answers from sixteen addresses that cannot be selected (a bad id,
// a public address, another port) do not consume the limit; sixteen
// selectable-looking answers from one device fill only that device's
// share.
func TestDiscoverBurst(t *testing.T) {
	t.Run("sixteen devices of junk", func(t *testing.T) {
		var junkAddrs []string
		for i := range 16 {
			junkAddrs = append(junkAddrs, fmt.Sprintf("192.168.77.%d", 30+i))
		}
		l := newLAN(t, append([]string{lanBridge}, junkAddrs...)...)
		var script []send
		for i, at := range junkAddrs {
			name := fmt.Sprintf("Hue Bridge - JUNK%02d", i)
			id := fmt.Sprintf("001788fffe0000%02x", i)
			switch i % 3 {
			case 0:
				script = append(script, send{0, at, hueAnswer(t, name, "junk", at, 443)})
			case 1:
				script = append(script, send{0, at, hueAnswer(t, name, id, "203.0.113.9", 443)})
			default:
				script = append(script, send{0, at, hueAnswer(t, name, id, at, 80)})
			}
		}
		script = append(script, send{100 * time.Millisecond, lanBridge, hueAnswer(t, realName, realID, lanBridge, 443)})
		l.respond(t, script)
		d, err := browseIn(t.Context(), l.cli, lan.DiscoverConfig{Timeout: 1500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		checkBridgeListed(t, d, 17)
	})
	t.Run("sixteen answers from one device", func(t *testing.T) {
		l := newLAN(t, lanBridge, lanOther)
		var script []send
		for i := range 16 {
			script = append(script, send{0, lanOther, hueAnswer(t, fmt.Sprintf("Hue Bridge - JUNK%02d", i), fmt.Sprintf("001788fffe0000%02x", i), lanOther, 443)})
		}
		script = append(script, send{100 * time.Millisecond, lanBridge, hueAnswer(t, realName, realID, lanBridge, 443)})
		l.respond(t, script)
		d, err := browseIn(t.Context(), l.cli, lan.DiscoverConfig{Timeout: 1500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		checkBridgeListed(t, d, 9)
		if !d.Truncated {
			t.Error("Browse did not say a device's answers were left out")
		}
	})
	t.Run("a lure and fifteen devices before the bridge", func(t *testing.T) {
		// They fill the 16 devices listed before the bridge answers: the
		// browse goes on listening, and the bridge's claim makes the
		// lure unselectable.
		var addrs []string
		for i := range 15 {
			addrs = append(addrs, fmt.Sprintf("192.168.77.%d", 30+i))
		}
		l := newLAN(t, append([]string{lanBridge, lanOther}, addrs...)...)
		var script []send
		for i, at := range addrs {
			script = append(script, send{0, at, hueAnswer(t, fmt.Sprintf("Hue Bridge - JUNK%02d", i), fmt.Sprintf("001788fffe0000%02x", i), at, 443)})
		}
		script = append(script, send{0, lanOther, hueAnswer(t, realName, realID, lanOther, 443)},
			send{300 * time.Millisecond, lanBridge, hueAnswer(t, realName, realID, lanBridge, 443)})
		l.respond(t, script)
		d, err := browseIn(t.Context(), l.cli, lan.DiscoverConfig{Timeout: 1500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if !d.LimitReached || len(d.Bridges) != 16 {
			t.Fatalf("Browse = %d entries, limit reached %v; want 16, reached", len(d.Bridges), d.LimitReached)
		}
		for _, b := range d.Bridges {
			if b.BridgeID == realID && (b.Selectable || !reflect.DeepEqual(b.Conflicts, []string{lanOther, lanBridge})) {
				t.Errorf("lure %+v, want not selectable, the bridge's address named", b)
			}
		}
	})
}

// checkBridgeListed checks that d lists n entries, the bridge among them
// and selectable, and that the limit was not reached.
func checkBridgeListed(t *testing.T, d lan.Discovery, n int) {
	t.Helper()
	if d.LimitReached || len(d.Bridges) != n {
		t.Errorf("Browse = %d entries, limit reached %v; want %d, not reached", len(d.Bridges), d.LimitReached, n)
	}
	for _, b := range d.Bridges {
		if b.BridgeID == realID {
			if !b.Selectable || b.Address != lanBridge {
				t.Errorf("bridge entry %+v, want selectable at %s", b, lanBridge)
			}
			return
		}
	}
	t.Errorf("the bridge is not listed: %+v", d.Bridges)
}

// TestDiscoverPythonZeroconf: the answer of a python3-zeroconf 0.47
// responder, byte for byte, whose NSEC record a whole-message parser
// refuses, yields the bridge; and once the browse is over nothing in the
// client namespace listens on the mDNS port.
func TestDiscoverPythonZeroconf(t *testing.T) {
	raw, err := os.ReadFile("testdata/mdns/python-zeroconf-0.47.hex")
	if err != nil {
		t.Fatal(err)
	}
	pkt, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	l := newLAN(t, lanBridge)
	l.respond(t, []send{{0, lanBridge, pkt}})
	d, err := browseIn(t.Context(), l.cli, lan.DiscoverConfig{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := []lan.Bridge{{BridgeID: realID, Address: lanBridge, Port: 443, Name: realName, ModelID: "BSB002", Selectable: true}}
	if !reflect.DeepEqual(d.Bridges, want) {
		t.Errorf("Browse = %+v, want %+v", d.Bridges, want)
	}

	// Nothing listens once Browse returned: port 5353 binds in the
	// client namespace without SO_REUSEADDR, which any socket still
	// holding it would refuse.
	if err := inNetns(l.cli, func() error {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		return syscall.Bind(fd, &syscall.SockaddrInet4{Port: 5353})
	}); err != nil {
		t.Errorf("bind :5353 after the browse = %v: a socket still listens", err)
	}
}

// TestRelocateRelay: the bridge is paired at .10 and still answers there;
// a relay at .23 announces the bridge's id and forwards TCP to it, so its
// TLS is the bridge's. Discovery lists the relay, and ProveMove finds the
// pinned certificate there, then at .10 too: no move. Once the bridge
// really moves (.10 silent, the bridge at .11), the move is proven.
func TestRelocateRelay(t *testing.T) {
	l := newLAN(t, lanBridge, lanOther, "192.168.77.11")
	ln := l.listen(t, lanBridge+":443")
	bridge, err := huesim.Start(huesim.Config{BridgeID: realID, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bridge.Close)
	l.relay(t, lanOther+":443", lanBridge+":443")
	l.respond(t, []send{{0, lanOther, hueAnswer(t, realName, realID, lanOther, 443)}})
	d, err := browseIn(t.Context(), l.cli, lan.DiscoverConfig{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Bridges) != 1 || !d.Bridges[0].Selectable || d.Bridges[0].Address != lanOther {
		t.Fatalf("Browse = %+v, want the relay's announcement", d.Bridges)
	}
	dial := l.dialer()
	if c, ok := lan.Relocate(t.Context(), d.Bridges, lanBridge, bridge.Fingerprint(), realID, dial.dial); !ok || c.Address.String() != lanOther {
		t.Fatalf("Relocate = %+v, %v: the relay should present the bridge's certificate", c, ok)
	}
	dial.calls = nil
	if m, ok := lan.ProveMove(t.Context(), d.Bridges, lanBridge, bridge.Fingerprint(), realID, dial.dial); ok {
		t.Fatalf("ProveMove = %+v while the bridge answers at its address; want no move", m)
	}
	if got := fmt.Sprint(dial.calls); got != "["+lanOther+":443 "+lanBridge+":443]" {
		t.Errorf("ProveMove dialed %s", got)
	}

	// The bridge moves: nothing at .10 any more, the same certificate
	// at .11.
	bridge.Close()
	moved, err := huesim.Start(huesim.Config{BridgeID: realID, Listener: l.listen(t, "192.168.77.11:443"), Certificate: bridge.Certificate()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(moved.Close)
	bridges := []lan.Bridge{{BridgeID: realID, Address: "192.168.77.11", Port: 443, Selectable: true}}
	m, ok := lan.ProveMove(t.Context(), bridges, lanBridge, bridge.Fingerprint(), realID, dial.dial)
	if !ok || m.From.String() != lanBridge || m.To.Address.String() != "192.168.77.11" {
		t.Fatalf("ProveMove after the move = %+v, %v; want %s to 192.168.77.11", m, ok, lanBridge)
	}
}

// listen opens a TCP listener in the responder namespace.
func (l testLAN) listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := inNetns(l.resp, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// relay forwards every TCP connection to at, inside the responder
// namespace, to upstream: a relay elsewhere on the LAN.
func (l testLAN) relay(t *testing.T, at, upstream string) {
	t.Helper()
	ln := l.listen(t, at)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	up := nsDialer{ns: l.resp}
	wg.Add(1)
	go func() { // ends when ln closes
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := up.dial(t.Context(), "tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(u, c); u.Close() }()
			go func() { defer wg.Done(); io.Copy(c, u); c.Close() }()
		}
	}()
}

// dialer reaches the responder namespace from the client namespace.
func (l testLAN) dialer() *nsDialer { return &nsDialer{ns: l.cli} }

// nsDialer opens each connection on a thread inside ns, and only to the
// test network: every socket of the test stays in its namespaces.
type nsDialer struct {
	ns    string
	mu    sync.Mutex
	calls []string
}

func (n *nsDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	n.mu.Lock()
	n.calls = append(n.calls, address)
	n.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !netip.MustParsePrefix("192.168.77.0/24").Contains(ap.Addr()) {
		return nil, fmt.Errorf("test dialer: %s is outside the test network", address)
	}
	var c net.Conn
	err = inNetns(n.ns, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "tcp", address)
		return err
	})
	return c, err
}
