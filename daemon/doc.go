// Package daemon is snugd's composition root. New wires the core's parts;
// Run runs their long-lived services under the caller's context; the API
// and main take the parts they use (Grants, Proposers, Records, Fetch,
// Pairing, Devices, Hosts). The root itself does only what needs several
// parts at once: the status report (status.go), the hint stream as the
// caller may hear it (hints_visible.go) and the lifecycle.
//
// Where each concern lives:
//
//	concern                                   package (file)
//	connection rows, the five writers         daemon/grants (connections.go)
//	the grant index the executor reads        daemon/grants (index.go, index_start.go)
//	credential custody, connection state      daemon/grants (custody.go)
//	app ownership and sharing                 daemon/grants (owners.go)
//	proposer channels, re-consent             daemon/grants (channels.go: Proposers)
//	review and its token                      daemon/grants (review.go: Proposers)
//	import, export, the journal read          daemon/grants (importdb.go, acts.go: Records)
//	app summaries, the chat lane's facts      daemon/grants (apps.go, facts.go: Records)
//	a ceremony's guarded commit               daemon/grants (commit.go)
//	the gate pipeline, Net, TestConnection    daemon/fetch (fetch.go, fetch_gates.go)
//	credential sources per kind (gate 8)      daemon/fetch (fetch_inject.go)
//	transports of gate 9                      daemon/fetch (fetch_transport.go)
//	connection URLs                           daemon/fetch (connurl.go)
//	confirms and the session memory           daemon/fetch (confirm.go)
//	standing approvals                        daemon/fetch (standing.go)
//	the guarded client for side calls         daemon/fetch (side.go)
//	OAuth sign-in, tokens, revocation         daemon/pairing (oauthflow.go, oauthconn.go)
//	the SimpleFIN token claim                 daemon/pairing (claim.go)
//	LAN pairing, relocation                   daemon/pairing (lan.go: Devices)
//	device links, helper transports           daemon/pairing (linkdev.go: Devices)
//	pairing flows                             daemon/pairing (flows.go)
//	the journal and its batcher               daemon/journal
//	the hint bus                              daemon/hints
//	host pairing, authentication, the caller  daemon/hostauth
//	the status report, the hint stream        daemon (status.go, hints_visible.go)
//	services and their order                  daemon (services.go)
//	what ctl doctor checks of the data dir    daemon (diagnose.go)
//
// The stack: pairing above fetch (it uses the side client), fetch above
// grants (it reads the snapshot), all three above journal, hints and
// hostauth. Each part says what it needs of another on its own side
// (fetch.Snapshots, fetch.Owners, grants.Gates, pairing.Rows,
// pairing.Stager); grants runs the hooks the others register (RevokeHook,
// ChangeHook) and never names them.
//
// Who may see what is decided below the API, from the caller in ctx
// (hostauth.WithHost, set by the API's security chain): a paired host sees
// and addresses only the apps it owns or was given; a context without a
// host is the administrator's.
//
// Leaves that know nothing of the core: daemon/scrub, daemon/oauth,
// daemon/claim, requirement, template, registry, starter, wire and errcode;
// under internal/, store (every SQL statement), strictjson and ident.
//
// Imports: transports, lan, linkdevice and daemon's own subpackages, the
// standard library, the SQLite driver (through daemon/internal/store only),
// golang.org/x/crypto and golang.org/x/net. Never api, never cmd, never
// echo. Domain types carry no JSON tags.
package daemon
