package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/registry"
)

// drainBound is how long snugd run waits for in-flight requests after
// SIGTERM before it cancels them; the API then gives cancelled requests a
// few seconds to answer. Both fit inside shutdownBound, which the service
// files give headroom beyond.
const drainBound = shutdownBound - 10*time.Second

// cmdRun is snugd run [--data-dir DIR] [--port N] (and bare snugd): the
// daemon in the foreground until SIGTERM or SIGINT (ctx), or a service
// stop. It exits 0 after a clean shutdown, 1 when the daemon cannot start
// (a port in use, a data directory held by another daemon, a bad
// configuration), 2 for a usage error.
func cmdRun(ctx context.Context, e env, args []string) int {
	flags := flag.NewFlagSet("snugd run", flag.ContinueOnError)
	flags.SetOutput(e.stderr)
	var rf runFlags
	rf.register(flags)
	if code, ok := parseArgs(flags, args); !ok {
		return code
	}
	// A usage error changes nothing: it is refused before the data
	// directory or config.json is created.
	if rf.config.Port != 0 {
		if err := checkPort(rf.config.Port); err != nil {
			fmt.Fprintf(e.stderr, "snugd run: --port: %v\n", err)
			return exitUsage
		}
	}
	err := runService(ctx, e, func(ctx context.Context, e env) error { return runDaemon(ctx, e, rf) })
	if err != nil {
		fmt.Fprintf(e.stderr, "snugd run: %v\n", err)
		return exitNo
	}
	return exitOK
}

// runDaemon starts the daemon and serves the API until ctx is done:
// config, the TCP port, then the data directory, config.json, logger,
// daemon and the ctl socket, then Serve, which drains on shutdown; the
// store closes last.
func runDaemon(ctx context.Context, e env, rf runFlags) error {
	restrictUmask()
	dir, err := resolveDataDir(e.getenv, rf.dataDir)
	if err != nil {
		return err
	}
	// Read the configuration (the defaults when there is no config.json
	// or no directory yet) and take the port before creating anything: a
	// start that fails on a taken port or a bad configuration leaves no
	// data directory, key or database behind.
	cfg, err := loadConfig(dir, rf.config)
	if err != nil {
		return err
	}
	tcp, err := api.ListenTCP(cfg.listenAddr())
	if err != nil {
		return err
	}
	defer func() {
		if tcp != nil {
			tcp.Close()
		}
	}()
	if err := ensureDataDir(dir); err != nil {
		return err
	}
	if err := writeDefaultConfig(dir); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, configFile), err)
	}
	// Text (logfmt) lines on stderr: readable in a terminal, and one
	// parseable line per record in the journal or snugd.log. No level logs
	// a credential, a token, a credentialed URL or a request body.
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	version := buildVersion()

	reg, err := registry.Load()
	if err != nil {
		return fmt.Errorf("load the provider registry: %w", err)
	}
	helpers, err := newHelpers(dir, log) // run by the daemon (run_helpers.go)
	if err != nil {
		return err
	}
	d, err := daemon.New(ctx, daemon.Config{
		DataDir: dir, Logger: log, TransportPolicy: fetch.TransportPolicy(cfg.TransportPolicy),
		ConfirmTimeout: cfg.ConfirmTimeout, // denies sooner, never admits (config.go)
		Registry:       reg, Helpers: helpers, StandingTargets: standingTargets(reg),
	})
	if err != nil {
		return err
	}
	defer func() {
		if err := d.Close(); err != nil {
			log.Error("close the store", "err", err)
		}
	}()
	ctl, err := api.ListenCtl(dir, log)
	if err != nil {
		return err
	}
	listener := tcp
	tcp = nil // Serve owns it now
	s := api.New(api.DepsOf(d), api.Options{Version: version, Logger: log, DrainTimeout: drainBound})
	fmt.Fprintf(e.stdout, "snugd %s: data in %s, API on http://%s, ctl socket %s\n",
		version, dir, listener.Addr(), filepath.Join(dir, api.CtlSocket))
	log.Info("snugd started", "version", version, "data_dir", dir, "listen", listener.Addr().String(), "transport_policy", string(cfg.TransportPolicy))
	// The API server and the daemon's long-lived parts run side by side
	// until ctx is done (or one of them fails, which stops the other);
	// the deferred Close then closes the store.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	errs := make(chan error, 2)
	go func() { errs <- s.Serve(ctx, listener, ctl) }()
	go func() { errs <- d.Run(ctx) }()
	err = <-errs
	stop()
	err = errors.Join(err, <-errs)
	log.Info("snugd stopped")
	return err
}
