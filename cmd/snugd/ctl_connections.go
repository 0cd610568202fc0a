package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/snug/snugd/api"
)

// reqSummary is what a listing shows of a requirement.
type reqSummary struct {
	Provider struct {
		Name string `json:"name"`
	} `json:"provider"`
	Kind string `json:"kind"`
}

func summarize(raw json.RawMessage) reqSummary {
	var s reqSummary
	if json.Unmarshal(raw, &s) != nil || s.Provider.Name == "" {
		s.Provider.Name, s.Kind = "(unreadable requirement)", "?"
	}
	return s
}

func stamp(t *api.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// ctlConnections is snugd ctl connections APP [--json].
func ctlConnections(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("connections APP [--json]")
	pos, code, ok := c.args(fs, args, "APP")
	if !ok {
		return code
	}
	conns, err := c.client.Connections(ctx, pos[0])
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		if conns == nil {
			conns = []api.ConnectionJSON{}
		}
		return c.printJSON(map[string]any{"connections": conns})
	}
	if len(conns) == 0 {
		c.out("%s has no connections", pos[0])
		return exitOK
	}
	next := c.nextSteps(ctx, pos[0])
	for i, cn := range conns {
		if i > 0 {
			c.out("")
		}
		printConnection(c, cn)
		if n := next[cn.Slot]; n != "" && cn.Status == "approved" && !cn.NeedsReapproval {
			c.out("  next         %s", n)
		}
	}
	return exitOK
}

// printConnection prints one row: status, provider, hosts, state. Never a
// credential: the API does not return one.
func printConnection(c *ctl, cn api.ConnectionJSON) {
	s := summarize(cn.Requirement)
	c.out("%s  %s  %s (%s), requirement v%d", cn.Slot, cn.Status, s.Provider.Name, s.Kind, cn.RequirementVersion)
	if len(cn.AllowedHosts) > 0 {
		c.out("  hosts        %s", strings.Join(cn.AllowedHosts, ", "))
	} else if cn.Status == "approved" {
		c.out("  hosts        none (every request is refused)")
	}
	prov := cn.Provenance
	if cn.Borrowed {
		prov += " (values from snugd's provider registry, not from the app)"
	}
	if cn.Confidence != nil {
		prov += fmt.Sprintf(", claimed confidence %.2f (display only)", *cn.Confidence)
	}
	c.out("  provenance   %s", prov)
	c.out("  created      %s", stamp(&cn.CreatedAt))
	if cn.ApprovedAt != nil {
		c.out("  approved     %s", stamp(cn.ApprovedAt))
	}
	if cn.RevokedAt != nil {
		c.out("  revoked      %s", stamp(cn.RevokedAt))
	}
	if cn.State != nil {
		line := cn.State.Status
		if cn.State.LastError != "" {
			line += ": " + cn.State.LastError
		}
		c.out("  credentials  %s", line)
		if p := cn.State.LANPin; p != nil {
			c.out("  pin          sha256 %s (certificate CN %s, diagnostic only)", p.Fingerprint, orDash(p.CN))
		}
		if cn.State.LANVerifiedAt != nil {
			c.out("  verified     %s (the bridge's link button)", stamp(cn.State.LANVerifiedAt))
		}
	} else if cn.Status != "revoked" {
		c.out("  credentials  none stored")
	}
	switch {
	case len(cn.Invalid) > 0:
		c.out("  INVALID      the stored requirement no longer validates:")
		for _, d := range cn.Invalid {
			c.out("               %s: %s", d.Path, d.Rule)
		}
	case cn.NeedsReapproval:
		c.out("  attention    a changed requirement waits: snugd ctl review %s %s, then reapprove", cn.AppID, cn.Slot)
	case cn.Imported:
		c.out("  attention    imported: review and approve it on this device (snugd ctl review %s %s)", cn.AppID, cn.Slot)
	case cn.Status == "declared":
		c.out("  next         snugd ctl review %s %s, then approve", cn.AppID, cn.Slot)
	}
}

