package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/snug/snugd/api"
)

// lanSynopsis is snugd ctl lan's usage line.
const lanSynopsis = "lan discover [--timeout 3s] [--json]"

// ctlLAN is snugd ctl lan discover: it browses the local network for Hue
// bridges (mDNS, on demand only, at most 10 s) and prints what answered.
// Every field is the bridge's claim; only pairing's pin proves anything.
func ctlLAN(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags(lanSynopsis)
	timeout := fs.Duration("timeout", 0, "how long to listen (default 3s, at most 10s)")
	pos, code, ok := c.args(fs, args, "discover")
	if !ok {
		return code
	}
	if pos[0] != "discover" {
		fmt.Fprintf(c.e.stderr, "%s: unknown subcommand (want discover)\n", c.name)
		return exitUsage
	}
	d, err := c.client.BrowseLAN(ctx, *timeout)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		return c.printJSON(d)
	}
	printBridges(c, d)
	return exitOK
}

// printBridges prints a discovery as a numbered table; the numbers are
// what snugd ctl pair lan asks the person to pick from. Each entry that
// cannot be chosen says why (two devices claiming one bridge name both
// addresses), and the notes on the limit follow the table.
func printBridges(c *ctl, d api.LANDiscoverResponse) {
	if len(d.Bridges) == 0 {
		c.out("no Hue bridge answered on the local network")
	} else {
		c.out("%-3s %-16s %-15s %-8s %s", "#", "BRIDGE ID", "ADDRESS", "MODEL", "NAME")
	}
	for i, b := range d.Bridges {
		c.out("%-3d %-16s %-15s %-8s %s", i+1, orDash(b.ID), orDash(b.Address), orDash(b.ModelID), orDash(trustName(b.Name)))
		if !b.Selectable {
			c.out("    not selectable: %s", b.Reason)
		}
	}
	if conflicted(d) {
		c.out("a device claiming to be a bridge it is not would receive the bridge's key: check which address is your bridge's")
		c.out("(the Hue app shows it under Settings, Bridges) and pair with --address")
	}
	if d.LimitReached {
		c.out("more devices answered than are listed: the list stops at the device limit")
	}
	if d.Truncated {
		c.out("some answers were left out: a device announced too many services, or too many answers could not be chosen")
	}
}

// conflicted reports whether two devices claimed one bridge.
func conflicted(d api.LANDiscoverResponse) bool {
	for _, b := range d.Bridges {
		if len(b.Conflicts) > 0 {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// discoverTimeout is how long ctl pair lan listens when it discovers.
const discoverTimeout = 3 * time.Second
