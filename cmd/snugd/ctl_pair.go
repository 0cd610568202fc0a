package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon/claim"
	"golang.org/x/term"
)

// A pairCeremony is one snugd ctl pair subcommand: a pairing family's
// ceremony.
type pairCeremony struct {
	name     string
	synopsis string // after "snugd ctl "
	summary  string
	run      func(ctx context.Context, c *ctl, args []string) int
}

// pairCeremonies is snugd ctl pair's table, in the order usage lists it.
// Each family adds its own line.
func pairCeremonies() []pairCeremony {
	return []pairCeremony{
		{name: "claim", synopsis: "pair claim APP SLOT [--yes] [--json]", summary: "claim a SimpleFIN setup token, read from standard input (hidden on a terminal), never from the command line", run: ctlPairClaim},
		{name: "lan", synopsis: "pair lan APP SLOT [--address A] [--repin] [--yes] [--json]", summary: "pair a Philips Hue bridge: discover or take its address, collect and approve it, then press its link button; --repin replaces a changed certificate's pin after showing both fingerprints", run: ctlPairLAN},
		{name: "link", synopsis: "pair link APP SLOT [--yes]", summary: "link a device by scanning the QR code drawn in the terminal; Ctrl-C cancels; a linked slot is relinked only after a yes (or --yes), keeping the old link until the new one is linked", run: ctlPairLink},
	}
}

// pairCeremonyNamed is the pair ceremony typed (or nearly typed) as a
// command of its own, as in "snugd ctl claim", or "".
func pairCeremonyNamed(typed string) string {
	var names []string
	for _, p := range pairCeremonies() {
		names = append(names, p.name)
	}
	return suggest(typed, names)
}

func pairUsage(w io.Writer) {
	fmt.Fprint(w, "usage: snugd ctl [--data-dir DIR] pair CEREMONY APP SLOT …\n\n")
	for _, p := range pairCeremonies() {
		fmt.Fprintf(w, "  %s\n      %s\n", p.synopsis, p.summary)
	}
}

// ctlPair is snugd ctl pair CEREMONY …: a small dispatcher over
// pairCeremonies.
func ctlPair(ctx context.Context, c *ctl, args []string) int {
	if len(args) == 0 {
		pairUsage(c.e.stderr)
		return exitUsage
	}
	if isHelp(args[0]) {
		pairUsage(c.e.stdout)
		return exitOK
	}
	for _, p := range pairCeremonies() {
		if p.name == args[0] {
			c.name += " " + p.name
			return p.run(ctx, c, args[1:])
		}
	}
	// The word is not repeated: it could be a pasted token.
	fmt.Fprintf(c.e.stderr, "%s: unknown ceremony\n\n", c.name)
	pairUsage(c.e.stderr)
	return exitUsage
}

// ctlPairClaim is snugd ctl pair claim APP SLOT: it reads the setup token
// from standard input (without echo when that is a terminal), claims it
// once through the daemon, and prints the connection's state. The token
// is never an argument, never printed, and a refusal prints only the
// daemon's fixed sentence and reason.
//
// A connection that is already claimed is claimed again only after the
// person said yes (or --yes); its old credentials keep working until the
// new ones are stored, and the token is not spent by the question.
func ctlPairClaim(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("pair claim APP SLOT [--yes] [--json]")
	yes := fs.Bool("yes", false, "replace the connection's credentials if it is already claimed (the old ones keep working until the new ones are stored)")
	pos, code, ok := c.args(fs, args, "APP", "SLOT")
	if !ok {
		return code
	}
	token, err := readSetupToken(c.e)
	if err != nil {
		return c.fail(err)
	}
	var conn api.ConnectionJSON
	if code, ok := c.replaceCeremony(ctx, pos[0], pos[1], *yes, "claimed", "credentials", func(replace bool) error {
		var err error
		conn, err = c.client.Claim(ctx, pos[0], pos[1], token, replace)
		return err
	}); !ok {
		return code
	}
	if c.json {
		return c.printJSON(conn)
	}
	at := "now"
	if conn.State != nil && conn.State.ClaimVerifiedAt != nil {
		at = conn.State.ClaimVerifiedAt.UTC().Format(time.RFC3339)
	}
	c.out("claimed the setup token for %s/%s: connected, verified %s", pos[0], pos[1], at)
	c.out("the access credentials are stored write-only; the setup token is used up and need not be kept")
	return exitOK
}

// fdReader is a reader with a file descriptor (an *os.File).
type fdReader interface {
	io.Reader
	Fd() uintptr
}

// readSetupToken reads one setup token from e.stdin: on a terminal after
// a prompt on stderr, without echo; otherwise everything up to EOF,
// bounded. Surrounding whitespace is the daemon's to trim.
func readSetupToken(e env) (string, error) {
	if f, ok := e.stdin.(fdReader); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(e.stderr, "Paste the SimpleFIN setup token (it is not shown), then press Enter: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("read the setup token from the terminal: %w", err)
		}
		return checkTokenInput(b)
	}
	b, err := readBounded(e.stdin, claim.MaxTokenBytes, "standard input")
	if err != nil {
		return "", err
	}
	return checkTokenInput(b)
}

func checkTokenInput(b []byte) (string, error) {
	if strings.TrimSpace(string(b)) == "" {
		return "", errors.New("no setup token on standard input: paste it, or pipe it in (snugd ctl pair claim APP SLOT < token.txt)")
	}
	return string(b), nil
}
