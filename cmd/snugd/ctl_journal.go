package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

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
			return exitOK
		}
		c.printJournal(newestFirst(entries))
		return exitOK
	}
	// Follow: print oldest first, then poll for newer entries. Bounded only
	// by the user's interrupt, one request a second.
	var last int64
	if !c.json {
		fmt.Fprintln(c.e.stdout, padRow(journalColumns, journalWidths))
	}
	entries = newestFirst(entries)
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
		fresh := newestFirst(page.Entries)
		seen := last
		for i := len(fresh) - 1; i >= 0; i-- {
			if e := fresh[i]; e.ID > seen {
				c.printEntry(e)
				last = max(last, e.ID)
			}
		}
	}
}

// newestFirst orders entries by their time, newest first, the newer id
// first between equal times. The API pages by id, the order rows were
// written in; an entry is written when its request ends but carries the
// time it began, so a slow request's row lands above quicker ones that
// began after it. A person reads the TIME column: it must not go back
// and forth.
func newestFirst(entries []api.JournalEntryJSON) []api.JournalEntryJSON {
	out := slices.Clone(entries)
	slices.SortStableFunc(out, func(a, b api.JournalEntryJSON) int {
		if c := b.At.Compare(a.At.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

// journalHeader is the human journal's header; journalRow formats a row
// to the same columns.
var journalColumns = []string{"TIME", "APP/SLOT", "METHOD", "HOST", "OUTCOME", "DETAIL"}

func (c *ctl) printEntry(e api.JournalEntryJSON) {
	if c.json {
		c.printJSONLine(e)
		return
	}
	fmt.Fprintln(c.e.stdout, padRow(journalRow(e), journalWidths))
}

// journalWidths are the fixed column widths of journal --follow, where rows
// arrive one at a time; the listing aligns to its widest cells instead.
var journalWidths = []int{20, 24, 6, 28, 9}

// journalRow returns an entry's cells: the host is the one the request
// went to (a connection URL's resolved host, for the administrator); the
// detail says which gate refused with which code, the upstream status,
// and who decided (the user, a timeout, a standing approval).
func journalRow(e api.JournalEntryJSON) []string {
	who := shown(e.AppID)
	if who == "" {
		who = "-" // a host act (pair, unpair) or an import in all
	}
	if e.Slot != "" {
		who += "/" + e.Slot
	}
	host := e.Host
	var detail []string
	if e.ResolvedHost != "" {
		host = e.ResolvedHost
		detail = append(detail, "via "+e.Host)
	}
	if host == "" {
		host = "-"
	}
	method := e.Method
	if method == "" {
		method = "-"
	}
	if e.Code != "" {
		d := e.Code
		if e.Gate != "" {
			d += " at " + gateWords(e.Gate)
		}
		detail = append([]string{d}, detail...)
	}
	if e.Act != "" {
		detail = append([]string{shown(e.Act)}, detail...)
	}
	if e.Count > 1 {
		d := fmt.Sprintf("×%d", e.Count)
		if e.LastAt != nil {
			d += " until " + e.LastAt.UTC().Format(time.RFC3339)
		}
		detail = append(detail, d)
	}
	if e.Status != 0 {
		detail = append(detail, fmt.Sprintf("HTTP %d", e.Status))
	}
	if e.Note != "" {
		detail = append(detail, shown(e.Note))
	}
	if e.Unattended {
		detail = append(detail, "unattended")
	}
	if e.Outcome == api.OutcomeSentUnknown {
		// Written before the send and never completed: snugd stopped
		// (or the request is still in flight).
		detail = append([]string{"sent, outcome unknown"}, detail...)
	}
	return []string{e.At.UTC().Format(time.RFC3339), who, method, shown(host), e.Outcome, strings.Join(detail, "; ")}
}

// gateWords names an executor gate in plain words for the journal's
// detail ("NET_SSRF_BLOCKED at the address check"); --json keeps the
// gate's id.
func gateWords(gate string) string {
	switch gate {
	case "shape":
		return "the request's shape"
	case "resolution":
		return "finding the connection"
	case "binding":
		return "the app's identity"
	case "grant":
		return "the approved connection"
	case "ceiling":
		return "the approved hosts"
	case "ssrf":
		return "the address check"
	case "confirm":
		return "the confirmation"
	case "local":
		return "the local helper"
	case "inject":
		return "adding the credentials"
	case "fetch":
		return "sending"
	case "read":
		return "reading the answer"
	}
	return shown(gate)
}

// printJournal prints entries under a header, aligned to the widest cell.
func (c *ctl) printJournal(entries []api.JournalEntryJSON) {
	tw := tabwriter.NewWriter(newTrimWriter(c.e.stdout), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(journalColumns, "\t"))
	for _, e := range entries {
		fmt.Fprintln(tw, strings.Join(journalRow(e), "\t"))
	}
	tw.Flush()
}

// padRow pads each cell but the last to its width (at least), two spaces
// apart.
func padRow(cells []string, widths []int) string {
	var b strings.Builder
	for i, cell := range cells {
		if i == len(cells)-1 {
			b.WriteString(cell)
			break
		}
		w := 0
		if i < len(widths) {
			w = widths[i]
		}
		b.WriteString(cell)
		for n := utf8.RuneCountInString(cell); n < w; n++ {
			b.WriteByte(' ')
		}
		b.WriteString("  ")
	}
	return strings.TrimRight(b.String(), " ")
}
