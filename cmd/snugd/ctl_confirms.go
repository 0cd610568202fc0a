package main

import (
	"bytes"
	"context"
	"encoding/json"
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
// the confirm), previewed: indented when it is JSON, cut visibly when long.
func (c *ctl) printConfirm(cf api.ConfirmJSON) {
	if c.json {
		c.printJSONLine(cf)
		return
	}
	who := shown(cf.AppID)
	if cf.Slot != "" {
		who += "/" + cf.Slot
	}
	c.out("confirm %s", cf.ID)
	c.out("  request  %s %s", cf.Method, shown(cf.URL))
	c.out("  host     %s", shown(cf.Host))
	c.out("  for      %s", who)
	c.out("  expires  %s (in %s)", cf.ExpiresAt.UTC().Format(time.RFC3339), max(time.Until(cf.ExpiresAt.Time).Round(time.Second), 0))
	if cf.BodyPreview != "" {
		lines := bodyPreview(cf.BodyPreview, previewLines, previewChars)
		c.out("  body     %s", lines[0])
		for _, l := range lines[1:] {
			c.out("           %s", l)
		}
	}
	c.out("  decide   snugd ctl confirms allow %s [--session] | snugd ctl confirms deny %s", cf.ID, cf.ID)
}

// How much of a body a confirm shows.
const (
	previewLines = 20
	previewChars = 2000
)

// bodyPreview renders a request body for a person: JSON indented by two
// spaces, anything else as is; every control character made visible; cut
// after maxLines lines or maxChars characters with a line saying how much
// is not shown.
func bodyPreview(body string, maxLines, maxChars int) []string {
	text := body
	var buf bytes.Buffer
	if json.Valid([]byte(body)) && json.Indent(&buf, []byte(body), "", "  ") == nil {
		text = buf.String()
	}
	total := utf8.RuneCountInString(text)
	var out []string
	used := 0 // characters consumed, newlines included
	for _, line := range strings.Split(text, "\n") {
		n := utf8.RuneCountInString(line)
		if len(out) == maxLines || used+n > maxChars {
			if len(out) < maxLines && used < maxChars {
				keep := maxChars - used
				out = append(out, shown(string([]rune(line)[:keep])))
				used += keep
			}
			out = append(out, fmt.Sprintf("… (%d more characters not shown)", max(total-used, 1)))
			return out
		}
		out = append(out, shown(line))
		used += n + 1
	}
	return out
}
