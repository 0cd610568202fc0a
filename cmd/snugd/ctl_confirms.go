package main

import (
	"context"
	"errors"
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
	if *watch {
		return c.watchConfirms(ctx)
	}
	list, err := c.client.Confirms(ctx)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		if list == nil {
			list = []api.ConfirmJSON{}
		}
		return c.printJSON(map[string]any{"confirms": list})
	}
	if len(list) == 0 {
		c.out("no pending confirms")
	}
	for _, cf := range list {
		c.printConfirm(cf)
	}
	return exitOK
}

// watchConfirms prints every pending confirm once, as it arrives, until
// ctx is done. It lists the pending confirms again on every confirm-pending
// hint of the event stream, and every two seconds in case a confirm was
// parked while the stream was connecting.
func (c *ctl) watchConfirms(ctx context.Context) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hints := make(chan struct{}, 1)
	streamErr := make(chan error, 1)
	// The stream lives until ctx is cancelled or the daemon ends it.
	go func() {
		streamErr <- c.client.Events(ctx, func(ev api.Event) error {
			if ev.Type == "confirm-pending" {
				select {
				case hints <- struct{}{}:
				default:
				}
			}
			return nil
		})
	}()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	seen := map[string]bool{}
	for {
		list, err := c.client.Confirms(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return exitOK
			}
			return c.fail(err)
		}
		for _, cf := range list {
			if !seen[cf.ID] {
				seen[cf.ID] = true
				c.printConfirm(cf)
			}
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-hints:
		case <-tick.C:
		case err := <-streamErr:
			if ctx.Err() != nil {
				return exitOK
			}
			if err == nil {
				err = errors.New("the daemon ended the event stream (it is shutting down)")
			}
			return c.fail(err)
		}
	}
}

// printConfirm shows one confirm: what would be sent, where, for whom.
// The body is the app's own request body (no credential is rendered before
// the confirm), previewed, never the credentialed request.
func (c *ctl) printConfirm(cf api.ConfirmJSON) {
	if c.json {
		c.printJSONLine(cf)
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