// ctlWriter is snugd ctl approve|reapprove|revoke|reconnect APP SLOT: the
// connection writers, and reconnect.
func ctlWriter(act string) func(ctx context.Context, c *ctl, args []string) int {
	if act == "approve" || act == "reapprove" {
		return ctlApprove(act)
	}
	return func(ctx context.Context, c *ctl, args []string) int {
		fs := c.flags(act + " APP SLOT [--json]")
		pos, code, ok := c.args(fs, args, "APP", "SLOT")
		if !ok {
			return code
		}
		var cn api.ConnectionJSON
		var remote string                     // a revoke's fixed sentence when access may remain at the provider
		var outcome *api.RemoteRevocationJSON // what the revoke did at the provider, for an OAuth row
		var err error
		if act == "revoke" {
			var r api.RevokeResponse
			r, err = c.client.Revoke(ctx, pos[0], pos[1])
			cn, remote, outcome = r.Connection, r.RemoteRevocation, r.Remote
		} else {
			cn, err = c.client.Reconnect(ctx, pos[0], pos[1])
		}
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			out := map[string]any{"connection": cn}
			if remote != "" {
				out["remoteRevocation"] = remote
			}
			if outcome != nil {
				out["remote"] = outcome
			}
			return c.printJSON(out)
		}
		switch act {
		case "revoke":
			c.out("%s/%s revoked; its credentials are wiped", pos[0], pos[1])
			if outcome != nil {
				// The wipe happened: the exit status stays 0, and the
				// person is told what the provider did, and where to
				// finish the job when access may remain there.
				c.out("  %s", outcome.Message)
			}
		case "reconnect":
			c.out("%s/%s is declared again (revoked %s, which its review discloses); review and approve it", pos[0], pos[1], stamp(cn.RevokedAt))
		}
		return exitOK
	}
}

// ctlCredentials is snugd ctl credentials set APP SLOT [--file F]. Values
// come as one JSON object of field key to value, from standard input or a
// file no one else may read, or typed at a prompt that does not echo when
// standard input is a terminal; never from the command line, where ps and
// the shell's history would keep them. It then says whether the
// connection is complete, naming the required fields still missing.
func ctlCredentials(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("credentials set APP SLOT [--file F]")
	file := fs.String("file", "-", "a 0600 file holding the JSON object of field key to value; - (the default) reads standard input, or prompts for each field on a terminal")
	pos, code, ok := c.args(fs, args, "set", "APP", "SLOT")
	if !ok {
		return code
	}
	if pos[0] != "set" {
		fmt.Fprintf(c.e.stderr, "%s: unknown subcommand (want set)\n", c.name)
		return exitUsage
	}
	appID, slot := pos[1], pos[2]
	var values map[string]string
	if *file == "-" && isTerminal(c.e.stdin) {
		// A row whose only step left is a pairing has nothing to type:
		// say which, rather than prompt for a value snugd would refuse.
		// (An OAuth row waiting for its sign-in still prompts: its client
		// ID may be the thing to correct.)
		if next := c.nextStep(ctx, appID, slot); strings.HasPrefix(next, "not paired yet: ") {
			return c.fail(fmt.Errorf("%s/%s has no field left to type: %s", appID, slot, next))
		}
		var err error
		if values, err = c.promptValues(ctx, appID, slot); err != nil {
			return c.fail(err)
		}
	} else {
		data, err := readSecretInput(c.e.stdin, *file)
		if err != nil {
			return c.fail(err)
		}
		if values, err = parseValues(data); err != nil {
			return c.fail(fmt.Errorf("credential values: %w", err))
		}
	}
	if len(values) == 0 {
		return c.fail(errors.New(`credential values: the object is empty; give {"field_key": "value", …}`))
	}
	if err := c.client.SetCredentials(ctx, appID, slot, values); err != nil {
		return c.fail(err)
	}
	var state *api.ConnStateJSON
	if conns, err := c.client.Connections(ctx, appID); err == nil {
		for _, cn := range conns {
			if cn.Slot == slot {
				state = cn.State
			}
		}
	}
	if c.json {
		return c.printJSON(map[string]any{"appId": appID, "slot": slot, "stored": slices.Sorted(maps.Keys(values)), "state": state})
	}
	c.out("stored %d %s for %s/%s (write-only: snugd never shows them again)", len(values), plural(len(values), "value", "values"), appID, slot)
	if state != nil && state.Status != "connected" {
		if next := c.nextStep(ctx, appID, slot); next != "" {
			c.out("not connected yet: %s", next)
		} else {
			line := state.Status
			if state.LastError != "" {
				line += ": " + state.LastError
			}
			c.out("not connected yet (%s)", line)
		}
	}
	return exitOK
}

// nextStep is the daemon's hint of what (appID, slot) still needs for its
// credentials, with the command that does it (credentials set for fields
// still to type, connect for an OAuth sign-in, a pair command for a
// ceremony), or "" when it names none.
func (c *ctl) nextStep(ctx context.Context, appID, slot string) string {
	return c.nextSteps(ctx, appID)[slot]
}

