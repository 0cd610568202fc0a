package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/snug/snugd/daemon/reset"
)

// resetJSON is snugd ctl reset --json.
type resetJSON struct {
	DataDir     string   `json:"dataDir"`
	Files       []string `json:"files"`
	Counted     bool     `json:"counted"` // false: the database could not be read
	Hosts       int      `json:"hosts"`
	Connections int      `json:"connections"`
	Credentials int      `json:"credentials"`     // sealed credential values (one per field)
	Aside       string   `json:"aside,omitempty"` // "" when nothing was changed
	Done        bool     `json:"done"`
}

// ctlReset is snugd ctl reset [--yes] [--json]: start a stopped snugd's
// data directory over. Without --yes it says what would be lost and
// changes nothing; with it, it sets snugd.db, its WAL files, secrets.key
// and the linked-device helpers' sessions aside in reset-TIMESTAMP inside
// the data directory. It
// refuses while snugd runs: it takes the data directory's lock, as the
// daemon does, and never talks to a daemon.
func ctlReset(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("reset [--yes] [--json]")
	yes := fs.Bool("yes", false, "set the database, the master key and the helpers' sessions aside (without it, only say what would be lost)")
	if _, code, ok := c.args(fs, args); !ok {
		return code
	}
	rep, err := reset.Plan(ctx, c.dataDir)
	if err == nil && *yes && len(rep.Files) > 0 {
		rep, err = reset.Run(ctx, c.dataDir)
	}
	if errors.Is(err, reset.ErrRunning) {
		fmt.Fprintf(c.e.stderr, "%s: snugd is running with %s, so nothing was changed: stop it first (\"snugd stop\" for the installed service), then run reset again\n  %s\n", c.name, c.dataDir, shown(err.Error()))
		return exitNo
	}
	if err != nil {
		return c.fail(err)
	}
	done := *yes && rep.Aside != ""
	if c.json {
		if code := c.printJSON(resetJSON{DataDir: c.dataDir, Files: orEmpty(rep.Files), Counted: rep.Counted, Hosts: rep.Hosts,
			Connections: rep.Connections, Credentials: rep.Credentials, Aside: rep.Aside, Done: done}); code != exitOK {
			return code
		}
		if !*yes && len(rep.Files) > 0 {
			return exitNo
		}
		return exitOK
	}
	if len(rep.Files) == 0 {
		c.out("nothing to reset in %s: it holds no database and no master key; the next start creates both", c.dataDir)
		return exitOK
	}
	verb := "would set aside"
	if done {
		verb = "set aside"
	}
	c.out("reset %s %s: %s", verb, c.dataDir, strings.Join(rep.Files, ", "))
	c.out("what is lost:")
	if rep.Counted {
		c.out("  %d paired %s: %s", rep.Hosts, plural(rep.Hosts, "host", "hosts"), "their tokens stop working, and each host pairs again")
		c.out("  %d %s: %s", rep.Connections, plural(rep.Connections, "connection", "connections"), "every app proposes, and you approve, them again")
		c.out("  %d stored credential %s: %s", rep.Credentials, plural(rep.Credentials, "value", "values"), "you enter them again (or sign in again)")
	} else {
		c.out("  the database cannot be read (missing, emptied or damaged): whatever it held")
	}
	c.out("  the master key: an older backup of snugd.db opens only with the key set aside with it")
	if !done {
		c.out("nothing was changed: restore snugd.db from a backup instead if you have one, or run \"snugd ctl reset --yes\" to start over")
		return exitNo
	}
	c.out("the old files are in %s (mode 0700); delete that directory once you no longer need them", rep.Aside)
	c.out("the next start creates a new database and master key: start snugd, then pair your hosts again")
	return exitOK
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
