package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/snug/snugd/api"
)

// appsShareSynopsis is the part of snugd ctl apps this file runs.
const appsShareSynopsis = "apps share|unshare APP HOST_ID [--json]"

// ctlAppsShare is snugd ctl apps share|unshare APP HOST_ID: an
// app belongs to the paired host that first wrote a row for it, and only
// the administrator can give it to a second host (the user's desktop and
// web hosts of the same apps) or take it away. Unsharing the owner leaves
// the app to the administrator (the ctl channel only) until it is shared
// again. args starts with the verb; snugd ctl apps (the listing) hands
// share and unshare here.
func ctlAppsShare(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags(appsShareSynopsis)
	pos, code, ok := c.args(fs, args, "share|unshare", "APP", "HOST_ID")
	if !ok {
		return code
	}
	verb, app, host := pos[0], pos[1], pos[2]
	var (
		acc api.AccessResponse
		err error
	)
	switch verb {
	case "share":
		acc, err = c.client.ShareApp(ctx, app, host)
	case "unshare":
		acc, err = c.client.UnshareApp(ctx, app, host)
	default:
		fmt.Fprintf(c.e.stderr, "%s: unknown subcommand (want share or unshare)\n", c.name)
		return exitUsage
	}
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		return c.printJSON(acc)
	}
	names := hostNames(ctx, c)
	if verb == "share" {
		c.out("%s is shared with %s", app, names(host))
	} else {
		c.out("%s is no longer reachable by %s", app, names(host))
	}
	printAccess(c, acc, names)
	return exitOK
}

// printAccess prints who may reach an app over the host API.
func printAccess(c *ctl, acc api.AccessResponse, names func(string) string) {
	owner := "the administrator (ctl only; no host reaches it unless it is shared)"
	if acc.Owner != "" {
		owner = names(acc.Owner)
	}
	c.out("  owner    %s", owner)
	if len(acc.Shared) == 0 {
		c.out("  shared   with no other host")
		return
	}
	var hs []string
	for _, h := range acc.Shared {
		hs = append(hs, names(h))
	}
	c.out("  shared   with %s", strings.Join(hs, "; "))
}

// hostNames returns a function naming a host id with its origin and name,
// as the pairing list shows them; an id it cannot look up is shown as is.
func hostNames(ctx context.Context, c *ctl) func(string) string {
	byID := map[string]api.HostJSON{}
	if hs, err := c.client.Hosts(ctx); err == nil {
		for _, h := range hs.Hosts {
			byID[h.HostID] = h
		}
	}
	return func(id string) string {
		h, ok := byID[id]
		if !ok {
			return shown(id)
		}
		return shown(id) + " " + describePairing(h.Origin, h.Name, h.Surface)
	}
}
