// Package fetch is the connected-fetch executor: the one place that both
// reads credential values and calls the network.
//
// Where each concern lives:
//
//   - The executor (fetch.go: Executor) owns the gate pipeline and its
//     dependencies; gates() is the only place their order is written.
//     The gates and the one credential read are in fetch_gates.go, gate
//     8's credential sources per kind in fetch_inject.go, the transports of
//     gate 9 (public, LAN, local helper) in fetch_transport.go, the answer's
//     frame in fetch_frame.go and the journal entry of a request in
//     fetch_journal.go.
//   - Connection URLs (connurl.go): snug-connection://<slot>/… resolved to
//     the row's host.
//   - The confirm broker (confirm.go: ConfirmBroker): the queue, decisions,
//     the session memory, the withdrawal of a host's confirms and of all
//     of them at shutdown. Listing, addressing and deciding a confirm
//     follow the caller in ctx.
//   - The standing gate (standing.go: StandingGate): armed standing
//     approvals, decided before the session memory.
//   - Side (side.go): the one guarded way out for the daemon's side calls
//     (OAuth's token and revocation POSTs, the token claim, the LAN
//     exchange): ceiling check, SSRF gate, the public transport, the caps.
//
// Imports: daemon/grants (the snapshot it reads; Snapshots and Owners are
// what it needs of the book), daemon/journal, daemon/hints,
// daemon/hostauth (the caller of ctx), transports, lan, linkdevice and the
// leaves (wire, errcode, scrub, template, requirement, registry). Never
// daemon/pairing: the OAuth token source and the after-answer hook are
// given to it (TokenSource, ExecDeps.Answered).
package fetch
