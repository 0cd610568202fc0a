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
