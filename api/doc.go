// Package api is snugd's loopback JSON API over daemon: one route table
// (routes.go), one security chain (guard.go: Host, upgrades and no-cors,
// Origin, the route match, CORS and private-network preflights,
// authentication with failed-attempt rate limits and the binding of each
// call to its host's pairing, JSON-only bodies with per-route limits,
// per-route deadlines) whose route match dispatches the handler, thin
// handlers (executor.go: net, confirms, standing, journal; events.go: the
// SSE hint stream), the code → HTTP status table (errors.go), the wire
// structs (wire.go), the two listeners and the shutdown (server.go:
// ListenTCP on loopback only, ListenCtl on the data directory's unix
// socket with peer credentials checked; Serve drains and has the daemon
// deny parked confirms, Daemon.BeginShutdown) and the typed Client that
// snugd ctl uses. API.md beside this file documents every route.
//
// Echo stays inside this folder behind an http.Handler and never appears
// in an exported name; it makes each handler's Context and routes nothing.
//
// Imports: daemon, daemon's subpackages and github.com/labstack/echo/v4.
package api
