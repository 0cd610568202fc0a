package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ctlExport is snugd ctl export FILE|-: the user DB, secrets dropped and
// vacuumed, written to FILE (mode 0600; an existing FILE is refused),
// or to standard output for -.
func ctlExport(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("export FILE|-")
	pos, code, ok := c.args(fs, args, "FILE")
	if !ok {
		return code
	}
	name := pos[0]
	if isStdout(name) {
		// - is standard output, for a pipe or a redirect; never a terminal,
		// which a database file would garble.
		if isTerminal(c.e.stdout) {
			fmt.Fprintf(c.e.stderr, "%s: standard output is a terminal; redirect it (snugd ctl export - > snug-backup.db) or name a file\n", c.name)
			return exitUsage
		}
		if err := c.client.Export(ctx, c.e.stdout); err != nil {
			return c.fail(err)
		}
		fmt.Fprintf(c.e.stderr, "exported to standard output (no secrets: credentials stay on this device)\n")
		return exitOK
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return c.fail(err)
	}
	err = c.client.Export(ctx, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return c.fail(err)
	}
	if c.json {
		return c.printJSON(map[string]string{"file": name})
	}
	c.out("exported to %s (no secrets: credentials stay on this device)", name)
	return exitOK
}

// ctlImport is snugd ctl import FILE [--json]: import a user DB and print
// the reconciliation report (restored, demoted, dropped).
func ctlImport(ctx context.Context, c *ctl, args []string) int {
	flags := c.flags("import FILE [--json]")
	pos, code, ok := c.args(flags, args, "FILE")
	if !ok {
		return code
	}
	f, err := openRegular(pos[0])
	if errors.Is(err, fs.ErrNotExist) {
		return c.fail(fmt.Errorf("%s does not exist", pos[0]))
	}
	if err != nil {
		return c.fail(err)
	}
	defer f.Close()
	rep, err := c.client.Import(ctx, f)
	if err != nil {
		return c.fail(err)
	}
	if c.json {
		return c.printJSON(rep)
	}
	c.out("imported %s: %d restored, %d demoted to declared (review them), %d dropped", filepath.Base(pos[0]), rep.Restored, rep.Demoted, len(rep.Dropped))
	for _, l := range rep.Landed {
		switch {
		case l.CredentialsCleared:
			c.out("  declared %s/%s: replaced the local row, which asked for something else: its credentials are wiped (review, approve, then enter them again)", l.AppID, l.Slot)
		case l.Replaced:
			c.out("  declared %s/%s: replaced the local row (same requirement and hosts: its credentials are kept); review and approve it", l.AppID, l.Slot)
		default:
			c.out("  declared %s/%s: new; review and approve it", l.AppID, l.Slot)
		}
	}
	for _, d := range rep.Dropped {
		c.out("  dropped %s/%s: %s", d.AppID, d.Slot, d.Reason)
	}
	return exitOK
}
