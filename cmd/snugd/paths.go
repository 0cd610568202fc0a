package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// places computes snugd's default locations on one OS from that OS's
// environment. It does no I/O, so every OS's answer can be tested anywhere.
type places struct {
	goos   string
	getenv func(string) string
	home   string // the user's home directory; "" when unknown
}

// hostPlaces returns the places of this machine and user.
func hostPlaces(getenv func(string) string) places {
	p := places{goos: runtime.GOOS, getenv: getenv}
	if p.goos == "windows" {
		p.home = getenv("USERPROFILE")
	} else {
		p.home = getenv("HOME")
	}
	if p.home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			p.home = h
		} else if u, err := user.Current(); err == nil {
			p.home = u.HomeDir
		}
	}
	if !p.isAbs(p.home) {
		p.home = ""
	}
	return p
}

var errNoHome = errors.New("no home directory to keep per-user data in; pass --data-dir")

// dataDir returns where snugd keeps its database, keys, config.json and ctl
// socket: for the system service (system) or for one user.
//
//	linux, other unix  /var/lib/snugd        $XDG_DATA_HOME/snugd or ~/.local/share/snugd
//	darwin             /Library/Application Support/snugd    ~/Library/Application Support/snugd
//	windows            %ProgramData%\snugd   %LOCALAPPDATA%\snugd
func (p places) dataDir(system bool) (string, error) {
	switch p.goos {
	case "darwin":
		if system {
			return "/Library/Application Support/snugd", nil
		}
		return p.inHome("Library", "Application Support", "snugd")
	case "windows":
		if system {
			return p.join(p.programData(), "snugd"), nil
		}
		return p.localAppData("snugd")
	default:
		if system {
			return "/var/lib/snugd", nil
		}
		// The XDG base directory spec: an empty or relative value is ignored.
		if x := p.getenv("XDG_DATA_HOME"); p.isAbs(x) {
			return p.join(x, "snugd"), nil
		}
		return p.inHome(".local", "share", "snugd")
	}
}

// logDir returns the directory the service's logs go to, or "" when snugd
// logs to stderr and the service manager keeps it: journald on Linux (system
// and user units alike), whatever supervises snugd on other unix systems.
// launchd appends stderr to snugd.log here (the plist says so); a Windows
// service has no stderr, so runService writes snugd.log here itself.
func (p places) logDir(system bool) (string, error) {
	switch p.goos {
	case "darwin":
		if system {
			return "/Library/Logs/snugd", nil
		}
		return p.inHome("Library", "Logs", "snugd")
	case "windows":
		if system {
			return p.join(p.programData(), "snugd", "logs"), nil
		}
		return p.localAppData("snugd", "logs")
	default:
		return "", nil
	}
}

func (p places) programData() string {
	if d := p.getenv("ProgramData"); p.isAbs(d) {
		return d
	}
	return `C:\ProgramData`
}

func (p places) localAppData(elem ...string) (string, error) {
	if d := p.getenv("LOCALAPPDATA"); p.isAbs(d) {
		return p.join(append([]string{d}, elem...)...), nil
	}
	return p.inHome(append([]string{"AppData", "Local"}, elem...)...)
}

func (p places) inHome(elem ...string) (string, error) {
	if p.home == "" {
		return "", errNoHome
	}
	return p.join(append([]string{p.home}, elem...)...), nil
}

// join joins path elements with the separator of p's OS.
func (p places) join(elem ...string) string {
	if p.goos != "windows" {
		return path.Join(elem...)
	}
	parts := make([]string, len(elem))
	for i, e := range elem {
		e = strings.ReplaceAll(e, "/", `\`)
		if i > 0 {
			e = strings.TrimLeft(e, `\`)
		}
		parts[i] = strings.TrimRight(e, `\`)
	}
	return strings.Join(parts, `\`)
}

// isAbs reports whether path is absolute on p's OS.
func (p places) isAbs(name string) bool {
	if p.goos != "windows" {
		return strings.HasPrefix(name, "/")
	}
	if strings.HasPrefix(name, `\\`) { // UNC
		return len(name) > 2
	}
	return len(name) >= 3 && name[1] == ':' && (name[2] == '\\' || name[2] == '/') &&
		('a' <= name[0] && name[0] <= 'z' || 'A' <= name[0] && name[0] <= 'Z')
}

// defaultDataDir returns this machine's default data directory for the
// system service (system) or for the current user; "" when a per-user
// directory is wanted and the user has no home directory.
func defaultDataDir(system bool) string {
	d, _ := hostPlaces(os.Getenv).dataDir(system)
	return d
}

// dataDirEnv names the environment variable that sets the data directory
// when --data-dir is not given.
const dataDirEnv = "SNUGD_DATA_DIR"

// resolveDataDir returns the data directory snugd run and snugd ctl use:
// flagValue when given, else $SNUGD_DATA_DIR, else the default for how
// snugd runs (runsAsSystem), made absolute either way.
func resolveDataDir(getenv func(string) string, flagValue string) (string, error) {
	dir := flagValue
	if dir == "" {
		dir = getenv(dataDirEnv)
	}
	if dir == "" {
		var err error
		if dir, err = hostPlaces(getenv).dataDir(runsAsSystem()); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("data directory %s: %w", dir, err)
	}
	return abs, nil
}

// ensureDataDir creates dir (and its parents) with mode 0700 if it does not
// exist, so that on a fresh machine snugd run works with the defaults, as root
// and as a user. An existing dir must be a directory of this user's that no
// one else may enter (on Windows its ACL decides; see packaging/windows.md):
// snugd does not take over, or silently tighten, a directory that is shared.
func ensureDataDir(dir string) error {
	_, err := os.Stat(dir)
	created := errors.Is(err, fs.ErrNotExist)
	if created {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s is not a directory", dir)
	}
	if err := checkOwner(fi); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	if runtime.GOOS == "windows" || fi.Mode().Perm() == 0o700 {
		return nil
	}
	if !created {
		return fmt.Errorf("data directory %s has mode %04o; it must be 0700 (chmod 700 %s)", dir, fi.Mode().Perm(), dir)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // an odd umask
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}
