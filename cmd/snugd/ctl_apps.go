package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/snug/snugd/api"
)

const appsSynopsis = "apps [list] [--json]"

// ctlApps is snugd ctl apps [list] [--json]: every app, its connections'
// states, and what needs attention, the way tailscale status lists peers.
func ctlApps(ctx context.Context, c *ctl, args []string) int {
	if len(args) > 0 && (args[0] == "share" || args[0] == "unshare") {
		return ctlAppsShare(ctx, c, args) // app ownership (ctl_apps_share.go)
	}
	fs := c.flags(appsSynopsis)
	pos, code, ok := parseCtlArgs(fs, args, 3)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		switch pos[0] {
		case "list":
			if len(pos) > 1 {
				fmt.Fprintf(c.e.stderr, "usage: snugd ctl %s\n", appsSynopsis)
				return exitUsage
			}
		default:
			fmt.Fprintf(c.e.stderr, "%s: unknown subcommand %q\nusage: snugd ctl %s\n", c.name, shown(pos[0]), appsSynopsis)
			return exitUsage
		}
	}
	apps, err := c.client.Apps(ctx)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		if apps == nil {
			apps = []api.AppJSON{}
		}
		return c.printJSON(api.AppsResponse{Apps: apps})
	}
	if len(apps) == 0 {
		c.out("no apps yet: a paired host proposes an app's connections (README.md, \"Your first connection\")")
		return exitOK
	}
	printApps(c.e.stdout, apps)
	if n := printAttention(c.e.stdout, apps); n == 0 {
		c.out("\nnothing needs attention")
	}
	return exitOK
}

// printApps prints one aligned row per connection under a header; the app
// id is written on its first row only.
func printApps(w io.Writer, apps []api.AppJSON) {
	tw := tabwriter.NewWriter(newTrimWriter(w), 0, 0, 2, ' ', 0)
	// An OWNER column joins after APP when app ownership lands.
	fmt.Fprintln(tw, "APP\tSLOT\tPROVIDER\tKIND\tSTATUS\tCREDENTIALS\tNOTES")
	for _, a := range apps {
		if len(a.Connections) == 0 {
			fmt.Fprintf(tw, "%s\t-\t\t\t\t\t\n", shown(a.AppID))
		}
		for i, cn := range a.Connections {
			app := ""
			if i == 0 {
				app = shown(a.AppID)
			}
			status := cn.Status
			if cn.NeedsReapproval {
				status += " (staged change)"
			}
			creds := "-"
			if cn.Credentials != nil {
				creds = *cn.Credentials
			}
			var notes []string
			if cn.Imported {
				notes = append(notes, "imported")
			}
			if cn.Invalid {
				notes = append(notes, "INVALID")
			}
			if cn.ExpiresAt != nil {
				notes = append(notes, "expires "+cn.ExpiresAt.UTC().Format(time.RFC3339))
			}
			if cn.LANPin != "" {
				notes = append(notes, "pinned "+shortPin(cn.LANPin))
			}
			if cn.Standing {
				notes = append(notes, "standing approval armed")
			}
			provider, kind := cn.Provider, cn.Kind
			if provider == "" {
				provider, kind = "(unreadable requirement)", "?"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", app, cn.Slot, shown(provider), kind, status, creds, strings.Join(notes, ", "))
		}
	}
	tw.Flush()
}

// printAttention prints what needs attention, one line each, and returns
// how many lines it printed.
func printAttention(w io.Writer, apps []api.AppJSON) int {
	n := 0
	for _, a := range apps {
		for _, at := range a.Attention {
			if n == 0 {
				fmt.Fprintln(w, "\nneeds attention:")
			}
			n++
			who := shown(a.AppID)
			if at.Slot != "" {
				who += "/" + at.Slot
			}
			fmt.Fprintf(w, "  %s: %s\n", who, shown(at.Message))
		}
	}
	return n
}

// shortPin shortens a certificate fingerprint for a table cell.
func shortPin(fp string) string {
	if len(fp) > 23 {
		return fp[:23] + "…"
	}
	return fp
}

// trimWriter drops the spaces tabwriter pads an empty last cell with. It
// writes whole lines only; tabwriter ends every flush with one.
type trimWriter struct {
	w    io.Writer
	part *[]byte // an unfinished line
}

func newTrimWriter(w io.Writer) trimWriter { return trimWriter{w: w, part: new([]byte)} }

func (t trimWriter) Write(p []byte) (int, error) {
	*t.part = append(*t.part, p...)
	for {
		i := bytes.IndexByte(*t.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := bytes.TrimRight((*t.part)[:i], " ")
		if _, err := t.w.Write(append(line, '\n')); err != nil {
			return 0, err
		}
		*t.part = (*t.part)[i+1:]
	}
}
