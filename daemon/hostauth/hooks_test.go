package hostauth

import (
	"context"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/internal/testutil"
)

// hookLog records each hook the book runs.
type hookLog struct {
	paired    []Pairing
	unpairing []string
	unpaired  []error
}

func (l *hookLog) hooks() Hooks {
	return Hooks{
		Paired:    func(_ context.Context, p Pairing) { l.paired = append(l.paired, p) },
		Unpairing: func(id string) { l.unpairing = append(l.unpairing, id) },
		Unpaired:  func(_ context.Context, _ Host, err error) { l.unpaired = append(l.unpaired, err) },
	}
}

// TestHooksRunForEachActThatHappened: the Paired hook (the journal's
// record of a pairing) runs once for each pairing approved, by a code or
// by an invitation, and never for a request that is only waiting or one
// refused; Unpairing (which withdraws the host's parked confirms) runs
// inside each unpairing that removed a host and not for an unknown id;
// Unpaired reports each outcome.
func TestHooksRunForEachActThatHappened(t *testing.T) {
	bk, _, _ := newBook(t)
	ctx := t.Context()
	var l hookLog
	bk.SetHooks(l.hooks())

	p := webPair(t, bk, testVerifer)
	if len(l.paired) != 0 {
		t.Fatalf("Paired ran for a request still waiting for its code: %+v", l.paired)
	}
	if _, err := bk.Approve(ctx, "ZZZZ-ZZZZ"); err == nil {
		t.Fatal("Approve(unknown code) = nil")
	}
	if len(l.paired) != 0 {
		t.Fatalf("Paired ran for a refused approval: %+v", l.paired)
	}
	if _, err := bk.Approve(ctx, p.Code); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if len(l.paired) != 1 || l.paired[0].ID != p.ID {
		t.Fatalf("after Approve, Paired ran for %+v, want once for %s", l.paired, p.ID)
	}

	inv := invite(t, bk, "Laptop")
	ip, err := bk.Pair(ctx, invitedRequest("Laptop", inv), "")
	if err != nil || !ip.Invited {
		t.Fatalf("Pair(invited) = %+v, %v", ip, err)
	}
	if len(l.paired) != 2 || l.paired[1].ID != ip.ID {
		t.Fatalf("after an invited Pair, Paired ran for %+v, want a second time for %s", l.paired, ip.ID)
	}
	if _, err := bk.Pair(ctx, invitedRequest("Laptop", inv), ""); err == nil {
		t.Fatal("Pair(used invitation) = nil")
	}
	if len(l.paired) != 2 {
		t.Fatalf("Paired ran for a refused invited Pair: %+v", l.paired)
	}

	token := pairHost(t, bk, SurfaceWeb, webOrigin)
	h, err := bk.Authenticate(ctx, token, webOrigin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bk.Unpair(ctx, h.ID); err != nil {
		t.Fatalf("Unpair: %v", err)
	}
	if len(l.unpairing) != 1 || l.unpairing[0] != h.ID || len(l.unpaired) != 1 || l.unpaired[0] != nil {
		t.Fatalf("after Unpair: Unpairing %v, Unpaired %v; want each once, without an error", l.unpairing, l.unpaired)
	}
	if _, err := bk.Unpair(ctx, h.ID); err == nil {
		t.Fatal("Unpair twice = nil")
	}
	if len(l.unpairing) != 1 || len(l.unpaired) != 2 {
		t.Fatalf("after a refused Unpair: Unpairing %v, Unpaired %v; want Unpairing not run and Unpaired told", l.unpairing, l.unpaired)
	}
	testutil.WantCode(t, l.unpaired[1], errcode.HostNotFound)
}
