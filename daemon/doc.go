// Package daemon is snugd's core: connections and grants (the five writers of
// spec §12.3 plus reconnect), import reconciliation, credential custody, the
// connected-fetch gate pipeline (§14), the confirm broker and standing approvals.
//
// The executor's API: Net runs one snug:net-request through gates 1–10 in
// the spec's order and returns the encoded net-response; TestConnection runs
// a requirement's testRequest on the probe path. Confirms, ConfirmByID and
// DecideConfirm are the confirm broker (gate 6); ArmStanding, Standings,
// StandingFor, DisarmStanding and KillStanding the standing approvals (§17);
// Facts the chat lane's connection facts (§16); Journal the executor's
// journal; ProviderErrorText and ScrubPrivateIPv4 the scrubs other seats
// reuse. fetch.go documents the pipeline.
//
// Hosts own their apps (owners.go): a context made with WithHost acts for
// one paired host, and AppVisible, CheckApp and AppFilter are the one
// check every app-scoped entry point makes; the writers check again and
// record a host's first row as its claim. ShareApp, UnshareApp and
// AppAccess are the administrator's. ApproveReviewed and ReapproveReviewed
// bind an approval to the review it follows (Review.Token).
//
// Imports: transports, lan, linkdevice and daemon's own subpackages, the
// standard library, the SQLite driver (through daemon/internal/store only),
// golang.org/x/crypto and golang.org/x/net. Never api, never cmd, never echo.
// Domain types carry no JSON tags.
package daemon
