package linkdevice

import (
	"fmt"
	"strings"
)

// ConfineCommand is the subcommand of snugd's hidden helper command that
// starts a helper confined: main's table entry "helper confine" runs
// RunConfine with the arguments after it, and Config.Confine names it.
const ConfineCommand = "confine"

// Confinement says how a helper is narrowed: what was reached for a
// started helper (Status, Supervisor.Confinement), or what this machine
// would give one (Probe).
type Confinement struct {
	// Landlock is the Landlock ABI version enforced on the helper (1 and
	// up), 0 when none is: not Linux, a kernel without Landlock, or no
	// confining command configured.
	Landlock int
	// Files reports whether the file system is narrowed to the system's
	// libraries, the helper's executable and its session directory.
	Files bool
	// Network reports whether TCP connect and bind are narrowed to the
	// ports the helper's Spec declares (Landlock ABI 4; UDP from ABI 10).
	Network bool
	// Scoped reports whether the helper can signal, and reach over
	// abstract Unix sockets, only processes of its own session (ABI 6).
	Scoped bool
	// NoNewPrivs reports whether the helper runs with no_new_privs: no
	// set-user-id or file capability raises its privileges.
	NoNewPrivs bool
	// Descendants reports whether every process the helper starts, in
	// its own session or not, ends with the helper's session (a
	// per-session subreaper).
	Descendants bool
}

// String is the one line snugd ctl doctor and status print, e.g.
// "landlock ABI 7 (files, network, scoped), no_new_privs, descendants end
// with the session".
func (c Confinement) String() string {
	var parts []string
	if c.Landlock > 0 {
		var what []string
		for _, w := range []struct {
			on   bool
			name string
		}{{c.Files, "files"}, {c.Network, "network"}, {c.Scoped, "scoped"}} {
			if w.on {
				what = append(what, w.name)
			}
		}
		parts = append(parts, fmt.Sprintf("landlock ABI %d (%s)", c.Landlock, strings.Join(what, ", ")))
	} else {
		parts = append(parts, "no landlock")
	}
	if c.NoNewPrivs {
		parts = append(parts, "no_new_privs")
	}
	if c.Descendants {
		parts = append(parts, "descendants end with the session")
	} else {
		parts = append(parts, "descendants not tracked")
	}
	return strings.Join(parts, ", ")
}

// Confined reports whether the file system is narrowed: the level a
// deployment should have.
func (c Confinement) Confined() bool { return c.Landlock > 0 && c.Files }

// fromABI is the Confinement the Landlock rules give at ABI v.
func fromABI(v int) Confinement {
	return Confinement{Landlock: v, Files: v >= 1, Network: v >= 4, Scoped: v >= 6, NoNewPrivs: true, Descendants: true}
}

// maxABI is the newest Landlock ABI go-landlock v0.11 knows.
const maxABI = 11
