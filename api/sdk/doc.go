// Package sdk ships the host SDK (snugd-host.js, with its TypeScript
// declarations) and the reference browser host built on it (host/), so that
// `snugd webhost` serves exactly the files in this folder. The files are the
// product; this package only embeds them.
//
// Imports: embed only.
package sdk

import "embed"

// Files holds snugd-host.js, snugd-host.d.ts, README.md and host/.
//
//go:embed snugd-host.js snugd-host.d.ts README.md host
var Files embed.FS