// nextSteps is nextStep for each slot of appID that has one.
func (c *ctl) nextSteps(ctx context.Context, appID string) map[string]string {
	apps, err := c.client.Apps(ctx)
	if err != nil {
		return nil
	}
	steps := map[string]string{}
	for _, a := range apps {
		if a.AppID != appID {
			continue
		}
		for _, at := range a.Attention {
			if at.Kind == "credentials" && steps[at.Slot] == "" {
				steps[at.Slot] = at.Message
			}
		}
	}
	return steps
}

// reqField is what the prompt needs of a requirement's field.
type reqField struct {
	Key      string `json:"key"`
	Label    string `json:"label"`
	Type     string `json:"type"`
	Required *bool  `json:"required"`
}

// promptValues asks for each field of the slot's requirement on the
// terminal, without echo. An empty answer skips the field.
func (c *ctl) promptValues(ctx context.Context, appID, slot string) (map[string]string, error) {
	conns, err := c.client.Connections(ctx, appID)
	if err != nil {
		return nil, err
	}
	var fields []reqField
	found := false
	for _, cn := range conns {
		if cn.Slot != slot {
			continue
		}
		found = true
		var r struct {
			Fields []reqField `json:"fields"`
		}
		raw := cn.Requirement
		if len(cn.PendingRequirement) > 0 && string(cn.PendingRequirement) != "null" {
			raw = cn.PendingRequirement
		}
		if json.Unmarshal(raw, &r) == nil {
			fields = r.Fields
		}
	}
	if !found {
		return nil, fmt.Errorf("%s has no connection %s (snugd ctl apps lists them)", appID, slot)
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("%s/%s declares no credential field", appID, slot)
	}
	fmt.Fprintf(c.e.stderr, "credentials for %s/%s (typing is not shown; an empty answer skips a field):\n", appID, slot)
	values := map[string]string{}
	for _, f := range fields {
		opt := ""
		if f.Required != nil && !*f.Required {
			opt = ", optional"
		}
		v, err := readPassword(c.e.stdin, c.e.stderr, fmt.Sprintf("  %s (%s%s): ", shown(f.Label), shown(f.Key), opt))
		if err != nil {
			return nil, fmt.Errorf("read from the terminal: %w", err)
		}
		if s := strings.TrimRight(string(v), "\r\n"); s != "" {
			values[f.Key] = s
		}
	}
	return values, nil
}

// ctlApprove is snugd ctl approve|reapprove APP SLOT [--yes] [--token T]:
// approval bound to a review. It reads the review, prints it
// (snugd ctl review's screen), asks y/N on a terminal, and approves with
// that review's reviewToken, so what is frozen is exactly what was shown:
// a row changed in between is REVIEW_STALE and nothing is written.
// Without a terminal it needs --yes. A script that read the review itself
// (snugd ctl review --json) passes its reviewToken with --token, which
// binds to that review and asks nothing.
func ctlApprove(act string) func(ctx context.Context, c *ctl, args []string) int {
	return func(ctx context.Context, c *ctl, args []string) int {
		fs := c.flags(act + " APP SLOT [--yes] [--token TOKEN] [--json]")
		yes := fs.Bool("yes", false, "approve the review shown without asking (needed without a terminal)")
		token := fs.String("token", "", "the reviewToken of a review already read (snugd ctl review --json): approve exactly that")
		pos, code, ok := c.args(fs, args, "APP", "SLOT")
		if !ok {
			return code
		}
		call := c.client.ApproveReview
		if act == "reapprove" {
			call = c.client.ReapproveReview
		}
		var rv *api.ReviewResponse
		if *token == "" {
			r, err := c.client.Review(ctx, pos[0], pos[1])
			if err != nil {
				return c.fail(err)
			}
			rv, *token = &r, r.ReviewToken
			cn := r.Connection
			// Only an approvable row is worth a question; the daemon
			// refuses the others with its own code.
			approvable := cn.Status == "declared"
			if act == "reapprove" {
				approvable = cn.NeedsReapproval
			}
			if approvable {
				if !c.json {
					printReview(c, r)
					c.out("")
				}
				question := fmt.Sprintf("approve %s/%s as shown?", cn.AppID, cn.Slot)
				if act == "reapprove" {
					question = fmt.Sprintf("accept the change to %s/%s as shown?", cn.AppID, cn.Slot)
				}
				if ok, code := c.confirm(*yes, shown(question)); !ok {
					return code
				}
			}
		}
		cn, err := call(ctx, pos[0], pos[1], *token)
		if err != nil {
			return c.fail(err)
		}
		if c.json {
			out := map[string]any{"connection": cn}
			if rv != nil {
				out["review"] = rv
			}
			return c.printJSON(out)
		}
		c.out("%s/%s approved; it may reach: %s", pos[0], pos[1], hostList(cn.AllowedHosts))
		return exitOK
	}
}
