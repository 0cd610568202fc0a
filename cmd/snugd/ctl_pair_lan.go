package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/snug/snugd/api"
)

// ctlPairLAN is snugd ctl pair lan APP SLOT [--address A] [--repin]: the
// exchange ceremony of a Hue bridge, in the required order
// (collect, approve, freeze, pair). Without --address and without a
// collected address it discovers and lets the person pick; it collects the
// address, shows the review and approves exactly it (--yes without a
// terminal), then starts the pairing and says to press the link button,
// counting down to the flow's deadline. On a bridge already paired it
// shows the pinned and the presented certificate fingerprints and asks
// before pairing again (--yes: without asking); --repin says so even
// before the row is read.
func ctlPairLAN(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("pair lan APP SLOT [--address A] [--repin] [--yes] [--json]")
	address := fs.String("address", "", "the bridge's RFC-1918 IPv4 address; without it snugd discovers bridges and asks")
	repin := fs.Bool("repin", false, "pair a bridge already paired again, for a new key or a changed certificate (shows both fingerprints and asks; the default on a paired bridge)")
	yes := fs.Bool("yes", false, "approve, and pair a paired bridge again, without asking (needed without a terminal)")
	pos, code, ok := c.args(fs, args, "APP", "SLOT")
	if !ok {
		return code
	}
	appID, slot := pos[0], pos[1]
	cn, err := c.connection(ctx, appID, slot)
	if err != nil {
		return c.fail(err)
	}
	if *address == "" && !*repin && !collected(cn) {
		picked, code, ok := c.pickBridge(ctx, *yes)
		if !ok {
			return code
		}
		*address = picked
	}
	if *address != "" && (!collected(cn) || cn.AllowedHosts[0] != *address || cn.Status != "approved") {
		p, err := c.client.CollectLANAddress(ctx, appID, slot, *address)
		if err != nil {
			return c.fail(err)
		}
		cn = p.Connection
		if !c.json {
			c.out("collected %s for %s/%s", *address, appID, slot)
		}
	}
	// Approval freezes the address; pairing runs only after it.
	switch {
	case cn.Status == "declared":
		if code := ctlApprove("approve")(ctx, c, approveArgs(appID, slot, *yes)); code != exitOK {
			return code
		}
	case cn.NeedsReapproval:
		if code := ctlApprove("reapprove")(ctx, c, approveArgs(appID, slot, *yes)); code != exitOK {
			return code
		}
	}
	req := api.LANPairRequest{}
	if *repin || (cn.State != nil && cn.State.LANPin != nil) {
		// A paired bridge: pairing again replaces its application key
		// (and its pin, when the certificate changed), so ask first. The
		// old key keeps working until the new one is stored.
		probe, err := c.client.ProbeLAN(ctx, appID, slot)
		if err != nil {
			return c.fail(err)
		}
		c.out("pinned certificate     sha256 %s", orDash(probe.PreviousFingerprint))
		c.out("presented certificate  sha256 %s (bridge %s, %s)", probe.Fingerprint, orDash(probe.BridgeID), orDash(probe.ModelID))
		question := "pin the presented certificate and pair again?"
		if probe.PreviousFingerprint == probe.Fingerprint {
			c.out("%s/%s is paired with this bridge; pairing again replaces its application key (the old key keeps working until the new one is stored)", appID, slot)
			question = "pair again for a new application key?"
		} else {
			c.out("a changed certificate means the bridge was reset, or another device answers at its address")
		}
		if ok, code := c.confirm(*yes, question); !ok {
			return code
		}
		req = api.LANPairRequest{Repin: true, Fingerprint: probe.Fingerprint}
	}
	f, err := c.client.PairLAN(ctx, appID, slot, req)
	if err != nil {
		return c.fail(err)
	}
	f, err = c.followLANFlow(ctx, f)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		return c.printJSON(f)
	}
	if f.State != "paired" {
		bridge := *address
		if bridge == "" && collected(cn) {
			bridge = cn.AllowedHosts[0]
		}
		what, next := lanFailure(f.State, f.Message, bridge, appID, slot)
		fmt.Fprintf(c.e.stderr, "%s: %s\nnext: %s\n", c.name, shown(what), shown(next))
		return exitNo
	}
	c.out("paired %s/%s with %s; certificate pinned: sha256 %s", appID, slot, orDash(trustName(f.Label)), f.Fingerprint)
	c.out("the application key is stored write-only; a changed certificate will be refused, never trusted silently")
	return exitOK
}

// approveArgs are the arguments ctl approve takes for the ceremony.
func approveArgs(appID, slot string, yes bool) []string {
	args := []string{appID, slot}
	if yes {
		args = append(args, "--yes")
	}
	return args
}

