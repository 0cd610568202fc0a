package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon/errcode"
)

// ctl is one snugd ctl invocation: where it talks, how it answers.
type ctl struct {
	e       env
	dataDir string
	json    bool // --json: machine output on stdout
	client  *api.Client
	name    string // "snugd ctl hosts", for messages
	// systemAddr is where the system service listens by default: when
	// this user's socket is missing, fail looks there for a snugd.
	systemAddr string
}

// A ctlCommand is one snugd ctl command.
type ctlCommand struct {
	name     string
	synopsis string // after "snugd ctl "
	summary  string
	example  string // one command line, after "$ "
	// run runs the command. offline commands get a ctl without a client.
	run     func(ctx context.Context, c *ctl, args []string) int
	offline bool
}

// ctlCommands is snugd ctl's command table, in the order usage lists it.
func ctlCommands() []ctlCommand {
	return []ctlCommand{
		{name: "status", synopsis: "status [--json]", summary: "what runs: version, uptime, data dir, counts, helpers, standing approvals, pending confirms, and what needs attention", example: "snugd ctl status", run: ctlStatus},
		{name: "apps", synopsis: "apps [--json] | " + appsShareSynopsis, summary: "every app, its owner, its connections' states and what needs attention (proposals, staged changes, missing credentials, pins, expiring tokens); share or unshare an app with a second paired host", example: "snugd ctl apps", run: ctlApps},
		{name: "doctor", synopsis: "doctor [--json]", summary: "check files, database, lock, port, the API's Host/Origin refusals and the clock", example: "sudo snugd ctl doctor", run: ctlDoctor},
		{name: "hosts", synopsis: hostsSynopsis, summary: "paired hosts and pairing requests (approve shows the request and asks y/N; --yes without a terminal); invite NAME lets one desktop host pair, approved, past any flood of requests", example: "snugd ctl hosts approve 7KQ3-M9XD", run: ctlHosts},
		{name: "connections", synopsis: "connections APP [--json]", summary: "an app's connections and their state (never a credential)", example: "snugd ctl connections my-app", run: ctlConnections},
		{name: "review", synopsis: "review APP SLOT [--json]", summary: "what approving shows: diff, hosts, scopes, instructions, console URL, provenance", example: "snugd ctl review my-app exchange", run: ctlReview},
		{name: "approve", synopsis: "approve APP SLOT [--yes] [--token TOKEN] [--json]", summary: "show the review, ask y/N, approve exactly what it showed (freezes its hosts)", example: "snugd ctl approve my-app exchange", run: ctlWriter("approve")},
		{name: "reapprove", synopsis: "reapprove APP SLOT [--yes] [--token TOKEN] [--json]", summary: "show a staged change, ask y/N, approve exactly what it showed", example: "snugd ctl reapprove my-app exchange", run: ctlWriter("reapprove")},
		{name: "revoke", synopsis: "revoke APP SLOT [--json]", summary: "revoke a connection and wipe its credentials", example: "snugd ctl revoke my-app exchange", run: ctlWriter("revoke")},
		{name: "reconnect", synopsis: "reconnect APP SLOT [--json]", summary: "make a revoked connection declared again (the revocation stays disclosed)", example: "snugd ctl reconnect my-app exchange", run: ctlWriter("reconnect")},
		{name: "credentials", synopsis: "credentials set APP SLOT [--file F]", summary: "store credential values: a JSON object from a 0600 file, piped on standard input, or typed at a prompt; never argv", example: "snugd ctl credentials set my-app exchange --file exchange.json", run: ctlCredentials},
		{name: "pair", synopsis: "pair claim APP SLOT [--yes] [--json] | pair lan APP SLOT [--address A] [--repin] [--yes] | pair link APP SLOT [--yes]", summary: "a pairing ceremony: claim a SimpleFIN setup token read from standard input (hidden on a terminal), never argv; or pair a Hue bridge by its link button; or link a device by scanning its QR code", example: "snugd ctl pair lan my-app lights", run: ctlPair},
		{name: "lan", synopsis: lanSynopsis, summary: "find Hue bridges on the local network (mDNS, on demand, at most 10 s); only RFC-1918 addresses can be chosen", example: "snugd ctl lan discover", run: ctlLAN},
		{name: "connect", synopsis: "connect APP SLOT [--yes]", summary: "sign in to an OAuth provider: print the authorize URL and wait for the sign-in to finish (exit 0 when connected); a connection already signed in signs in again only after a yes (or --yes)", example: "snugd ctl connect music spotify", run: ctlConnect},
		{name: "providers", synopsis: providersSynopsis, summary: "browse the provider registry built into snugd (no daemon needed): each entry's kinds and what sign-in works on the desktop and the web; show ID prints its hosts, options, scopes, steps and sources", example: "snugd ctl providers show spotify", offline: true, run: ctlProviders},
		{name: "confirms", synopsis: "confirms [--watch] [--json] | confirms allow ID [--session] | confirms deny ID", summary: "pending confirmations, and deciding them", example: "snugd ctl confirms allow 3f9c2a71d0e84b6a --session", run: ctlConfirms},
		{name: "demo", synopsis: demoSynopsis, summary: "the offline demo, no account anywhere: an app connects to the built-in simulator (propose, review and approve, link by scanning its QR code with demo scan), then reads its threads and sends a message you confirm; run again, it does only what is left; --remove revokes it", example: "snugd ctl demo", run: ctlDemo},
		{name: "journal", synopsis: "journal [--follow] [--app APP] [--json]", summary: "unattended acts and executor decisions (metadata only)", example: "snugd ctl journal --app my-app", run: ctlJournal},
		{name: "export", synopsis: "export FILE|-", summary: "export the user DB without secrets (- writes it to standard output)", example: "snugd ctl export snug-backup.db", run: ctlExport},
		{name: "import", synopsis: "import FILE [--json]", summary: "import a user DB and print the reconciliation report", example: "snugd ctl import snug-backup.db", run: ctlImport},
		{name: "reset", synopsis: "reset [--yes] [--json]", summary: "start a stopped snugd's data directory over: say what is lost (hosts, connections, credentials, the master key), and with --yes set the database and key aside; refused while snugd runs", example: "snugd ctl reset --yes", run: ctlReset},
		{name: "template", synopsis: "template render --requirement FILE --values FILE --method M --url U [--body-file F] [--timestamp N]", summary: "render a requirement's templates offline (no daemon)", example: "snugd ctl template render --requirement req.json --values values.json --method GET --url https://api.example.com/v1/me", offline: true, run: func(ctx context.Context, c *ctl, args []string) int { return cmdTemplate(ctx, c.e, args) }},
	}
}

