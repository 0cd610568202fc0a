// Package daemon is snugd's core: connections and grants (the five writers of
// spec §12.3 plus reconnect), import reconciliation, credential custody, the
// connected-fetch gate pipeline (§14), the confirm broker and standing approvals.
//
// Imports: transports, lan, linkdevice and daemon's own subpackages, the
// standard library, the SQLite driver (through daemon/internal/store only),
// golang.org/x/crypto and golang.org/x/net. Never api, never cmd, never echo.
// Domain types carry no JSON tags.
package daemon
