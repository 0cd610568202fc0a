// Package api is snugd's loopback JSON API over daemon: one route table
// (routes.go), one security chain run before routing (guard.go: Host,
// upgrades and no-cors, Origin, CORS and private-network preflights,
// authentication with failed-attempt rate limits, JSON-only bodies with
// per-route limits, per-route deadlines), thin handlers, the SSE hint
// stream, the code → HTTP status table (errors.go), the wire structs
// (wire.go), the two listeners (ListenTCP on loopback only, ListenCtl on
// the data directory's unix socket with peer credentials checked) and the
// typed Client that snugd ctl uses. API.md beside this file documents
// every route.
//
// Echo stays inside this folder behind an http.Handler and never appears
// in an exported name.
//
// Imports: daemon, daemon's subpackages and github.com/labstack/echo/v4.
package api