func ctlNames() []string {
	var names []string
	for _, c := range ctlCommands() {
		names = append(names, c.name)
	}
	return names
}

func ctlUsage(w io.Writer) {
	fmt.Fprint(w, "usage: snugd ctl COMMAND [ARGS] [--data-dir DIR] [--json]\n\n")
	fmt.Fprint(w, "Talks to the running snugd over the ctl socket (snugd.sock) in its data directory.\n\n")
	for _, c := range ctlCommands() {
		fmt.Fprintf(w, "  %s\n      %s\n", c.synopsis, c.summary)
	}
	fmt.Fprint(w, `
--data-dir (before or after the command) defaults to $SNUGD_DATA_DIR, else
the per-OS location (see README.md). --json prints machine-readable JSON on
stdout (confirms --watch and journal --follow print one object per line).
Exit status: 0 success, 1 the daemon or the command's subject says no
(daemon down, refused, validation failed), 2 a usage error.
snugd ctl COMMAND -h describes one command, with an example.
`)
}

// ctlHelp prints one ctl command's help on standard output: synopsis,
// summary, flags (as the command's own flag set describes them) and an
// example.
func ctlHelp(ctx context.Context, e env, cmd ctlCommand) int {
	fmt.Fprintf(e.stdout, "usage: snugd ctl %s\n\n%s\n", cmd.synopsis, cmd.summary)
	flags := captureFlags(func(w io.Writer) {
		c := &ctl{e: env{stdin: strings.NewReader(""), stdout: w, stderr: w, getenv: e.getenv}, name: "snugd ctl " + cmd.name}
		if cmd.name == "template" {
			cmdTemplateRender(ctx, c.e, []string{"-h"})
			return
		}
		cmd.run(ctx, c, []string{"-h"})
	})
	if !cmd.offline {
		flags += "  --data-dir string\n    the daemon's data directory (default $SNUGD_DATA_DIR, else the per-OS location)\n"
	}
	fmt.Fprintf(e.stdout, "\nflags:\n%s", flags)
	fmt.Fprintf(e.stdout, "\nexample:\n  %s\n", cmd.example)
	return exitOK
}

