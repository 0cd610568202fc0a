package daemon

import (
	"context"

	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/hostauth"
)

// Hints subscribes ctx's caller to the hint stream (/v1/events) until ctx
// is done or the daemon closes, when the channel is closed. The
// administrator hears every hint; a paired host hears only those of the
// apps it may reach — a confirm's by its app, a connection's by its app,
// a flow's or a helper's by its app when it names one — so another host's
// app rings no doorbell either. A subscriber that falls behind misses
// hints (each costs it one refetch); it never blocks a publisher.
func (d *Daemon) Hints(ctx context.Context) <-chan hints.Hint {
	in := d.hints.Subscribe(ctx)
	if _, ok := hostauth.CallerHost(ctx); !ok {
		return in
	}
	out := make(chan hints.Hint, cap(in))
	// This goroutine lives until the subscription closes (ctx done or
	// the daemon closed).
	go func() {
		defer close(out)
		for h := range in {
			if !d.hintVisible(ctx, h) {
				continue
			}
			select {
			case out <- h:
			default:
			}
		}
	}()
	return out
}

// hintVisible reports whether ctx's host may hear h.
func (d *Daemon) hintVisible(ctx context.Context, h hints.Hint) bool {
	switch h.Type {
	case hints.ConnectionChanged:
		ok, err := d.grants.AppVisible(ctx, h.AppID)
		return err == nil && ok
	case hints.ConfirmPending:
		_, ok := d.exec.ConfirmByID(ctx, h.ID)
		return ok
	default:
		if h.AppID == "" {
			return true
		}
		ok, err := d.grants.AppVisible(ctx, h.AppID)
		return err == nil && ok
	}
}
