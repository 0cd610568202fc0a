package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/snug/snugd/api"
)

// ctlStatus is snugd ctl status [--json].
func ctlStatus(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("status [--json]")
	if _, code, ok := c.args(fs, args); !ok {
		return code
	}
	st, err := c.client.Status(ctx)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		return c.printJSON(st) // the schema of GET /v1/status (api/API.md)
	}
	up := time.Duration(st.UptimeSeconds) * time.Second
	c.out("snugd %s, up %s (since %s)", st.Version, up, st.StartedAt.UTC().Format(time.RFC3339))
	c.out("data dir     %s", st.DataDir)
	if st.Listen != "" {
		c.out("listen       http://%s", st.Listen)
	}
	c.out("policy       %s", st.TransportPolicy)
	switch {
	case st.Database == "damaged":
		c.out("database     DAMAGED: %s; every change is refused (restore a backup, or snugd ctl reset --yes)", st.DatabaseMessage)
	case st.Database == "unwritable":
		c.out("database     UNWRITABLE: %s (%s free on its disk); credentialed requests are refused until a write succeeds", st.DatabaseMessage, bytesHuman(st.DiskFree))
	case st.DiskFree > 0:
		c.out("database     ok, %s free on its disk", bytesHuman(st.DiskFree))
	default:
		c.out("database     ok")
	}
	cc := st.Connections
	c.out("apps         %d", st.Apps)
	line := fmt.Sprintf("connections  %d: %d approved (%d need re-approval), %d declared (%d imported), %d revoked, %d invalid",
		cc.Total, cc.Approved, cc.NeedsReapproval, cc.Declared, cc.Imported, cc.Revoked, cc.Invalid)
	if cc.Unreadable > 0 {
		line += fmt.Sprintf(", %d with a credential unreadable", cc.Unreadable)
	}
	c.out("%s", line)
	c.out("hosts        %d paired, %d waiting for approval", st.Hosts.Paired, st.Hosts.PendingPairings)
	if len(st.Helpers) == 0 {
		c.out("helpers      none")
	} else {
		var hs []string
		for _, h := range st.Helpers {
			hs = append(hs, helperLine(h))
		}
		c.out("helpers      %s", strings.Join(hs, ", "))
	}
	if sb := st.HelperSandbox; sb != nil {
		c.out("sandbox      %s", sb.Summary)
	}
	c.out("standing     %d armed", len(st.Standing))
	c.out("confirms     %d pending", st.PendingConfirms)
	// What needs attention, by name: pairing requests, then each app's
	// (GET /v1/apps on the ctl channel).
	var lines []string
	if st.Hosts.PendingPairings > 0 {
		lines = append(lines, fmt.Sprintf("%d pairing %s waiting: snugd ctl hosts list", st.Hosts.PendingPairings, plural(st.Hosts.PendingPairings, "request is", "requests are")))
	}
	apps, err := c.client.Apps(ctx)
	if err != nil {
		return c.fail(err)
	}
	for _, a := range apps {
		for _, at := range a.Attention {
			who := shown(a.AppID)
			if at.Slot != "" {
				who += "/" + at.Slot
			}
			lines = append(lines, who+": "+shown(at.Message))
		}
	}
	if len(lines) == 0 {
		c.out("\nnothing needs attention")
		return exitOK
	}
	c.out("\nneeds attention:")
	for _, l := range lines {
		c.out("  %s", l)
	}
	return exitOK
}

// helperLine is one helper of snugd ctl status: its state, sessions and
// restarts, and the supervisor's fixed sentence when it failed.
func helperLine(h api.HelperStatusJSON) string {
	s := fmt.Sprintf("%s (%s, %d %s, %d %s", h.HelperID, h.State, h.Sessions, plural(h.Sessions, "session", "sessions"), h.Restarts, plural(h.Restarts, "restart", "restarts"))
	if h.LastError != "" {
		s += ": " + h.LastError
	}
	return s + ")"
}

// bytesHuman writes n bytes for a person: 512 B, 3.4 MiB, 53.2 GiB.
func bytesHuman(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