// splitGlobal takes snugd ctl's own flags (--data-dir DIR, --json) out of
// args wherever they stand before a "--", so "ctl status --data-dir X"
// works as well as "ctl --data-dir X status". A --data-dir without a value
// is a usage error.
func splitGlobal(args []string) (rest []string, dataDir string, asJSON bool, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		switch {
		case a == "--data-dir" || a == "-data-dir":
			if i+1 >= len(args) {
				return nil, "", false, errors.New("flag needs an argument: --data-dir")
			}
			dataDir = args[i+1]
			i++
		case strings.HasPrefix(a, "--data-dir=") || strings.HasPrefix(a, "-data-dir="):
			_, dataDir, _ = strings.Cut(a, "=")
		case a == "--json" || a == "-json":
			asJSON = true
		default:
			rest = append(rest, a)
		}
	}
	return rest, dataDir, asJSON, nil
}

// cmdCtl is snugd ctl COMMAND … [--data-dir DIR] [--json].
func cmdCtl(ctx context.Context, e env, args []string) int {
	args, dataDir, asJSON, err := splitGlobal(args)
	if err != nil {
		fmt.Fprintf(e.stderr, "snugd ctl: %v\n", err)
		return exitUsage
	}
	if len(args) == 0 {
		ctlUsage(e.stderr)
		return exitUsage
	}
	if isHelp(args[0]) || args[0] == "-help" {
		if len(args) > 1 {
			return cmdCtl(ctx, e, []string{args[1], "--help"})
		}
		ctlUsage(e.stdout)
		return exitOK
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(e.stderr, "snugd ctl: flag provided but not defined: %s\n\n", args[0])
		ctlUsage(e.stderr)
		return exitUsage
	}
	var cmd *ctlCommand
	for _, c := range ctlCommands() {
		if c.name == args[0] {
			cmd = &c
			break
		}
	}
	if cmd == nil {
		fmt.Fprintf(e.stderr, "snugd ctl: unknown command %q\n", args[0])
		// A pair ceremony typed as a command of its own ("snugd ctl
		// claim") is suggested when it is nearer than any command.
		s, p := suggest(args[0], ctlNames()), pairCeremonyNamed(args[0])
		switch {
		case p != "" && (s == "" || editDistance(args[0], p) < editDistance(args[0], s)):
			fmt.Fprintf(e.stderr, "did you mean \"snugd ctl pair %s\"?\n", p)
		case s != "":
			fmt.Fprintf(e.stderr, "did you mean \"snugd ctl %s\"?\n", s)
		}
		fmt.Fprintln(e.stderr, "\"snugd ctl help\" lists the commands")
		return exitUsage
	}
	if wantsHelp(args[1:]) {
		return ctlHelp(ctx, e, *cmd)
	}
	c := &ctl{e: e, json: asJSON, name: "snugd ctl " + cmd.name, systemAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(defaultPort))}
	if !cmd.offline {
		dir, err := resolveDataDir(e.getenv, dataDir)
		if err != nil {
			fmt.Fprintf(e.stderr, "snugd ctl: %v\n", err)
			return exitUsage
		}
		c.dataDir = dir
		c.client = api.DialCtl(dir, api.ClientOptions{
			Version: buildVersion(),
			OnVersionMismatch: func(daemonVersion, clientVersion string) {
				fmt.Fprintf(e.stderr, "warning: snugd ctl is version %s but the daemon is %s; restart the daemon after an upgrade\n", clientVersion, daemonVersion)
			},
		})
	}
	return cmd.run(ctx, c, args[1:])
}

// flags returns a FlagSet for one command with --json registered.
func (c *ctl) flags(synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(c.e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(c.e.stderr, "usage: snugd ctl %s\n", synopsis)
		fs.PrintDefaults()
	}
	fs.BoolVar(&c.json, "json", c.json, "machine-readable output")
	return fs
}

