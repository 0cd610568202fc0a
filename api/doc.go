// Package api is snugd's loopback JSON API over the daemon's parts: New
// takes a Deps (the grant book, its proposers and records, the executor,
// the pairing ceremonies and devices, the host pairing book, and the
// composition root's status and hint stream), and each handler calls the
// part that owns what it serves. Who may see an item is decided there,
// from the caller the chain puts in the request's context
// (hostauth.WithHost).
//
// Where each concern lives:
//
//   - routes.go: the one route table; every route declares its access,
//     app scope, Origin policy, body limit and handler.
//   - guard.go: the security chain of each listener (listenerChain: the
//     TCP listener's and the ctl socket's) — Host, upgrades and no-cors,
//     Origin, the route match, CORS and private-network preflights,
//     authentication with failed-attempt rate limits (ratelimit.go) and
//     the binding of each call to its host's pairing, the app scope check,
//     JSON-only bodies with per-route limits (bind.go), per-route
//     deadlines. The chain's route match dispatches the handler.
//   - Thin handlers over the parts: pairing.go (health and host pairing),
//     connections.go and claim.go (rows, writers, credentials, the
//     SimpleFIN claim), flows.go (GET /v1/flows/{flowId}), owners.go
//     (app shares, ctl only), apps.go and status.go (what ctl reports),
//     executor.go (net, confirms, standing, journal), events.go (the SSE
//     hint stream), schemas.go (the frame schemas and the registry),
//     transfer.go (export and import).
//   - errors.go: the code → HTTP status table (an uncoded error is logged
//     there; an INTERNAL one was logged where it happened); wire.go: the
//     JSON shapes.
//   - server.go: the two listeners and the shutdown (ListenTCP on loopback
//     only, ListenCtl on the data directory's unix socket with peer
//     credentials checked, ctl.go; Serve drains and has the daemon deny
//     parked confirms, Core.BeginShutdown; Deps and DepsOf).
//   - client.go: the typed Client that snugd ctl uses over the ctl socket.
//
// API.md beside this file documents every route.
//
// Echo stays inside this folder behind an http.Handler and never appears
// in an exported name; it makes each handler's Context and routes nothing.
//
// Imports: daemon, daemon's subpackages and github.com/labstack/echo/v4.
package api
