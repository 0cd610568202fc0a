package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kardianos/service"
)

// serviceName names snugd to every service manager: the systemd unit
// snugd.service, the launchd label and plist snugd.plist, the Windows service.
const serviceName = "snugd"

// shutdownBound is how long snugd run may take after SIGTERM (or a service
// stop) to stop accepting, drain in-flight requests, deny parked confirms,
// stop its helpers and close the store. The service files give it more:
// TimeoutStopSec=45s (systemd), ExitTimeOut 45 (launchd).
const shutdownBound = 30 * time.Second

// manager is the part of a kardianos/service Service that the service
// commands use. A service.Service is one; tests use a fake.
type manager interface {
	Install() error
	Uninstall() error
	Start() error
	Stop() error
	Restart() error
	Status() (service.Status, error)
	Platform() string
}

// serviceHost is the machine the service commands act on.
type serviceHost struct {
	places places
	// platform is the kardianos/service system snugd ships files for on this
	// OS ("linux-systemd", "darwin-launchd", "windows-service"); "" for none.
	platform   string
	isRoot     bool
	executable func() (string, error)
	newManager func(*service.Config) (manager, error)
	// unitPath returns where the service manager keeps snugd's service file,
	// "" when it keeps none (Windows: the registry).
	unitPath func(user bool) (string, error)
	mkdirAll func(string, os.FileMode) error
}

// hostServiceHost returns this machine as a serviceHost.
func hostServiceHost(getenv func(string) string) serviceHost {
	p := hostPlaces(getenv)
	return serviceHost{
		places:     p,
		platform:   shippedPlatform(p.goos),
		isRoot:     os.Geteuid() == 0,
		executable: os.Executable,
		newManager: func(c *service.Config) (manager, error) { return service.New(controlOnly{}, c) },
		unitPath:   func(user bool) (string, error) { return unitPathFor(p, user) },
		mkdirAll:   os.MkdirAll,
	}
}

// shippedPlatform returns the kardianos/service system whose service files
// snugd ships for goos, "" when it ships none.
func shippedPlatform(goos string) string {
	switch goos {
	case "linux":
		return "linux-systemd"
	case "darwin":
		return "darwin-launchd"
	case "windows":
		return "windows-service"
	}
	return ""
}

// unitPathFor returns where kardianos/service writes snugd's service file.
func unitPathFor(p places, user bool) (string, error) {
	switch {
	case p.goos == "linux" && user:
		return p.inHome(".config", "systemd", "user", serviceName+".service")
	case p.goos == "linux":
		return "/etc/systemd/system/" + serviceName + ".service", nil
	case p.goos == "darwin" && user:
		return p.inHome("Library", "LaunchAgents", serviceName+".plist")
	case p.goos == "darwin":
		return "/Library/LaunchDaemons/" + serviceName + ".plist", nil
	}
	return "", nil
}

// controlOnly is the service.Interface of the control commands, which never
// call Run.
type controlOnly struct{}

func (controlOnly) Start(service.Service) error { return nil }
func (controlOnly) Stop(service.Service) error  { return nil }

// serviceCommand returns the command snugd ACTION, for ACTION one of install,
// uninstall, start, stop, restart and status.
func serviceCommand(action string) command {
	return func(ctx context.Context, e env, args []string) int {
		return serviceMain(e, hostServiceHost(e.getenv), action, args)
	}
}