// args parses a command's flags and exactly n positional arguments
// (named by names, for the usage message).
func (c *ctl) args(fs *flag.FlagSet, args []string, names ...string) ([]string, int, bool) {
	pos, code, ok := parseCtlArgs(fs, args, len(names))
	if !ok {
		return nil, code, false
	}
	if len(pos) < len(names) {
		fmt.Fprintf(c.e.stderr, "%s: missing %s\n", c.name, strings.Join(names[len(pos):], " "))
		fs.Usage()
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// fail reports err and returns the exit status for it: 1, with a hint when
// the daemon is not answering. An API refusal prints its code, message and
// details; no refusal carries a credential (the API never echoes one).
// plainCodes are the generic codes ctl leaves out of an error line: their
// sentence says it all, and "BAD_REQUEST:" in front of it is jargon. A
// specific code stays, as a name a person can search for.
var plainCodes = map[errcode.Code]bool{
	errcode.BadRequest:     true,
	errcode.Internal:       true,
	errcode.NotFound:       true,
	errcode.RequestTimeout: true,
	errcode.StorageFull:    true,
}

func (c *ctl) fail(err error) int {
	var apiErr *api.Error
	switch {
	case errors.Is(err, api.ErrUnreachable):
		sock := filepath.Join(c.dataDir, api.CtlSocket)
		if errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "permission denied") {
			fmt.Fprintf(c.e.stderr, "%s: permission denied on %s\nhint: run snugd ctl as the user snugd runs as (or root)\n", c.name, sock)
		} else {
			fmt.Fprintf(c.e.stderr, "%s: snugd is not running for %s (nothing answers on %s)\n", c.name, c.dataDir, sock)
			if c.systemAddr != "" && snugdAnswers(c.systemAddr) && c.dataDir != defaultDataDir(true) {
				fmt.Fprintf(c.e.stderr, "hint: a snugd answers on %s, probably the system service with its data in %s: run \"sudo snugd ctl %s\", or pass the --data-dir it uses\n", c.systemAddr, defaultDataDir(true), strings.TrimPrefix(c.name, "snugd ctl "))
			} else {
				fmt.Fprintf(c.e.stderr, "hint: start it with \"snugd start\" (the installed service) or \"snugd run --data-dir %s\"; or pass the --data-dir it uses\n", c.dataDir)
			}
		}
	case errors.As(err, &apiErr):
		if plainCodes[apiErr.Code] {
			// A generic code says nothing the sentence does not.
			fmt.Fprintf(c.e.stderr, "%s: %s\n", shownArgs([]any{c.name, apiErr.Message})...)
		} else {
			fmt.Fprintf(c.e.stderr, "%s: %s: %s\n", shownArgs([]any{c.name, string(apiErr.Code), apiErr.Message})...)
		}
		for _, d := range apiErr.Details {
			fmt.Fprintf(c.e.stderr, "  %s: %s\n", shownArgs([]any{d.Path, d.Rule})...)
		}
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(c.e.stderr, "%s: interrupted\n", c.name)
	default:
		fmt.Fprintf(c.e.stderr, "%s: %s\n", c.name, shown(err.Error()))
	}
	return exitNo
}

// printJSON writes v as indented JSON on stdout.
func (c *ctl) printJSON(v any) int {
	enc := json.NewEncoder(jsonShown{c.e.stdout}) // hidden characters escaped (ctl_text.go)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return c.fail(err)
	}
	return exitOK
}

// printJSONLine writes v as one line of JSON on stdout: what the following
// commands (confirms --watch, journal --follow) print per item with --json.
func (c *ctl) printJSONLine(v any) {
	enc := json.NewEncoder(jsonShown{c.e.stdout})
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// out prints a line on stdout. Its string arguments are outside text more
// often than not, so every one is printed shown (ctl_text.go).
func (c *ctl) out(format string, a ...any) { fmt.Fprintf(c.e.stdout, format+"\n", shownArgs(a)...) }

// parseCtlArgs parses flags and positional arguments in any order ("hosts
// approve CODE --json" as well as "--json hosts approve CODE"); "--" ends
// the flags. It returns the positional arguments, or false and the exit
// status: 0 after -h, 2 after a usage error, or when there are more than
// maxArgs positional arguments. A surplus argument is never repeated: it
// may be a credential pasted where it does not belong.
func parseCtlArgs(flags *flag.FlagSet, args []string, maxArgs int) ([]string, int, bool) {
	var pos []string
	for {
		if err := flags.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := flags.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) > maxArgs {
		fmt.Fprintf(flags.Output(), "%s: unexpected argument #%d (not repeated here; credential values are never taken from the command line)\n", flags.Name(), maxArgs+1)
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// snugdAnswers reports whether a snugd answers GET /v1/health on addr:
// what a user's snugd ctl finds when the daemon is the system service,
// whose socket it cannot see.
func snugdAnswers(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, hdr, status, err := tcpGet(ctx, addr, "/v1/health", map[string]string{"Host": addr})
	return err == nil && status == http.StatusOK && hdr.Get("Snugd-Version") != ""
}