// collected reports whether an approved row's frozen ceiling holds a
// collected address (or a declared row asks for one).
func collected(cn api.ConnectionJSON) bool {
	return len(cn.AllowedHosts) == 1
}

// connection reads one row.
func (c *ctl) connection(ctx context.Context, appID, slot string) (api.ConnectionJSON, error) {
	conns, err := c.client.Connections(ctx, appID)
	if err != nil {
		return api.ConnectionJSON{}, err
	}
	for _, cn := range conns {
		if cn.Slot == slot {
			return cn, nil
		}
	}
	return api.ConnectionJSON{}, fmt.Errorf("%s has no connection %s: declare it first (the app or snugd ctl)", appID, slot)
}

// pickBridge discovers and lets the person choose a selectable bridge: on
// a terminal by number; without one, with --yes, only when the discovery
// heard exactly one entry, selectable, with no conflict and below the
// limit. Anything else is not a choice to make for the person: it refuses
// with a sentence saying why and how to pick.
func (c *ctl) pickBridge(ctx context.Context, yes bool) (string, int, bool) {
	c.out("looking for Hue bridges on the local network…")
	d, err := c.client.BrowseLAN(ctx, discoverTimeout)
	if err != nil {
		return "", c.fail(err), false
	}
	bridges := d.Bridges
	printBridges(c, d)
	var selectable []int
	for i, b := range bridges {
		if b.Selectable {
			selectable = append(selectable, i)
		}
	}
	switch {
	case len(selectable) == 0:
		fmt.Fprintf(c.e.stderr, "%s: no selectable bridge answered: pass --address with the bridge's IP address (the Hue app shows it under Settings, Bridges)\n", c.name)
		return "", exitNo, false
	case !interactive(c.e.stdin):
		if !yes {
			fmt.Fprintf(c.e.stderr, "%s: not asking without a terminal: pass --address\n", c.name)
			return "", exitUsage, false
		}
		if why := notAutomatic(d); why != "" {
			fmt.Fprintf(c.e.stderr, "%s: not choosing a bridge for you: %s; pass --address with your bridge's IP address (the Hue app shows it under Settings, Bridges), or run on a terminal to pick one by number\n", c.name, why)
			return "", exitNo, false
		}
		return bridges[selectable[0]].Address, exitOK, true
	}
	fmt.Fprintf(c.e.stdout, "pair with which bridge? [number] ")
	line, _ := bufio.NewReader(io.LimitReader(c.e.stdin, 64)).ReadString('\n')
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || n < 1 || n > len(bridges) || !bridges[n-1].Selectable {
		fmt.Fprintf(c.e.stderr, "%s: not a selectable bridge's number\n", c.name)
		return "", exitNo, false
	}
	return bridges[n-1].Address, exitOK, true
}

// notAutomatic says why --yes may not pick the discovery's one
// selectable entry; "" when it may (exactly one entry was heard, it is
// selectable, no conflict was seen and the limit was not reached).
func notAutomatic(d api.LANDiscoverResponse) string {
	for _, b := range d.Bridges {
		if len(b.Conflicts) > 0 {
			return "more than one device claims to be the same bridge (" + strings.Join(b.Conflicts, ", ") + ")"
		}
	}
	switch {
	case d.LimitReached:
		return "more devices answered than are listed"
	case d.Truncated:
		return "some answers were left out"
	case len(d.Bridges) > 1:
		return fmt.Sprintf("%d entries answered", len(d.Bridges))
	}
	return ""
}

// flowPoll is how often ctl reads a pairing flow.
const flowPoll = 500 * time.Millisecond

// followLANFlow polls the flow until it ends, telling the person to press
// the link button with a countdown to the flow's deadline. It is bounded
// by the flow's own expiry.
func (c *ctl) followLANFlow(ctx context.Context, f api.FlowJSON) (api.FlowJSON, error) {
	told := false
	last := time.Duration(-1)
	until := f.ExpiresAt.Add(5 * time.Second)
	for f.State == "verifying" || f.State == "press-button" {
		if time.Now().After(until) {
			return f, errors.New("the pairing flow did not end in time")
		}
		if f.State == "press-button" && !c.json {
			if !told {
				c.out("press the round link button on the bridge now")
				told = true
			}
			if f.Deadline != nil {
				left := time.Until(f.Deadline.Time).Truncate(5 * time.Second)
				if left >= 0 && left != last {
					c.out("  %d s left", int(left/time.Second))
					last = left
				}
			}
		}
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case <-time.After(flowPoll):
		}
		var err error
		if f, err = c.client.LANPairFlow(ctx, f.FlowID); err != nil {
			return f, err
		}
	}
	return f, nil
}
