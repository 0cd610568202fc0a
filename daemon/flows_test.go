package daemon

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snug/snugd/daemon/errcode"
)

func TestFlowBookOneFlowPerSlot(t *testing.T) {
	b := newFlowBook(time.Now, nil)
	first, ctx1, err := b.start(t.Context(), FlowDeviceLink, "app", "chat", "h1", FlowQR, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := b.start(t.Context(), FlowDeviceLink, "app", "chat", "h1", FlowQR, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if first.ID == second.ID {
		t.Fatal("two flows share an id")
	}
	if ctx1.Err() == nil {
		t.Error("the replaced flow's work was not cancelled")
	}
	got, _ := b.get(first.ID)
	if got.State != FlowFailed || got.Message == "" {
		t.Errorf("replaced flow = %s %q, want failed with a sentence", got.State, got.Message)
	}
	if b.update(first.ID, func(f *Flow) { f.State = FlowLinked }) {
		t.Error("an ended flow took an update")
	}
	if got, _ := b.get(first.ID); got.State != FlowFailed {
		t.Errorf("ended flow moved to %s", got.State)
	}
}

func TestFlowBookUpdateKeepsIdentityAndEnds(t *testing.T) {
	hints := newHintBus()
	sub := make(chan Hint, 8)
	hints.subs[sub] = struct{}{}
	b := newFlowBook(time.Now, hints)
	f, ctx, err := b.start(t.Context(), FlowLANPair, "app", "hue", "", FlowVerifying, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ok := b.update(f.ID, func(g *Flow) {
		g.State = FlowPaired
		g.AppID, g.Slot, g.HostID = "other", "other", "h9" // ignored: who the flow is for never changes
		g.Label = "Hue Bridge"
	})
	if !ok {
		t.Fatal("update refused")
	}
	got, _ := b.get(f.ID)
	if got.AppID != "app" || got.Slot != "hue" || got.HostID != "" || got.State != FlowPaired || got.Label != "Hue Bridge" {
		t.Errorf("after update: %+v", got)
	}
	if ctx.Err() == nil {
		t.Error("a flow in a final state still has live work")
	}
	// Every change announced itself with a reference only.
	for i := 0; i < 2; i++ {
		h := <-sub
		if h.Type != HintFlowUpdated || h.ID != f.ID {
			t.Errorf("hint %d = %+v", i, h)
		}
	}
	// A new flow may start for the slot at once.
	if _, _, err := b.start(t.Context(), FlowLANPair, "app", "hue", "", FlowVerifying, time.Minute); err != nil {
		t.Errorf("start after a final state: %v", err)
	}
}

func TestFlowBookExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFlowBook(time.Now, nil)
		f, ctx, err := b.start(t.Context(), FlowOAuth, "app", "gh", "h1", FlowPending, 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*time.Minute + time.Second)
		<-ctx.Done() // the flow's work ends at its deadline
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("ctx.Err() = %v", ctx.Err())
		}
		got, ok := b.get(f.ID)
		if !ok || got.State != FlowExpired {
			t.Fatalf("get = %+v, %v; want expired", got, ok)
		}
		if b.update(f.ID, func(g *Flow) { g.State = FlowConnected }) {
			t.Error("an expired flow took an update")
		}
		// Ended flows are swept after flowKeep.
		time.Sleep(flowKeep + time.Second)
		b.start(t.Context(), FlowOAuth, "app", "other", "h1", FlowPending, time.Minute)
		if _, ok := b.get(f.ID); ok {
			t.Error("an ended flow was kept past flowKeep")
		}
	})
}

func TestFlowBookBoundedAndClosed(t *testing.T) {
	b := newFlowBook(time.Now, nil)
	for i := 0; i < maxFlows; i++ {
		if _, _, err := b.start(t.Context(), FlowOAuth, "app", string(rune('a'+i%26))+string(rune('a'+i/26)), "", FlowPending, time.Minute); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
	}
	if _, _, err := b.start(t.Context(), FlowOAuth, "app", "one-more", "", FlowPending, time.Minute); !errors.Is(err, errcode.RateLimited) {
		t.Errorf("flow past the bound: %v, want RATE_LIMITED", err)
	}
	b.close()
	for _, f := range b.byID {
		if f.State != FlowFailed || f.cancel != nil {
			t.Fatalf("after close: %s", f.State)
		}
	}
	if _, _, err := b.start(t.Context(), FlowOAuth, "app", "late", "", FlowPending, time.Minute); err == nil {
		t.Error("a flow started after close")
	}
}

func TestFlowNotFound(t *testing.T) {
	d := newTestDaemon(t)
	if _, err := d.Flow(t.Context(), "f_nope"); !errors.Is(err, errcode.NotFound) {
		t.Errorf("Flow(unknown) = %v, want NOT_FOUND", err)
	}
}
