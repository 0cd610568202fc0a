package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

// A topDoc documents one snugd command: what snugd help, COMMAND -h, the
// man page and the shell completions are all built from.
type topDoc struct {
	name     string
	synopsis string // after "snugd "
	summary  string
	example  string
}

// topDocs lists snugd's commands in the order help shows them.
func topDocs() []topDoc {
	return []topDoc{
		{"run", "run [--data-dir DIR] [--port N]", "run the daemon in the foreground (the default command); SIGTERM or Ctrl-C stops it", "snugd run --port 4848"},
		{"ctl", "ctl COMMAND [ARGS] [--data-dir DIR] [--json]", "talk to the running daemon over its ctl socket (snugd ctl help lists the commands)", "sudo snugd ctl status"},
		{"install", "install [--user] [--data-dir DIR] [--port N]", "register snugd with the OS service manager (systemd, launchd, Windows)", "sudo snugd install --port 4848"},
		{"uninstall", "uninstall [--user]", "stop and unregister the service; the data stays", "sudo snugd uninstall"},
		{"start", "start [--user]", "start the installed service", "sudo snugd start"},
		{"stop", "stop [--user]", "stop the installed service", "sudo snugd stop"},
		{"restart", "restart [--user]", "restart the installed service", "sudo snugd restart"},
		{"status", "status [--user]", "print running, stopped or not installed (exit 0 only when running)", "snugd status --user"},
		{"version", "version [--json]", "version and build information (also snugd --version, snugd -v)", "snugd --version"},
		{"webhost", "webhost [--port N] [--app DIR]", "serve the reference browser host and the host SDK on 127.0.0.1 (default port 4780); --app DIR runs your micro-app in it", "snugd webhost --app ./my-app"},
		{"completion", "completion bash|zsh|fish", "print a shell completion script", "snugd completion bash | sudo tee /etc/bash_completion.d/snugd"},
		{"help", "help [COMMAND] | help ctl COMMAND | help --man", "this help, one command's, or the man page (roff) on standard output", "snugd help ctl credentials"},
	}
}

// topNames returns the names of snugd's commands.
func topNames() []string {
	var names []string
	for _, d := range topDocs() {
		names = append(names, d.name)
	}
	return names
}

func topDocFor(name string) (topDoc, bool) {
	for _, d := range topDocs() {
		if d.name == name {
			return d, true
		}
	}
	return topDoc{}, false
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage: snugd [COMMAND] [ARGS] [FLAGS]\n\n")
	for _, d := range topDocs() {
		fmt.Fprintf(w, "  %s\n      %s\n", d.synopsis, d.summary)
	}
	fmt.Fprint(w, `
Flags go before or after the command's arguments. The data directory is
--data-dir, else $SNUGD_DATA_DIR, else the per-OS default (README.md).
snugd COMMAND -h describes one command, with an example.
`)
}

// cmdHelp is snugd help [COMMAND] | help ctl COMMAND | help --man.
func cmdHelp(ctx context.Context, e env, args []string) int {
	switch {
	case len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help":
		usage(e.stdout)
		return exitOK
	case args[0] == "--man" || args[0] == "-man":
		fmt.Fprint(e.stdout, manPage())
		return exitOK
	case args[0] == "ctl" && len(args) > 1:
		return cmdCtl(ctx, e, []string{args[1], "--help"})
	case args[0] == "ctl":
		ctlUsage(e.stdout)
		return exitOK
	}
	if _, ok := topDocFor(args[0]); !ok {
		fmt.Fprintf(e.stderr, "snugd help: unknown command %q\n", args[0])
		if s := suggest(args[0], topNames()); s != "" {
			fmt.Fprintf(e.stderr, "did you mean \"snugd help %s\"?\n", s)
		}
		return exitUsage
	}
	return topHelp(ctx, e, args[0])
}

// topHelp prints one command's help on standard output: synopsis,
// summary, flags and an example.
func topHelp(ctx context.Context, e env, name string) int {
	if name == "ctl" {
		ctlUsage(e.stdout)
		return exitOK
	}
	d, _ := topDocFor(name)
	fmt.Fprintf(e.stdout, "usage: snugd %s\n\n%s\n", d.synopsis, d.summary)
	if flags := topFlags(ctx, e, name); flags != "" {
		fmt.Fprintf(e.stdout, "\nflags:\n%s", flags)
	}
	fmt.Fprintf(e.stdout, "\nexample:\n  %s\n", d.example)
	return exitOK
}

// topFlags returns the flag descriptions of snugd NAME, as its own flag
// set prints them for -h.
func topFlags(ctx context.Context, e env, name string) string {
	cmd, ok := commands()[name]
	if !ok || name == "help" || name == "completion" {
		return ""
	}
	return captureFlags(func(w io.Writer) {
		cmd(ctx, env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: w, getenv: e.getenv}, []string{"-h"})
	})
}

// captureFlags runs a command's -h with its output in a buffer and keeps
// the flag lines (flag.PrintDefaults's), with GNU-style double dashes.
func captureFlags(run func(w io.Writer)) string {
	var buf bytes.Buffer
	run(&buf)
	var out strings.Builder
	keep := false
	for _, line := range strings.Split(buf.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			keep = true
			out.WriteString("  --" + line[3:] + "\n")
		case keep && strings.HasPrefix(line, "    "):
			out.WriteString("    " + strings.TrimSpace(line) + "\n")
		default:
			keep = false
		}
	}
	return out.String()
}

// suggest returns the name in names closest to typed, when it is close
// enough to be a typo (an edit distance of at most 2, or a prefix); ""
// otherwise.
func suggest(typed string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if len(typed) >= 2 && strings.HasPrefix(n, typed) {
			return n
		}
		if d := editDistance(typed, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance of a and b, in
// bytes: insertions, deletions, substitutions and transpositions of two
// neighbours ("stauts" is one from "status") each count one.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// isStdout reports whether a file name given for output means standard
// output ("-").
func isStdout(name string) bool { return name == "-" }
