package packaging

import _ "embed"

// The service files as shipped. They are unexported so nothing can replace
// them; the accessors below hand out the (immutable) strings.
var (
	//go:embed systemd/snugd.service
	systemdUnit string
	//go:embed systemd/snugd-user.service
	systemdUserUnit string
	//go:embed launchd/snugd.plist
	launchdPlist string
)

// SystemdUnit returns systemd/snugd.service, the system unit.
func SystemdUnit() string { return systemdUnit }

// SystemdUserUnit returns systemd/snugd-user.service, the per-user unit.
func SystemdUserUnit() string { return systemdUserUnit }

// LaunchdPlist returns launchd/snugd.plist, the launchd job for both a
// LaunchDaemon and a per-user LaunchAgent.
func LaunchdPlist() string { return launchdPlist }
