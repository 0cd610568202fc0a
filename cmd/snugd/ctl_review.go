package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/snug/snugd/api"
)

// ctlReview is snugd ctl review APP SLOT [--json]: what a review or
// re-approval screen shows: the field-by-field diff
// current → pending, the hosts approval freezes, scopes verbatim, the
// registration instructions as a numbered plain-text list (never markup,
// never links), the console URL with its full host, provenance and the
// registry-borrow disclosure, and a prior revocation.
func ctlReview(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("review APP SLOT [--json]")
	pos, code, ok := c.args(fs, args, "APP", "SLOT")
	if !ok {
		return code
	}
	rv, err := c.client.Review(ctx, pos[0], pos[1])
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		return c.printJSON(rv)
	}
	printReview(c, rv)
	cn := rv.Connection
	switch {
	case cn.NeedsReapproval:
		c.out("\nto accept the change: snugd ctl reapprove %s %s", cn.AppID, cn.Slot)
	case cn.Status == "declared":
		c.out("\nto approve: snugd ctl approve %s %s", cn.AppID, cn.Slot)
	}
	return exitOK
}

// printReview prints what a review shows, every outside string shown
// (ctl_text.go): snugd ctl review, and snugd ctl approve and reapprove
// before they ask.
func printReview(c *ctl, rv api.ReviewResponse) {
	cn := rv.Connection
	s := summarize(cn.Requirement)
	c.out("%s/%s: %s (%s), %s", cn.AppID, cn.Slot, s.Provider.Name, s.Kind, cn.Status)
	c.out("proposed by  %s (%s)", cn.Provenance, postureWords(rv.Posture))
	if cn.Confidence != nil {
		c.out("confidence   %.2f, as claimed by the proposer: display only, never an approval input", *cn.Confidence)
	}
	if rv.Borrowed {
		c.out("registry     %s", rv.Disclosure)
	}
	if cn.Imported {
		printImported(c, rv.Replaced)
	}
	if cn.RevokedAt != nil {
		c.out("revoked      %s: this connection was revoked before and is being reconnected", stamp(cn.RevokedAt))
	}
	hostsLine := func(label string, hosts []string) {
		if len(hosts) == 0 {
			c.out("%s none: every request is refused until a host is known", label)
			return
		}
		c.out("%s %s", label, strings.Join(hosts, ", "))
	}
	if cn.NeedsReapproval {
		hostsLine("hosts now   ", rv.Hosts)
		hostsLine("hosts after ", rv.PendingHosts)
	} else if cn.Status == "approved" {
		hostsLine("hosts       ", rv.Hosts)
	} else {
		hostsLine("may reach   ", rv.Hosts)
	}
	if len(rv.Scopes) > 0 {
		c.out("scopes       %s", strings.Join(rv.Scopes, " "))
	}
	if cn.NeedsReapproval && rv.PendingScopes != nil {
		c.out("scopes after %s", strings.Join(rv.PendingScopes, " "))
	}
	if rv.ConsoleURL != "" {
		c.out("console      %s (host: %s)", rv.ConsoleURL, rv.ConsoleHost)
	}
	if len(rv.Instructions) > 0 {
		c.out("instructions")
		for i, step := range rv.Instructions {
			// Plain text, numbered by snugd: the steps came from an
			// untrusted channel and are never rendered as markup or links.
			c.out("  %d. %s", i+1, step)
		}
	}
	if rv.PairingFamily != "" {
		what, cmd := pairingWords(rv.PairingFamily)
		switch {
		case rv.PairingOwed && cn.Status == "approved":
			c.out("pairing      not done yet: %s: snugd ctl %s %s %s", what, cmd, cn.AppID, cn.Slot)
		case rv.PairingOwed:
			c.out("pairing      not done yet: %s, after approval: snugd ctl %s %s %s", what, cmd, cn.AppID, cn.Slot)
		default:
			c.out("pairing      done (%s)", what)
		}
	}
	if len(rv.Diff) > 0 {
		c.out("changes (current → staged)")
		for _, ch := range rv.Diff {
			c.out("  %s: %s → %s", ch.Path, diffValue(ch.Old), diffValue(ch.New))
		}
	}
	if r := rv.Replaced; r != nil && len(r.Diff) > 0 {
		c.out("changes (the local row the import replaced → the imported row)")
		for _, ch := range r.Diff {
			c.out("  %s: %s → %s", ch.Path, diffValue(ch.Old), diffValue(ch.New))
		}
	}
}

// postureWords says in plain words how closely a review should be read
// (the API's posture: pinned, manual or strong).
func postureWords(posture string) string {
	switch posture {
	case "pinned":
		return "its values are those of snugd's built-in registry"
	case "manual":
		return "entered on this device"
	case "strong":
		return "not entered here: check every field below"
	}
	return "check every field below"
}

// pairingWords names a pairing family's ceremony in plain words, and the
// snugd ctl command that runs it.
func pairingWords(family string) (what, cmd string) {
	switch family {
	case "exchange":
		return "press the bridge's link button", "pair lan"
	case "token-claim":
		return "claim a SimpleFIN setup token", "pair claim"
	case "device-link":
		return "link the device by scanning its QR code", "pair link"
	}
	return "pair the device", "pair"
}

// printImported says what an imported row is, truthfully for a row that
// replaced a grant approved here and for one that did not.
func printImported(c *ctl, r *api.ReplacedJSON) {
	switch {
	case r == nil:
		c.out("imported     this row came in with a database import and has not been approved on this device")
	case r.Status == "approved":
		c.out("imported     this row came in with a database import and replaced a connection approved here on %s (v%d, hosts %s);", stamp(r.ApprovedAt), r.RequirementVersion, hostList(r.Hosts))
		c.out("             the imported row itself has not been approved on this device: the changes are listed below")
	default:
		c.out("imported     this row came in with a database import and replaced a %s row here (v%d); it has not been approved on this device", r.Status, r.RequirementVersion)
	}
	if r != nil && r.CredentialsCleared {
		c.out("credentials  wiped by the import: the imported row differs from the one they were entered for; enter them again after approving")
	}
}

func hostList(hosts []string) string {
	if len(hosts) == 0 {
		return "none"
	}
	return strings.Join(hosts, ", ")
}

// diffValue shows one side of a change: a JSON value as it is, or
// "(absent)".
func diffValue(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return "(absent)"
	}
	return string(v)
}
