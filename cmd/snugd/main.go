// Command snugd is the Snug sidecar: the daemon (snugd run), its OS service
// (snugd install|uninstall|start|stop|restart|status) and its administrator's
// client (snugd ctl). See README.md and API.md.
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
		"run":       cmdRun,
		"ctl":       cmdCtl,
		"version":   cmdVersion,
		"install":   serviceCommand("install"),
		"uninstall": serviceCommand("uninstall"),
		"start":     serviceCommand("start"),
		"stop":      serviceCommand("stop"),
		"restart":   serviceCommand("restart"),
		"status":    serviceCommand("status"),
		"webhost":   cmdWebhost,
		"helper":    cmdHelper, // hidden: linked-device helpers (helper.go)
	}
}

func dispatch(ctx context.Context, e env, args []string) int {
	if len(args) == 0 {
		return cmdRun(ctx, e, nil)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stdout)
		return exitOK
	}
	if len(args[0]) > 0 && args[0][0] == '-' {
		// snugd --data-dir X --port N: the same as snugd run.
		return cmdRun(ctx, e, args)
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "snugd: unknown command %q\n\n", args[0])
		usage(e.stderr)
		return exitUsage
	}
	return cmd(ctx, e, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: snugd [command] [flags]

  run [--data-dir DIR] [--port N]   the daemon in the foreground (the default command)
  install|uninstall|start|stop|restart|status [--user]
                                    the OS service
  ctl [--data-dir DIR] COMMAND …    talk to the running daemon (snugd ctl help)
  version                           version and build information
  webhost [--port N]                serve the reference browser host on 127.0.0.1 (default 4780)
`)
}
