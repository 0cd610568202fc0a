// Package api is snugd's loopback JSON API over daemon: one route table, one
// security middleware chain (Host, Origin, auth, CORS and private-network
// preflight, body limits), thin handlers, the SSE hint stream, and the typed
// Client that snugd ctl uses. Echo stays inside this folder behind an
// http.Handler and never appears in an exported name.
//
// Imports: daemon, daemon's subpackages and github.com/labstack/echo/v4.
package api
