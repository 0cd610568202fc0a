// Command snugd is the Snug sidecar: the daemon (snugd run), its OS service
// (snugd install|uninstall|start|stop|restart|status) and its administrator's
// client (snugd ctl). See README.md and API.md.
//
// Where each concern lives: main.go the subcommand table; run.go builds
// and wires everything (config.go's file and flags, paths.go's data and log
// directories, daemon.New, api.New, the two listeners, the drain);
// service*.go the OS service (kardianos/service); ctl.go the ctl command
// table, one ctl_*.go file per command group over api.Client, ctl_text.go
// the one escape (shown) every outside string passes through, ctl_ask.go
// the confirmation prompts; help.go and manpage.go the docs (the man page
// is generated from them); webhost.go the reference web host; helper.go
// the hidden linked-device helpers.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses (API.md): 0 success, 1 the command's subject says no (daemon
// down, validation failed), 2 a usage error.
const (
	exitOK    = 0
	exitNo    = 1
	exitUsage = 2
)

// env is what a command may touch of the outside world. Commands take it as
// a parameter so tests can run them in-process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// A command runs one subcommand with its arguments and returns an exit status.
type command func(ctx context.Context, e env, args []string) int

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(dispatch(ctx, e, os.Args[1:]))
}

// commands is the whole subcommand table.
func commands() map[string]command {
	return map[string]command{
		"run":        cmdRun,
		"ctl":        cmdCtl,
		"version":    cmdVersion,
		"install":    serviceCommand("install"),
		"uninstall":  serviceCommand("uninstall"),
		"start":      serviceCommand("start"),
		"stop":       serviceCommand("stop"),
		"restart":    serviceCommand("restart"),
		"status":     serviceCommand("status"),
		"completion": cmdCompletion,
		"help":       cmdHelp,
		"webhost":    cmdWebhost,
		"helper":     cmdHelper, // hidden: linked-device helpers (helper.go)
	}
}

func dispatch(ctx context.Context, e env, args []string) int {
	if len(args) == 0 {
		return cmdRun(ctx, e, nil)
	}
	switch args[0] {
	case "-h", "--help", "-help":
		return cmdHelp(ctx, e, args[1:])
	case "-v", "--version", "-version":
		return cmdVersion(ctx, e, args[1:])
	}
	if len(args[0]) > 0 && args[0][0] == '-' {
		// snugd --data-dir X --port N: the same as snugd run.
		return cmdRun(ctx, e, args)
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "snugd: unknown command %q\n", args[0])
		if s := suggest(args[0], topNames()); s != "" {
			fmt.Fprintf(e.stderr, "did you mean \"snugd %s\"?\n", s)
		}
		fmt.Fprintln(e.stderr, "\"snugd help\" lists the commands")
		return exitUsage
	}
	if args[0] != "ctl" && args[0] != "help" && wantsHelp(args[1:]) {
		return topHelp(ctx, e, args[0])
	}
	return cmd(ctx, e, args[1:])
}

// wantsHelp reports whether args ask for help (-h, --help) before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help", "-help":
			return true
		}
	}
	return false
}
