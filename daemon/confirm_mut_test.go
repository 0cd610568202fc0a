package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/journal"
)

// TestWithdrawnConfirmJournaled: a confirm withdrawn by its host's
// unpairing or by the shutdown is journaled with that note, as a user's,
// a caller's or a timeout's denial is with its own.
//
// conformance: P3-X14-27
func TestWithdrawnConfirmJournaled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		withdraw func(t *testing.T, w *withdrawRig)
		msg      string
		note     string
	}{
		{"unpaired", func(t *testing.T, w *withdrawRig) {
			if err := w.d.deleteHost(t.Context(), w.hostID); err != nil {
				t.Fatal(err)
			}
		}, "unpaired", fetch.DeniedByUnpair},
		{"shutdown", func(_ *testing.T, w *withdrawRig) { w.d.BeginShutdown() }, "shutting down", fetch.DeniedByShutdown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWithdrawRig(t)
			tc.withdraw(t, w)
			w.denied(t, tc.msg)
			es, err := w.d.records.Journal(context.Background(), journal.JournalQuery{AppID: "app1", Kind: "requests"})
			if err != nil || len(es) != 1 {
				t.Fatalf("Journal = %d entries, %v; want 1", len(es), err)
			}
			if es[0].Note != tc.note {
				t.Errorf("journal note = %q, want %q", es[0].Note, tc.note)
			}
		})
	}
}

// TestDecidedConfirmsRemembered: the broker remembers the last 1024
// decided confirms, so a late second decision on any of them is a no-op
// (nil); only an id older than those is NOT_FOUND.
//
// conformance: P3-L16-12
func TestDecidedConfirmsRemembered(t *testing.T) {
	const keep = 1024
	b := fetch.NewConfirmBroker(time.Hour, hints.NewBus(), time.Now)
	ids := make([]string, 0, keep+1)
	for range keep + 1 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.Ask(t.Context(), fetch.Confirm{AppID: "app1", Host: "h", Method: "POST"})
		}()
		var p []fetch.Confirm
		for p = b.Pending(); len(p) == 0; p = b.Pending() {
			time.Sleep(10 * time.Microsecond)
		}
		if err := b.DecideConfirm(p[0].ID, false, fetch.RememberOnce, nil); err != nil {
			t.Fatal(err)
		}
		<-done
		ids = append(ids, p[0].ID)
	}
	if err := b.DecideConfirm(ids[0], true, fetch.RememberOnce, nil); !errorsIsCode(err, errcode.NotFound) {
		t.Errorf("deciding the oldest of %d again = %v, want NOT_FOUND", keep+1, err)
	}
	for _, i := range []int{1, keep} {
		if err := b.DecideConfirm(ids[i], true, fetch.RememberOnce, nil); err != nil {
			t.Errorf("deciding confirm %d of %d again = %v, want a no-op", i+1, keep+1, err)
		}
	}
}

// TestParkedBytesBoundInclusive: confirms may hold exactly
// MaxParkedBytes in total; past it (here by the smallest confirm, five
// bytes) one is denied at once, unparked.
//
// conformance: P3-X14-24, P3-X14-27
func TestParkedBytesBoundInclusive(t *testing.T) {
	// What a parked confirm holds of its request: every field counts.
	if n := fetch.ConfirmBytes(fetch.Confirm{AppID: "app1", Body: "bbbbb", URL: "uuuu", Host: "hhh", Method: "PUT", Slot: "ss"}); n != 5+4+3+3+2 {
		t.Errorf("ConfirmBytes = %d, want %d: body, URL, host, method and slot", n, 5+4+3+3+2)
	}
	b := fetch.NewConfirmBroker(time.Hour, hints.NewBus(), time.Now)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sized := func(app string, n int) fetch.Confirm {
		c := fetch.Confirm{AppID: app, Host: "h", Method: "POST"}
		c.Body = strings.Repeat("x", n-fetch.ConfirmBytes(c))
		return c
	}
	done := make(chan struct{}, 2)
	park := func(c fetch.Confirm, want int) {
		go func() {
			b.Ask(ctx, c)
			done <- struct{}{}
		}()
		for end := time.Now().Add(20 * time.Second); len(b.Pending()) < want; time.Sleep(100 * time.Microsecond) {
			if time.Now().After(end) {
				t.Fatalf("a confirm of %d bytes, %d in all, was not parked", fetch.ConfirmBytes(c), want)
			}
		}
	}
	park(sized("app1", fetch.MaxParkedBytes-10), 1)
	late, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	park(sized("app2", 10), 2) // the total is now exactly the bound
	if got, _ := b.Ask(late, sized("app3", 5)); got != fetch.AskFull {
		t.Errorf("a confirm past %d parked bytes = %d, want askFull", fetch.MaxParkedBytes, got)
	}
	if n := len(b.Pending()); n != 2 {
		t.Errorf("parked = %d, want 2", n)
	}
	cancel()
	<-done
	<-done
}
