package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon/errcode"
)

// replaceCeremony runs a ceremony's start, start(replace), that would
// replace a working credential only when the person said so: with yes
// (--yes) it replaces at once; otherwise it starts without replace and,
// when the daemon answers ALREADY_CONNECTED, asks on a terminal ("APP/SLOT
// is linked since …; replace it?") and starts again with replace, or
// without a terminal refuses with a sentence naming --yes. what is the
// state the credential gives ("linked", "claimed", "signed in"), and
// keeps says what the old one is ("link"). The old credential is the
// daemon's to keep until the new one commits. ok is false when code is
// the command's exit status.
func (c *ctl) replaceCeremony(ctx context.Context, appID, slot string, yes bool, what, keeps string, start func(replace bool) error) (code int, ok bool) {
	err := start(yes)
	var apiErr *api.Error
	if err == nil {
		return exitOK, true
	}
	if !errors.As(err, &apiErr) || apiErr.Code != errcode.AlreadyConnected {
		return c.fail(err), false
	}
	since := c.workingSince(ctx, appID, slot)
	if !interactive(c.e.stdin) {
		fmt.Fprintf(c.e.stderr, "%s: %s/%s is already %s%s; pass --yes to replace it (until the new one is in place, snugd keeps using the old %s)\n",
			c.name, trustName(appID), trustName(slot), what, since, keeps)
		return exitUsage, false
	}
	if ok, code := c.confirm(false, fmt.Sprintf("%s/%s is %s%s; replace it? Until the new one is in place, snugd keeps using the old %s.",
		trustName(appID), trustName(slot), what, since, keeps)); !ok {
		return code, false
	}
	if err := start(true); err != nil {
		return c.fail(err), false
	}
	return exitOK, true
}

// workingSince is " since <time>" for the slot's credential (its
// verified stamp, else when it was obtained), or "" when it cannot be
// read.
func (c *ctl) workingSince(ctx context.Context, appID, slot string) string {
	conns, err := c.client.Connections(ctx, appID)
	if err != nil {
		return ""
	}
	for _, cj := range conns {
		if cj.Slot != slot || cj.State == nil {
			continue
		}
		st := cj.State
		for _, at := range []*api.Time{st.LinkVerifiedAt, st.ClaimVerifiedAt, st.LANVerifiedAt, st.ObtainedAt} {
			if at != nil {
				return " since " + at.Local().Format(time.DateTime)
			}
		}
	}
	return ""
}
