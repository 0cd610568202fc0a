// Package packaging holds the service files snugd ships (systemd units,
// launchd plist, Windows notes, Debian package files) and embeds the ones
// snugd install writes, so that it writes exactly what is shipped.
//
// Layout: systemd/ (system and per-user units), launchd/ (the plist),
// windows.md (the Windows service), debian/ (control template and maintainer
// scripts, assembled by scripts/deb.sh).
//
// Imports: embed only. Anyone may import it; it imports nothing of snugd.
package packaging
