package lan_test

import (
	"errors"
	"net"
	"testing"

	"github.com/snug/snugd/lan"
)

// TestDiscoverNoInterface: loopback, down and non-multicast interfaces do
// not qualify, and with none left Discover sends nothing.
func TestDiscoverNoInterface(t *testing.T) {
	ifaces := []net.Interface{
		{Index: 1, Name: "lo", Flags: net.FlagUp | net.FlagLoopback | net.FlagMulticast | net.FlagRunning},
		{Index: 2, Name: "down0", Flags: net.FlagMulticast | net.FlagBroadcast},
		{Index: 3, Name: "tun0", Flags: net.FlagUp | net.FlagPointToPoint | net.FlagRunning},
	}
	if _, err := lan.Browse(t.Context(), lan.DiscoverConfig{Interfaces: ifaces}); !errors.Is(err, lan.ErrNoInterface) {
		t.Fatalf("Discover(no eligible interface) = %v, want ErrNoInterface", err)
	}
}
