package main

import (
	"context"
	"time"

	"github.com/snug/snugd/api"
)

// connectPoll is how often snugd ctl connect asks how the flow stands.
const connectPoll = time.Second

// ctlConnect is snugd ctl connect APP SLOT: it starts an OAuth sign-in
// for an approved authorization-code connection over the ctl socket,
// prints the authorize URL for the person to open, and waits for the
// provider's redirect to reach snugd's loopback callback. It exits 0 when
// the flow ends connected, 1 otherwise with the flow's fixed sentence.
// A connection that is already signed in signs in again only after the
// person said yes (or --yes); its tokens keep working until the new
// sign-in completes, and after one that fails.
func ctlConnect(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("connect APP SLOT [--yes]")
	yes := fs.Bool("yes", false, "sign in again if the connection is already signed in (its tokens keep working until the new sign-in completes)")
	pos, code, ok := c.args(fs, args, "APP", "SLOT")
	if !ok {
		return code
	}
	var st api.OAuthStartResponse
	if code, ok := c.replaceCeremony(ctx, pos[0], pos[1], *yes, "signed in", "tokens", func(replace bool) error {
		var err error
		st, err = c.client.OAuthStart(ctx, pos[0], pos[1], replace)
		return err
	}); !ok {
		return code
	}
	c.out("Open this address in a browser on this computer and sign in:")
	c.out("")
	c.out("  %s", st.AuthorizeURL)
	c.out("")
	c.out("Waiting for the sign-in (it expires at %s)…", st.Flow.ExpiresAt.Local().Format("15:04:05"))
	t := time.NewTicker(connectPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return c.fail(ctx.Err())
		case <-t.C:
		}
		f, err := c.client.Flow(ctx, st.FlowID)
		if err != nil {
			return c.fail(err)
		}
		switch f.State {
		case "pending":
			continue
		case "connected":
			c.out("%s/%s: %s", pos[0], pos[1], f.Message)
			return exitOK
		}
		msg := f.Message
		if msg == "" {
			msg = "the sign-in ended without connecting"
		}
		c.e.stderr.Write([]byte(shown(c.name+": "+f.State+": "+msg) + "\n"))
		return exitNo
	}
}
