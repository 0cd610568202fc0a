package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/linkdevice"
	"golang.org/x/term"
)

// linkPollEvery is how often snugd ctl pair link reads its flow: a new
// code shows within it, and the time left is redrawn once a second.
const linkPollEvery = 250 * time.Millisecond

// ctlPairLink is snugd ctl pair link APP SLOT [--yes]: it starts the slot's
// device-link flow and draws each QR code the helper sends in the
// terminal (half blocks, sized to the terminal), redrawing it as codes
// rotate and once a second for the time left, until the flow ends: "linked
// as <label>", or the daemon's fixed sentence saying why not. Ctrl-C
// cancels the flow. The code is the helper's; snugd's token never shows.
// A slot that is already linked is relinked only after the person said
// yes (or --yes); its old link keeps working until the new one is linked,
// and still works after a cancelled or failed relink.
func ctlPairLink(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("pair link APP SLOT [--yes]")
	yes := fs.Bool("yes", false, "replace the slot's link if it is already linked (the old link keeps working until the new one is linked)")
	pos, code, ok := c.args(fs, args, "APP", "SLOT")
	if !ok {
		return code
	}
	if c.json {
		// The flow is a person scanning codes that rotate: there is no
		// one answer to print, and ignoring the flag would be a lie.
		fmt.Fprintf(c.e.stderr, "%s: --json is not supported: pair link draws QR codes for a person to scan; snugd ctl connections %s --json shows the result\n", c.name, pos[0])
		return exitUsage
	}
	// The start is not cut short by Ctrl-C: its answer names the flow to
	// cancel, which the loop below then does.
	var f api.FlowJSON
	if code, ok := c.replaceCeremony(ctx, pos[0], pos[1], *yes, "linked", "link", func(replace bool) error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		var err error
		f, err = c.client.StartLink(sctx, pos[0], pos[1], replace)
		return err
	}); !ok {
		return code
	}
	tty := isTerminal(c.e.stdout)
	var (
		shown    string
		drawnAt  time.Time
		tick     = time.NewTicker(linkPollEvery)
		lastDraw error
	)
	defer tick.Stop()
	for {
		if f.State != "qr" {
			return c.linkEnded(f, pos[0], pos[1])
		}
		now := time.Now()
		if f.QR != "" && (f.QR != shown || now.Sub(drawnAt) >= time.Second) {
			q := linkdevice.QR{Payload: f.QR}
			if f.QRExpiresAt != nil {
				q.ExpiresAt = f.QRExpiresAt.Time
			}
			if lastDraw = linkdevice.RenderLinkScreen(c.e.stdout, q, now, terminalColumns(c.e.stdout), tty); lastDraw != nil {
				c.cancelLink(f.FlowID)
				return c.fail(errors.New("the helper's code cannot be drawn"))
			}
			shown, drawnAt = f.QR, now
		}
		select {
		case <-ctx.Done():
			c.cancelLink(f.FlowID)
			c.out("cancelled: %s", c.linkKept(pos[0], pos[1]))
			return exitNo
		case <-tick.C:
		}
		next, err := c.client.Flow(ctx, f.FlowID)
		if ctx.Err() != nil {
			continue // Ctrl-C: cancel above
		}
		if err != nil {
			return c.fail(err)
		}
		f = next
	}
}

// linkEnded prints how a device-link flow ended.
func (c *ctl) linkEnded(f api.FlowJSON, appID, slot string) int {
	if f.State == "linked" {
		c.out("linked as %s", trustName(f.Label))
		return exitOK
	}
	msg := f.Message
	if msg == "" {
		msg = "the device was not linked"
	}
	if !strings.Contains(msg, "old link") {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if c.isConnected(ctx, appID, slot) {
			msg += "; the old link is kept"
		}
		cancel()
	}
	c.out("not linked (%s): %s", f.State, msg)
	return exitNo
}

// linkKept says what a cancelled link leaves: the old link when the slot
// still has one, else nothing.
func (c *ctl) linkKept(appID, slot string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c.isConnected(ctx, appID, slot) {
		return "the new device was not linked; the old link is kept"
	}
	return "the device was not linked"
}

// isConnected reports whether the slot's state says connected.
func (c *ctl) isConnected(ctx context.Context, appID, slot string) bool {
	conns, err := c.client.Connections(ctx, appID)
	if err != nil {
		return false
	}
	for _, cj := range conns {
		if cj.Slot == slot {
			return cj.State != nil && cj.State.Status == "connected"
		}
	}
	return false
}

// cancelLink cancels the flow with a context of its own: the command's
// has ended.
func (c *ctl) cancelLink(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.client.CancelFlow(ctx, id)
}

// terminalColumns is the width of w when it is a terminal, else 80.
func terminalColumns(w any) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	return 80
}
