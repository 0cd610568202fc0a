// Package packaging embeds the service files snugd ships (systemd unit,
// launchd plist, Windows notes, Debian package files) so that snugd install
// writes exactly what is shipped.
//
// Imports: embed only.
package packaging
