package main

import (
	"context"
	"fmt"
	"time"

	"github.com/snug/snugd/api"
)

const hostsSynopsis = "hosts list|approve CODE|deny CODE|revoke ID [--json]"

// ctlHosts is snugd ctl hosts list|approve CODE|deny CODE|revoke ID.
// Approving a pairing code is possible on the ctl channel only (DESIGN.md):
// it is how the user says "yes, that host is mine".
func ctlHosts(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags(hostsSynopsis)
	pos, code, ok := parseCtlArgs(fs, args, 2)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		pos = []string{"list"}
	}
	want := map[string]string{"list": "", "approve": "CODE", "deny": "CODE", "revoke": "ID"}
	arg, known := want[pos[0]]
	switch {
	case !known:
		fmt.Fprintf(c.e.stderr, "%s: unknown subcommand %q\n", c.name, pos[0])
		fs.Usage()
		return exitUsage
	case arg == "" && len(pos) > 1:
		fmt.Fprintf(c.e.stderr, "%s: %s takes no argument\n", c.name, pos[0])
		return exitUsage
	case arg != "" && len(pos) != 2:
		fmt.Fprintf(c.e.stderr, "%s: %s needs %s\n", c.name, pos[0], arg)
		return exitUsage
	}
	switch pos[0] {
	case "approve", "deny":
		call := c.client.ApproveHost
		if pos[0] == "deny" {
			call = c.client.DenyHost
		}
		p, err := call(ctx, pos[1])
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			return c.printJSON(api.DecisionResponse{Pairing: p}) // the API's answer, as is
		}
		c.out("%s: %q (%s%s) is %s", p.Code, p.Name, p.Surface, originSuffix(p.Origin), p.State)
		if p.State == "approved" {
			c.out("the host receives its token when it redeems the pairing")
		}
		return exitOK
	case "revoke":
		if err := c.client.DeleteHost(ctx, pos[1]); err != nil {
			return c.fail(err)
		}
		if c.json {
			return c.printJSON(map[string]any{"hostId": pos[1], "deleted": true})
		}
		c.out("host %s unpaired: its token no longer works", pos[1])
		return exitOK
	}
	hs, err := c.client.Hosts(ctx)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		return c.printJSON(hs)
	}
	if len(hs.Hosts) == 0 {
		c.out("no paired hosts")
	}
	for _, h := range hs.Hosts {
		seen := "never seen"
		if h.LastSeenAt != nil {
			seen = "last seen " + h.LastSeenAt.UTC().Format(time.RFC3339)
		}
		c.out("%s  %q (%s%s), paired %s, %s", h.HostID, h.Name, h.Surface, originSuffix(h.Origin), h.CreatedAt.UTC().Format(time.RFC3339), seen)
	}
	if len(hs.Pending) > 0 {
		c.out("\nwaiting for approval (snugd ctl hosts approve CODE, or deny CODE):")
		for _, p := range hs.Pending {
			c.out("  %s  %q (%s%s), expires %s", p.Code, p.Name, p.Surface, originSuffix(p.Origin), p.ExpiresAt.UTC().Format(time.RFC3339))
		}
	}
	return exitOK
}

func originSuffix(origin string) string {
	if origin == "" {
		return ""
	}
	return ", " + origin
}
