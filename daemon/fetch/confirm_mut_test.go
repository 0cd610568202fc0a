package fetch

import (
	"testing"
	"time"
)

// TestWithdrawHostCountsWhatItWithdrew: WithdrawHost denies the host's
// parked confirms and voids its allows not yet taken by their requests,
// leaves another host's alone, and counts each it withdrew.
func TestWithdrawHostCountsWhatItWithdrew(t *testing.T) {
	b := NewConfirmBroker(time.Hour, nil, time.Now)
	parked := func(id, host string) *parkedConfirm {
		return &parkedConfirm{c: Confirm{ID: id, HostID: host, AppID: "app1", Host: "api.example.com", Method: "POST"}, done: make(chan struct{})}
	}
	p1, p2, other := parked("c1", "h1"), parked("c2", "h1"), parked("c3", "h2")
	allowed, allowedOther := parked("c4", "h1"), parked("c5", "h2")
	b.Queue = []*parkedConfirm{p1, other, p2}
	for _, p := range []*parkedConfirm{allowed, allowedOther} {
		p.decided, p.allow = true, true
		close(p.done)
		b.unclaimed[p] = true
	}
	if n := b.WithdrawHost("h1"); n != 3 {
		t.Errorf("WithdrawHost(h1) = %d, want 3 (two parked, one allowed and unclaimed)", n)
	}
	for _, p := range []*parkedConfirm{p1, p2, allowed} {
		if p.allow || p.withdrawn != withdrawnUnpaired {
			t.Errorf("%s after WithdrawHost: allow %v, withdrawn %q; want denied as unpaired", p.c.ID, p.allow, p.withdrawn)
		}
	}
	if len(b.Queue) != 1 || b.Queue[0] != other || other.decided || !allowedOther.allow || !b.unclaimed[allowedOther] || b.unclaimed[allowed] {
		t.Errorf("another host's confirms were touched: queue %v, unclaimed %v", b.Queue, b.unclaimed)
	}
	if n := b.WithdrawHost("h1"); n != 0 {
		t.Errorf("WithdrawHost(h1) again = %d, want 0", n)
	}
}