// serviceMain runs snugd ACTION [--user] (install also takes --data-dir and
// --port) against h.
func serviceMain(e env, h serviceHost, action string, args []string) int {
	name := "snugd " + action
	flags := flag.NewFlagSet(name, flag.ContinueOnError)
	flags.SetOutput(e.stderr)
	user := flags.Bool("user", false, "a per-user service (systemd user unit, launchd agent) instead of the system's")
	var rf runFlags
	if action == "install" {
		rf.register(flags)
	}
	if code, ok := parseArgs(flags, args); !ok {
		return code
	}
	if rf.config.Port != 0 {
		if err := checkPort(rf.config.Port); err != nil {
			fmt.Fprintf(e.stderr, "%s: --port: %v\n", name, err)
			return exitUsage
		}
	}
	goos := h.places.goos
	if *user && goos == "windows" {
		fmt.Fprintf(e.stderr, "%s: Windows has no per-user services; run it without --user from an administrator prompt\n", name)
		return exitUsage
	}
	if h.platform == "" {
		return noServiceManager(e, name, action, errNoServiceManager(goos, ""))
	}
	if action != "status" && !*user && goos != "windows" && !h.isRoot {
		return failed(e, name, errors.New("the system service needs root: run it with sudo, or use --user for a per-user service"))
	}

	o := serviceOptions{user: *user}
	if action == "install" {
		var err error
		if o, err = h.installOptions(*user, rf); err != nil {
			return failed(e, name, err)
		}
		content, err := renderServiceFile(goos, o)
		if err != nil {
			return failed(e, name, err)
		}
		m, err := h.manager(serviceConfig(goos, o, content))
		if err != nil {
			return failed(e, name, err)
		}
		return h.install(e, m, o, content)
	}

	m, err := h.manager(serviceConfig(goos, o, ""))
	if err != nil {
		return noServiceManager(e, name, action, err)
	}
	st, err := m.Status()
	if errors.Is(err, service.ErrNotInstalled) {
		switch action {
		case "status":
			fmt.Fprintln(e.stdout, "not installed")
			return exitNo
		case "uninstall":
			fmt.Fprintln(e.stdout, "not installed")
			return exitOK
		}
		return failed(e, name, fmt.Errorf("not installed; run snugd install%s first", userFlag(*user)))
	}
	if err != nil {
		// Installed, in a state kardianos/service does not name (systemd's
		// "failed"): status says so; the other actions go ahead.
		if action == "status" {
			fmt.Fprintf(e.stdout, "unknown (%v)\n", err)
			return exitNo
		}
		st = service.StatusUnknown
	}
	var done string
	switch action {
	case "status":
		switch st {
		case service.StatusRunning:
			fmt.Fprintln(e.stdout, "running")
			return exitOK
		case service.StatusStopped:
			fmt.Fprintln(e.stdout, "stopped")
		default:
			fmt.Fprintln(e.stdout, "unknown")
		}
		return exitNo
	case "start":
		if st == service.StatusRunning {
			fmt.Fprintln(e.stdout, "already running")
			return exitOK
		}
		err, done = m.Start(), "started"
	case "stop":
		if st == service.StatusStopped {
			fmt.Fprintln(e.stdout, "already stopped")
			return exitOK
		}
		err, done = m.Stop(), "stopped"
	case "restart":
		err, done = m.Restart(), "restarted"
	case "uninstall":
		return h.uninstall(e, m, o, st)
	default:
		return failed(e, name, errors.New("unknown action"))
	}
	if err != nil {
		return failed(e, name, err)
	}
	fmt.Fprintln(e.stdout, done)
	return exitOK
}

// serviceConfig returns the kardianos/service configuration of the service
// o describes; content is its rendered service file (install only).
func serviceConfig(goos string, o serviceOptions, content string) *service.Config {
	c := &service.Config{
		Name:        serviceName,
		DisplayName: serviceName,
		Description: "snugd, the Snug credential sidecar",
		Option:      service.KeyValue{"UserService": o.user},
	}
	if o.exe == "" { // a control command: the name is all it needs
		return c
	}
	c.Executable, c.Arguments = o.exe, o.runArgs()
	switch goos {
	case "linux":
		c.Option["SystemdScript"] = content
	case "darwin":
		c.Option["LaunchdConfig"] = content
	case "windows":
		// The service control manager restarts snugd 5 s after its process
		// dies; its failure count resets after 5 minutes.
		c.Option["OnFailure"] = "restart"
		c.Option["OnFailureDelayDuration"] = "5s"
		c.Option["OnFailureResetPeriod"] = 300
		c.Option["StartType"] = "automatic"
	}
	return c
}

