// Package daemon is snugd's core: connections and grants (the five writers of
// spec §12.3 plus reconnect), import reconciliation, credential custody, the
// connected-fetch executor (§14), the confirm broker and standing approvals.
//
// Where each concern lives:
//
//   - *Daemon (daemon.go) holds the wiring and the parts that write: the
//     writers (connections.go), custody (custody.go), the proposers
//     (channels.go), import (importdb.go), review (review.go). Its host,
//     executor, confirm and standing methods are thin forwarders for the
//     API; host pairing and authentication are daemon/hostauth's pairing
//     book (hosts.go forwards to it).
//   - A connection's pairing with a device (§13's families): pairing.go
//     says which family a row still owes, flows.go runs the pairing flows
//     (OAuth consent, LAN exchange, device link) with their lifetimes, and
//     claim.go the token-claim family (its pure checks in daemon/claim).
//   - The executor (fetch.go: type executor) owns the gate pipeline and its
//     dependencies: the grant index (index.go; the start builds it from
//     one scan and loads an app on first use, index_start.go), the confirm
//     broker, the standing gate, the journal, the credential reader, the
//     credential sources per kind (fetch_inject.go) and the transports
//     (fetch_transport.go). Net runs one snug:net-request through gates();
//     TestConnection runs a requirement's testRequest on the probe path.
//     fetch.go documents the pipeline.
//   - The confirm broker (confirm.go: confirmBroker) owns the queue,
//     ConfirmByID, DecideConfirm, the session memory (R10) and the
//     withdrawal of a host's confirms (unpairing) and of all of them
//     (BeginShutdown).
//   - The standing gate (standing.go: standingGate) owns the armed
//     approval (§17); it takes the index and the journal.
//   - The journal (journal.go: journal) is written by the executor and the
//     standing gate; its batcher is a service.
//   - Services (services.go) are the long-lived parts, Run(ctx) error,
//     started by New and stopped by Close: the journal batcher today.
//   - Facts (facts.go) are the chat lane's connection facts (§16); hints
//     (hints.go) the doorbell of /v1/events; status and diagnose
//     (status.go, diagnose.go) what ctl reports.
//   - Leaves that know nothing of *Daemon: daemon/scrub (gate 10's value
//     scrub and the provider-error extractor), daemon/oauth (the OAuth
//     protocol core), requirement, template, registry, starter, wire and
//     errcode; under internal/, store (every SQL statement), strictjson
//     (the one strict JSON reader of wire and requirement) and ident (the
//     app-id and slot rules every layer checks).
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
