package daemon

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/pairing"
)

func TestFlowBookOneFlowPerSlot(t *testing.T) {
	b := pairing.NewFlowBook(time.Now, nil)
	first, ctx1, err := b.Start(t.Context(), pairing.FlowDeviceLink, "app", "chat", "h1", pairing.FlowQR, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := b.Start(t.Context(), pairing.FlowDeviceLink, "app", "chat", "h1", pairing.FlowQR, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if first.ID == second.ID {
		t.Fatal("two flows share an id")
	}
	if ctx1.Err() == nil {
		t.Error("the replaced flow's work was not cancelled")
	}
	got, _ := b.Get(first.ID)
	if got.State != pairing.FlowFailed || got.Message == "" {
		t.Errorf("replaced flow = %s %q, want failed with a sentence", got.State, got.Message)
	}
	if b.Update(first.ID, func(f *pairing.Flow) { f.State = pairing.FlowLinked }) {
		t.Error("an ended flow took an update")
	}
	if got, _ := b.Get(first.ID); got.State != pairing.FlowFailed {
		t.Errorf("ended flow moved to %s", got.State)
	}
}

func TestFlowBookUpdateKeepsIdentityAndEnds(t *testing.T) {
	hs := hints.NewBus()
	sub := hs.Subscribe(t.Context())
	b := pairing.NewFlowBook(time.Now, hs)
	f, ctx, err := b.Start(t.Context(), pairing.FlowLANPair, "app", "hue", "", pairing.FlowVerifying, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ok := b.Update(f.ID, func(g *pairing.Flow) {
		g.State = pairing.FlowPaired
		g.AppID, g.Slot, g.HostID = "other", "other", "h9" // ignored: who the flow is for never changes
		g.Label = "Hue Bridge"
	})
	if !ok {
		t.Fatal("update refused")
	}
	got, _ := b.Get(f.ID)
	if got.AppID != "app" || got.Slot != "hue" || got.HostID != "" || got.State != pairing.FlowPaired || got.Label != "Hue Bridge" {
		t.Errorf("after update: %+v", got)
	}
	if ctx.Err() == nil {
		t.Error("a flow in a final state still has live work")
	}
	// Every change announced itself with a reference only.
	for i := 0; i < 2; i++ {
		h := <-sub
		if h.Type != hints.FlowUpdated || h.ID != f.ID {
			t.Errorf("hint %d = %+v", i, h)
		}
	}
	// A new flow may start for the slot at once.
	if _, _, err := b.Start(t.Context(), pairing.FlowLANPair, "app", "hue", "", pairing.FlowVerifying, time.Minute); err != nil {
		t.Errorf("start after a final state: %v", err)
	}
}

func TestFlowBookExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pairing.NewFlowBook(time.Now, nil)
		f, ctx, err := b.Start(t.Context(), pairing.FlowOAuth, "app", "gh", "h1", pairing.FlowPending, 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*time.Minute + time.Second)
		<-ctx.Done() // the flow's work ends at its deadline
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("ctx.Err() = %v", ctx.Err())
		}
		got, ok := b.Get(f.ID)
		if !ok || got.State != pairing.FlowExpired {
			t.Fatalf("get = %+v, %v; want expired", got, ok)
		}
		if b.Update(f.ID, func(g *pairing.Flow) { g.State = pairing.FlowConnected }) {
			t.Error("an expired flow took an update")
		}
		// Ended flows are swept after flowKeep.
		time.Sleep(pairing.FlowKeep + time.Second)
		b.Start(t.Context(), pairing.FlowOAuth, "app", "other", "h1", pairing.FlowPending, time.Minute)
		if _, ok := b.Get(f.ID); ok {
			t.Error("an ended flow was kept past flowKeep")
		}
	})
}

func TestFlowBookBoundedAndClosed(t *testing.T) {
	b := pairing.NewFlowBook(time.Now, nil)
	for i := 0; i < pairing.MaxFlows; i++ {
		if _, _, err := b.Start(t.Context(), pairing.FlowOAuth, "app", string(rune('a'+i%26))+string(rune('a'+i/26)), "", pairing.FlowPending, time.Minute); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
	}
	if _, _, err := b.Start(t.Context(), pairing.FlowOAuth, "app", "one-more", "", pairing.FlowPending, time.Minute); !errors.Is(err, errcode.RateLimited) {
		t.Errorf("flow past the bound: %v, want RATE_LIMITED", err)
	}
	b.Close()
	for _, f := range b.ByID {
		if f.State != pairing.FlowFailed || f.Cancel != nil {
			t.Fatalf("after close: %s", f.State)
		}
	}
	if _, _, err := b.Start(t.Context(), pairing.FlowOAuth, "app", "late", "", pairing.FlowPending, time.Minute); err == nil {
		t.Error("a flow started after close")
	}
}

func TestFlowNotFound(t *testing.T) {
	d := newTestDaemon(t)
	if _, err := d.pairing.Flow(t.Context(), "f_nope"); !errors.Is(err, errcode.NotFound) {
		t.Errorf("Flow(unknown) = %v, want NOT_FOUND", err)
	}
}