// manager returns the service manager for c, refusing every kind snugd ships
// no service file for (kardianos/service falls back to System V scripts of
// its own on a Linux machine without systemd).
func (h serviceHost) manager(c *service.Config) (manager, error) {
	m, err := h.newManager(c)
	if errors.Is(err, service.ErrNoServiceSystemDetected) {
		return nil, errNoServiceManager(h.places.goos, "")
	}
	if err != nil {
		return nil, err
	}
	if p := m.Platform(); p != h.platform {
		return nil, errNoServiceManager(h.places.goos, p)
	}
	return m, nil
}

// noServiceManagerError is the refusal where snugd ships no service file
// for the machine's service manager (or there is none).
type noServiceManagerError struct{ msg string }

func (e *noServiceManagerError) Error() string { return e.msg }

// noServiceManager reports err, a failure to reach the service manager. For
// status, a machine without one has no snugd service either: it prints "not
// installed", as on a machine whose manager has no unit, and leaves the
// explanation to the other actions.
func noServiceManager(e env, name, action string, err error) int {
	var nm *noServiceManagerError
	if action == "status" && errors.As(err, &nm) {
		fmt.Fprintln(e.stdout, "not installed")
		return exitNo
	}
	return failed(e, name, err)
}

func errNoServiceManager(goos, found string) error {
	var what string
	switch {
	case goos == "linux":
		// kardianos/service finds System V scripts, upstart or nothing
		// where systemd is not running: a container, a chroot, a minimal
		// init. That is what the administrator needs to hear.
		what = "systemd is not running on this machine (a container, a chroot, or another init system)"
	case found != "":
		what = "this " + goos + " machine's service manager (" + found + ") is not one snugd ships a service file for"
	default:
		what = "no service manager snugd knows is running on this " + goos + " machine"
	}
	return &noServiceManagerError{what + `. snugd installs itself as a systemd, launchd or Windows service only. Here, run "snugd run" under your own supervisor instead (the container's entrypoint or command, runit, s6, supervisord): it stays in the foreground, logs to stderr and stops cleanly on SIGTERM`}
}

// installOptions works out what snugd install installs.
func (h serviceHost) installOptions(user bool, rf runFlags) (serviceOptions, error) {
	o := serviceOptions{user: user, port: rf.config.Port}
	exe, err := h.executable()
	if err != nil {
		return o, fmt.Errorf("cannot find the snugd binary: %w", err)
	}
	if isTemporaryBuild(exe) {
		return o, fmt.Errorf("%s is a temporary build (go run) in Go's build cache, which Go cleans; build snugd first and install that binary (go build -o /usr/local/bin/snugd ./cmd/snugd, or go install ./cmd/snugd)", exe)
	}
	o.exe = exe
	if rf.dataDir != "" {
		if o.dataDir, err = filepath.Abs(rf.dataDir); err != nil {
			return o, fmt.Errorf("--data-dir: %w", err)
		}
	} else if o.dataDir, err = h.places.dataDir(!user); err != nil {
		return o, err
	}
	if o.logDir, err = h.places.logDir(!user); err != nil {
		return o, err
	}
	return o, nil
}

// isTemporaryBuild reports whether exe is a binary go run built: one it
// will delete ($GOTMPDIR/go-build…/b001/exe/snugd), or, since Go 1.24, one
// it keeps in the build cache until the cache is trimmed
// ($GOCACHE/ab/ab12…ef-d/snugd).
func isTemporaryBuild(exe string) bool {
	dir := filepath.Dir(exe)
	if filepath.Base(dir) == "exe" && strings.Contains(dir, "go-build") {
		return true
	}
	return isBuildCacheEntry(filepath.Base(dir), filepath.Base(filepath.Dir(dir)))
}

