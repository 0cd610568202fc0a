package main

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/snug/snugd/api"
)

const confirmsSynopsis = "confirms [--watch] [--json] | confirms allow ID [--session] | confirms deny ID"

// ctlConfirms is snugd ctl confirms [--watch] | allow ID [--session] |
// deny ID: the pending confirmations of gate 6, FIFO, and their decision.
func ctlConfirms(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags(confirmsSynopsis)
	watch := fs.Bool("watch", false, "keep listing confirms as they arrive (the event stream) until interrupted")
	session := fs.Bool("session", false, "allow: remember the answer for this app, host and method until snugd restarts")
	pos, code, ok := parseCtlArgs(fs, args, 2)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		if (pos[0] != "allow" && pos[0] != "deny") || len(pos) != 2 || *watch || (*session && pos[0] == "deny") {
			fmt.Fprintf(c.e.stderr, "usage: snugd ctl %s\n", confirmsSynopsis)
			return exitUsage
		}
		remember := "once"
		if *session {
			remember = "session"
		}
		if err := c.client.DecideConfirm(ctx, pos[1], api.DecisionRequest{Decision: pos[0], Remember: remember}); err != nil {
			return c.fail(err)
		}
		if c.json {
			return c.printJSON(map[string]string{"id": pos[1], "decision": pos[0], "remember": remember})
		}
		c.out("confirm %s: %s (%s)", pos[1], pos[0], remember)
		return exitOK
	}
	list, err := c.client.Confirms(ctx)
	if err != nil {
		return c.fail(err)
	}
	if c.json && !*watch {
		if list == nil {
			list = []api.ConfirmJSON{}
		}
		return c.printJSON(map[string]any{"confirms": list})
	}
	seen := map[string]bool{}
	for _, cf := range list {
		seen[cf.ID] = true
		c.printConfirm(cf)
	}
	if !*watch {
		if len(list) == 0 {
			c.out("no pending confirms")
		}
		return exitOK
	}
	err = c.client.Events(ctx, func(ev api.Event) error {
		if ev.Type != "confirm-pending" || seen[ev.Data.ID] {
			return nil
		}
		seen[ev.Data.ID] = true
		cf, err := c.client.Confirm(ctx, ev.Data.ID)
		if err != nil {
			return nil // decided or expired meanwhile: nothing to show
		}
		c.printConfirm(cf)
		return nil
	})
	if err != nil && ctx.Err() == nil {
		return c.fail(err)
	}
	return exitOK
}

// printConfirm shows one confirm: what would be sent, where, for whom.
// The body is the app's own request body (no credential is rendered before
// the confirm), previewed, never the credentialed request.
func (c *ctl) printConfirm(cf api.ConfirmJSON) {
	if c.json {
		c.printJSON(cf)
		return
	}
	who := cf.AppID
	if cf.Slot != "" {
		who += "/" + cf.Slot
	}
	c.out("%s  %s %s", cf.ID, cf.Method, cf.URL)
	c.out("    host %s, for %s, expires %s", cf.Host, who, cf.ExpiresAt.UTC().Format(time.RFC3339))
	if cf.BodyPreview != "" {
		c.out("    body %s", preview(cf.BodyPreview, 200))
	}
	c.out("    decide: snugd ctl confirms allow %s [--session] | snugd ctl confirms deny %s", cf.ID, cf.ID)
}

// preview quotes at most n characters of s on one line.
func preview(s string, n int) string {
	if utf8.RuneCountInString(s) > n {
		r := []rune(s)
		s = string(r[:n]) + "…"
	}
	return strings.Trim(fmt.Sprintf("%q", s), `"`)
}
