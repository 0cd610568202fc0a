package main

import (
	"context"
	"encoding/json"
	"strings"
)

// ctlReview is snugd ctl review APP SLOT [--json]: what a review or
// re-approval screen shows (§12.3, §12.7, §12.12): the field-by-field diff
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
	cn := rv.Connection
	s := summarize(cn.Requirement)
	c.out("%s/%s: %s (%s), %s", cn.AppID, cn.Slot, s.Provider.Name, s.Kind, cn.Status)
	c.out("proposed by  %s (review posture: %s)", cn.Provenance, rv.Posture)
	if cn.Confidence != nil {
		c.out("confidence   %.2f, as claimed by the proposer: display only, never an approval input", *cn.Confidence)
	}
	if rv.Borrowed {
		c.out("registry     %s", rv.Disclosure)
	}
	if cn.Imported {
		c.out("imported     this row came in with a database import: it was never approved on this device")
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
			// Plain text, numbered by snugd (§12.7): the steps came from an
			// untrusted channel and are never rendered as markup or links.
			c.out("  %d. %s", i+1, step)
		}
	}
	if rv.PairingFamily != "" {
		owed := "done"
		if rv.PairingOwed {
			owed = "still owed"
		}
		c.out("pairing      %s (%s)", rv.PairingFamily, owed)
	}
	if len(rv.Diff) > 0 {
		c.out("changes (current → staged)")
		for _, ch := range rv.Diff {
			c.out("  %s: %s → %s", ch.Path, diffValue(ch.Old), diffValue(ch.New))
		}
	}
	switch {
	case cn.NeedsReapproval:
		c.out("\nto accept the change: snugd ctl reapprove %s %s", cn.AppID, cn.Slot)
	case cn.Status == "declared":
		c.out("\nto approve: snugd ctl approve %s %s", cn.AppID, cn.Slot)
	}
	return exitOK
}

// diffValue shows one side of a change: a JSON value as it is, or
// "(absent)".
func diffValue(v json.RawMessage) string {
	if len(v) == 0 || string(v) == "null" {
		return "(absent)"
	}
	return string(v)
}
