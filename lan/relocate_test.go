package lan_test

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/snug/snugd/lan"
	"github.com/snug/snugd/lan/huesim"
)

// multiDialer reaches a simulator per address and records what it dialed.
type multiDialer struct {
	to    map[string]*huesim.Sim
	calls []string
}

func (m *multiDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	m.calls = append(m.calls, address)
	sim, ok := m.to[address]
	if !ok {
		return nil, fmt.Errorf("test dialer: nothing at %s", address)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", sim.Addr())
}

// TestRelocate: the paired bridge moved from .10 to .11. An impostor at
// .12 announces the same bridge id and the same CN, with its own
// certificate; a public address announcing the id is not selectable. Only
// the bridge with the pinned certificate is taken, and nothing is sent to
// the old address or outside the discovered RFC-1918 ones.
func TestRelocate(t *testing.T) {
	moved, err := huesim.Start(huesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(moved.Close)
	impostor, err := huesim.Start(huesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(impostor.Close)
	pin := moved.Fingerprint()
	id := moved.BridgeID()
	bridges := []lan.Bridge{
		{BridgeID: id, Address: "192.168.77.10", Port: 443, Selectable: true}, // where it was
		{BridgeID: id, Address: "192.168.77.12", Port: 443, Selectable: true},
		{BridgeID: id, Address: "203.0.113.9", Port: 443, Reason: lan.ReasonNotPrivate},
		{BridgeID: "001788fffe000001", Address: "192.168.77.13", Port: 443, Selectable: true},
		{BridgeID: id, Address: "192.168.77.11", Port: 443, Selectable: true},
	}
	d := &multiDialer{to: map[string]*huesim.Sim{"192.168.77.11:443": moved, "192.168.77.12:443": impostor}}
	c, ok := lan.Relocate(t.Context(), bridges, "192.168.77.10", pin, id, d.dial)
	if !ok || c.Address.String() != "192.168.77.11" || c.Pin != pin {
		t.Fatalf("Relocate = %+v, %v; want the bridge at 192.168.77.11", c, ok)
	}
	if got := fmt.Sprint(d.calls); got != "[192.168.77.12:443 192.168.77.11:443]" {
		t.Errorf("Relocate dialed %s, want the impostor, then the bridge (hinted id only, never the old or a public address)", got)
	}

	// Without a usable hint every selectable bridge is probed; the
	// impostor alone never matches.
	d.calls = nil
	delete(d.to, "192.168.77.11:443")
	if c, ok := lan.Relocate(t.Context(), bridges, "192.168.77.10", pin, "", d.dial); ok {
		t.Errorf("Relocate(impostor only) = %+v, want no match", c)
	}
	if got := fmt.Sprint(d.calls); got != "[192.168.77.12:443 192.168.77.13:443 192.168.77.11:443]" {
		t.Errorf("Relocate(no hint) dialed %s", got)
	}
	if _, ok := lan.Relocate(t.Context(), bridges, "192.168.77.10", "not-a-pin", id, d.dial); ok {
		t.Error("Relocate(malformed pin) matched")
	}
}

// TestRelocateSameCertificate: one certificate served at two addresses is
// one bridge: Relocate takes the new address.
func TestRelocateSameCertificate(t *testing.T) {
	old, err := huesim.Start(huesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(old.Close)
	moved, err := huesim.Start(huesim.Config{Certificate: old.Certificate()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(moved.Close)
	d := &multiDialer{to: map[string]*huesim.Sim{"10.0.0.7:443": moved}}
	bridges := []lan.Bridge{{BridgeID: old.BridgeID(), Address: "10.0.0.7", Port: 443, Selectable: true}}
	if c, ok := lan.Relocate(t.Context(), bridges, "10.0.0.6", old.Fingerprint(), old.BridgeID(), d.dial); !ok || c.Address.String() != "10.0.0.7" {
		t.Fatalf("Relocate = %+v, %v; want 10.0.0.7", c, ok)
	}
}

// TestProveMove: a match elsewhere is a move only when nothing presents
// the pinned certificate at the approved address any more. A relay that
// forwards to the bridge presents its certificate, and while the bridge
// still answers at its address nothing moved.
func TestProveMove(t *testing.T) {
	bridge, err := huesim.Start(huesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bridge.Close)
	other, err := huesim.Start(huesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	pin, id := bridge.Fingerprint(), bridge.BridgeID()
	bridges := []lan.Bridge{{BridgeID: id, Address: "192.168.77.23", Port: 443, Selectable: true}}
	cases := []struct {
		name  string
		to    map[string]*huesim.Sim
		moved bool
	}{
		// The relay at .23 reaches the bridge, which still answers at .10.
		{"relay", map[string]*huesim.Sim{"192.168.77.23:443": bridge, "192.168.77.10:443": bridge}, false},
		{"silent at the old address", map[string]*huesim.Sim{"192.168.77.23:443": bridge}, true},
		{"another certificate at the old address", map[string]*huesim.Sim{"192.168.77.23:443": bridge, "192.168.77.10:443": other}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &multiDialer{to: tc.to}
			m, ok := lan.ProveMove(t.Context(), bridges, "192.168.77.10", pin, id, d.dial)
			if ok != tc.moved {
				t.Fatalf("ProveMove = %+v, %v; want moved %v", m, ok, tc.moved)
			}
			if ok && (m.From.String() != "192.168.77.10" || m.To.Address.String() != "192.168.77.23" || m.To.Pin != pin) {
				t.Errorf("ProveMove = %+v, want from .10 to .23", m)
			}
			if got := fmt.Sprint(d.calls); got != "[192.168.77.23:443 192.168.77.10:443]" {
				t.Errorf("ProveMove dialed %s, want the match, then the approved address", got)
			}
		})
	}

	// No match elsewhere: the approved address is never dialed. A
	// malformed approved address or pin dials nothing.
	d := &multiDialer{to: map[string]*huesim.Sim{"192.168.77.23:443": other, "192.168.77.10:443": bridge}}
	if _, ok := lan.ProveMove(t.Context(), bridges, "192.168.77.10", pin, id, d.dial); ok || fmt.Sprint(d.calls) != "[192.168.77.23:443]" {
		t.Errorf("ProveMove(no match) = %v, dialed %v", ok, d.calls)
	}
	d.calls = nil
	for _, from := range []string{"203.0.113.9", "192.168.077.10", ""} {
		if _, ok := lan.ProveMove(t.Context(), bridges, from, pin, id, d.dial); ok {
			t.Errorf("ProveMove(from %q) moved", from)
		}
	}
	if _, ok := lan.ProveMove(t.Context(), bridges, "192.168.77.10", "nope", id, d.dial); ok || d.calls != nil {
		t.Errorf("ProveMove(bad input) = %v, dialed %v", ok, d.calls)
	}
}