// isBuildCacheEntry reports whether name is a build cache directory for an
// executable ("<hex action ID>-d") filed under its two-digit prefix.
func isBuildCacheEntry(name, prefix string) bool {
	id, ok := strings.CutSuffix(name, "-d")
	if !ok || len(id) < 32 || len(prefix) != 2 || !strings.HasPrefix(id, prefix) {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// install installs the service, or leaves it be when the same file is there
// already: installing twice succeeds and leaves one unit. A service file that
// differs (another binary, data directory or port) is replaced, and a running
// service restarted so the change takes effect.
func (h serviceHost) install(e env, m manager, o serviceOptions, content string) int {
	fail := func(err error) int { return failed(e, "snugd install", err) }
	file, err := h.unitPath(o.user)
	if err != nil {
		return fail(err)
	}
	var onDisk []byte
	readErr := fs.ErrNotExist
	if file != "" {
		onDisk, readErr = os.ReadFile(file)
		if readErr != nil && !errors.Is(readErr, fs.ErrNotExist) {
			return fail(readErr)
		}
	}
	st, stErr := m.Status()
	installed := !errors.Is(stErr, service.ErrNotInstalled)

	switch {
	case readErr == nil && string(onDisk) == content:
		fmt.Fprintf(e.stdout, "already installed: %s (nothing changed)\n", file)
		return exitOK
	case readErr == nil: // ours, with other settings
		if err := h.prepareLogs(o); err != nil {
			return fail(err)
		}
		if err := m.Uninstall(); err != nil {
			return fail(err)
		}
		if err := m.Install(); err != nil {
			return fail(err)
		}
		if stErr == nil && st == service.StatusRunning {
			if h.places.goos == "darwin" { // uninstalling unloaded the job
				err = m.Start()
			} else {
				err = m.Restart()
			}
			if err != nil {
				return fail(err)
			}
			fmt.Fprintf(e.stdout, "updated %s and restarted the service\n", file)
			return exitOK
		}
		fmt.Fprintf(e.stdout, "updated %s\n", file)
		return exitOK
	case installed && file != "":
		fmt.Fprintf(e.stdout, "already installed, not by snugd install (a package?): %s is not there; nothing changed\n", file)
		return exitOK
	case installed:
		fmt.Fprintln(e.stdout, "already installed (nothing changed); to change its settings run snugd uninstall, then snugd install")
		return exitOK
	}
	if err := h.prepareLogs(o); err != nil {
		return fail(err)
	}
	if err := m.Install(); err != nil {
		return fail(err)
	}
	where := file
	if where == "" {
		where = m.Platform()
	}
	fmt.Fprintf(e.stdout, "installed %s (data in %s); start it with: snugd start%s\n", where, o.dataDir, userFlag(o.user))
	return exitOK
}

// prepareLogs creates launchd's log directory: launchd creates the log file,
// not its directory.
func (h serviceHost) prepareLogs(o serviceOptions) error {
	if h.places.goos != "darwin" || o.logDir == "" {
		return nil
	}
	return h.mkdirAll(o.logDir, 0o700)
}

// uninstall stops and removes the service; the data directory stays.
func (h serviceHost) uninstall(e env, m manager, o serviceOptions, st service.Status) int {
	fail := func(err error) int { return failed(e, "snugd uninstall", err) }
	file, err := h.unitPath(o.user)
	if err != nil {
		return fail(err)
	}
	if file != "" {
		if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("the service was not installed by snugd install (%s is not there); remove it the way it was installed, e.g. with the package manager", file))
		}
	}
	if st == service.StatusRunning {
		if err := m.Stop(); err != nil {
			return fail(err)
		}
	}
	if err := m.Uninstall(); err != nil {
		return fail(err)
	}
	fmt.Fprintln(e.stdout, "uninstalled (the data directory is kept)")
	return exitOK
}

// failed reports err of the command name on stderr, with the likely remedy
// when it is a permission error, and returns exitNo.
func failed(e env, name string, err error) int {
	fmt.Fprintf(e.stderr, "%s: %v\n", name, explain(err))
	return exitNo
}

// explain adds the likely remedy to a permission error.
func explain(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w (the system service needs root or an administrator; or use --user)", err)
	}
	return err
}

func userFlag(user bool) string {
	if user {
		return " --user"
	}
	return ""
}

// parseArgs parses args into flags, which must leave no argument over. It
// returns false and the exit status when the command should end: 0 after
// -h, 2 after a usage error.
func parseArgs(flags *flag.FlagSet, args []string) (int, bool) {
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(flags.Output(), "%s: unexpected argument %q\n", flags.Name(), flags.Arg(0))
		return exitUsage, false
	}
	return 0, true
}
