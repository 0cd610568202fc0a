package main

import (
	"context"
	"fmt"
	"time"

	"github.com/snug/snugd/api"
)

// ctlJournal is snugd ctl journal [--follow] [--json]: unattended acts and
// executor decisions, newest first, metadata only (no URL query, no body,
// no credential).
func ctlJournal(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("journal [--follow] [--app APP] [--json]")
	follow := fs.Bool("follow", false, "keep printing new entries until interrupted")
	appID := fs.String("app", "", "only this app's entries")
	if _, code, ok := c.args(fs, args); !ok {
		return code
	}
	page, err := c.client.Journal(ctx, api.JournalOptions{AppID: *appID})
	if err != nil {
		return c.fail(err)
	}
	entries := page.Entries
	if !*follow {
		if c.json {
			if page.Entries == nil {
				page.Entries = []api.JournalEntryJSON{}
			}
			return c.printJSON(page) // GET /v1/journal's schema
		}
		if len(entries) == 0 {
			c.out("the journal is empty")
		}
		for _, e := range entries {
			c.printEntry(e)
		}
		return exitOK
	}
	// Follow: print oldest first, then poll for newer entries. Bounded only
	// by the user's interrupt, one request a second.
	var last int64
	for i := len(entries) - 1; i >= 0; i-- {
		c.printEntry(entries[i])
		last = max(last, entries[i].ID)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case <-tick.C:
		}
		page, err := c.client.Journal(ctx, api.JournalOptions{AppID: *appID})
		if err != nil {
			if ctx.Err() != nil {
				return exitOK
			}
			return c.fail(err)
		}
		for i := len(page.Entries) - 1; i >= 0; i-- {
			if e := page.Entries[i]; e.ID > last {
				c.printEntry(e)
				last = e.ID
			}
		}
	}
}

func (c *ctl) printEntry(e api.JournalEntryJSON) {
	if c.json {
		c.printJSONLine(e)
		return
	}
	what := e.Outcome
	if e.Code != "" {
		what += " " + e.Code
	}
	if e.Gate != "" {
		what += " at " + e.Gate
	}
	if e.Status != 0 {
		what += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	unattended := ""
	if e.Unattended {
		unattended = " [unattended]"
	}
	who := e.AppID
	if e.Slot != "" {
		who += "/" + e.Slot
	}
	c.out("%s  %s %s %s  %s%s", e.At.UTC().Format(time.RFC3339), who, e.Method, e.Host, what, unattended)
}
