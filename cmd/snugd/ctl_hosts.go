package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/internal/names"
)

const hostsSynopsis = "hosts list|approve CODE [--yes]|deny CODE|invite NAME|revoke ID [--json]"

// ctlHosts is snugd ctl hosts list|approve CODE|deny CODE|invite
// NAME|revoke ID. Approving a pairing code is possible on the ctl channel
// only (DESIGN.md): it is how the user says "yes, that host is mine".
// Inviting a desktop host by name says it before the host asks, in a lane
// no flood of pairing requests reaches.
func ctlHosts(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags(hostsSynopsis)
	yes := fs.Bool("yes", false, "approve without asking (needed without a terminal); read snugd ctl hosts list first")
	pos, code, ok := parseCtlArgs(fs, args, 2)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		pos = []string{"list"}
	}
	want := map[string]string{"list": "", "approve": "CODE", "deny": "CODE", "invite": "NAME", "revoke": "ID"}
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
		call, shownID := c.client.ApproveHost, ""
		if pos[0] == "deny" {
			call = c.client.DenyHost
		} else {
			id, code, ok := c.showPairing(ctx, pos[1], *yes)
			if !ok {
				return code
			}
			shownID = id
		}
		p, err := call(ctx, pos[1])
		if err != nil {
			return c.fail(err)
		}
		if shownID != "" && p.PairingID != shownID {
			// Codes are unique among pending requests, so this takes a
			// request expiring and another drawing its code in between.
			fmt.Fprintf(c.e.stderr, "%s: warning: the daemon approved pairing %s, not the request shown (%s); check snugd ctl hosts list and revoke what you do not recognise\n", c.name, shown(p.PairingID), shown(shownID))
		}
		if c.json {
			return c.printJSON(api.DecisionResponse{Pairing: p}) // the API's answer, as is
		}
		c.out("%s: %s is %s", p.Code, describePairing(p.Origin, p.Name, p.Surface), p.State)
		if p.State == "approved" {
			c.out("the host receives its token when it redeems the pairing")
		}
		return exitOK
	case "invite":
		return c.inviteHost(ctx, pos[1])
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
		c.out("%s  %s, paired %s, %s", h.HostID, describePairing(h.Origin, h.Name, h.Surface), h.CreatedAt.UTC().Format(time.RFC3339), seen)
	}
	if len(hs.Pending) > 0 {
		c.out("\nwaiting for approval (snugd ctl hosts approve CODE, or deny CODE):")
		for _, p := range hs.Pending {
			c.out("  %s  %s, asked %s ago, expires %s", p.Code, describePairing(p.Origin, p.Name, p.Surface), age(time.Since(p.CreatedAt.Time)), p.ExpiresAt.UTC().Format(time.RFC3339))
		}
	}
	if len(hs.Invitations) > 0 {
		c.out("\ninvitations not used yet (snugd ctl hosts invite NAME replaces one):")
		for _, i := range hs.Invitations {
			c.out("  %s (%s), invited %s ago, expires %s", names.Display(i.Name), i.Surface, age(time.Since(i.CreatedAt.Time)), i.ExpiresAt.UTC().Format(time.RFC3339))
		}
	}
	return exitOK
}

// inviteHost is snugd ctl hosts invite NAME: it mints a pairing invitation
// for the desktop host that will pair as NAME and prints it, the one time
// it is ever shown (snugd keeps only its hash), with what to do with it
// and when it expires.
func (c *ctl) inviteHost(ctx context.Context, name string) int {
	inv, err := c.client.InviteHost(ctx, name)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		return c.printJSON(inv) // the API's answer, as is
	}
	left := time.Until(inv.ExpiresAt.Time).Round(time.Minute)
	c.out("invitation for the desktop host %s:", names.Display(inv.Name))
	c.out("")
	c.out("    %s", inv.Invitation)
	c.out("")
	c.out("enter it where that desktop app asks for a pairing invitation, and have it pair under the name %s: it pairs that one host, already approved, and cannot be used again", names.Display(inv.Name))
	c.out("it expires at %s (in %s); it is shown only now, so if it is lost, invite the name again", inv.ExpiresAt.UTC().Format(time.RFC3339), age(left))
	return exitOK
}

// describePairing names a host origin first: the origin is what the token
// is bound to, and the name is whatever the asking page chose to call
// itself. Every part is shown (ctl_text.go), so a name cannot carry a
// second origin behind a bidi override, and the name goes through the
// names rule's Display: quoted, and flagged with what it looks like when
// it mixes scripts or uses fullwidth or lookalike letters.
func describePairing(origin, name, surface string) string {
	if origin == "" {
		origin = "(no origin: a desktop app on this machine)"
	}
	return fmt.Sprintf("%s (%s) calling itself %s", shown(origin), shown(surface), names.Display(name))
}

// showPairing prints the pending pairing request with code — origin,
// name, surface and age — and asks y/N on a terminal (--yes without
// one), before snugd ctl hosts approve acts. It returns the id of the
// request shown. A code that matches no
// pending request is refused here, without asking the daemon to act on
// it: what is approved is only ever a request that was shown.
func (c *ctl) showPairing(ctx context.Context, code string, yes bool) (pairingID string, exit int, ok bool) {
	hs, err := c.client.Hosts(ctx)
	if err != nil {
		return "", c.fail(err), false
	}
	want := pairingCodeKey(code)
	var p *api.PairingJSON
	for i := range hs.Pending {
		if want != "" && pairingCodeKey(hs.Pending[i].Code) == want {
			p = &hs.Pending[i]
		}
	}
	if p == nil {
		fmt.Fprintf(c.e.stderr, "%s: no pending pairing request has that code (it may have expired): snugd ctl hosts list shows them\n", c.name)
		return "", exitNo, false
	}
	if !c.json {
		origin := p.Origin
		if origin == "" {
			origin = "(none: a desktop app on this machine, not a web page)"
		}
		c.out("pairing request %s", p.Code)
		c.out("  origin   %s", origin)
		c.out("  name     %s (chosen by the host itself)", names.Display(p.Name))
		c.out("  surface  %s", p.Surface)
		c.out("  asked    %s ago (%s)", age(time.Since(p.CreatedAt.Time)), p.CreatedAt.UTC().Format(time.RFC3339))
		c.out("approving lets this host create apps and ask for their connections on this device")
	}
	if ok, code := c.confirm(yes, "approve this host?"); !ok {
		return "", code, false
	}
	return p.PairingID, 0, true
}

// pairingCodeKey reads a pairing code as the daemon does: case, spaces
// and dashes do not matter, and O, I and L read as 0, 1 and 1.
func pairingCodeKey(code string) string {
	return strings.NewReplacer(" ", "", "-", "", "O", "0", "I", "1", "L", "1").Replace(strings.ToUpper(code))
}

// age is a duration as a person reads it: seconds, minutes or hours.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d/time.Second), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	default:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}
