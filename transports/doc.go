// Package transports holds snugd's outbound fetchers: public HTTPS with
// dial-time SSRF checks (the address classifier lives here) and HTTP(S) to a
// LAN device's RFC-1918 literal with a TOFU certificate pin. They take pins,
// limits and resolvers as plain values and report what they saw; they store
// nothing and know nothing of grants, SQL or the API.
//
// Imports: the standard library and daemon's leaf vocabulary (daemon/errcode,
// daemon/wire) only.
package transports
