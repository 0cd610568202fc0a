// Package hostauth is host pairing and authentication for the loopback
// API (DESIGN.md, loopback API security): the pairing book, the host
// tokens and their origin binding.
//
// A host asks to pair with a challenge, BASE64URL(SHA256(verifier)) as in
// PKCE S256, and shows the user a short code; the administrator approves
// that code on the ctl socket; the host redeems once, with its verifier,
// for a 256-bit token bound to its origin. snugd keeps only the token's
// SHA-256. Authenticate checks a token and its origin on every request
// without SQL; Unpair revokes a token at once and cancels what its host
// has running.
//
// An administrator can also invite a desktop host by name (Invite): the
// invitation, 256 random bits of which snugd keeps only the SHA-256, lets
// one pairing request under that name be recorded approved at once, in a
// lane that no flood of pairing requests from other local processes
// reaches (every desktop request comes from 127.0.0.1 without an Origin,
// so snugd cannot tell those processes apart).
//
// "Pairing" in this package always means pairing a host with snugd; the
// pairing of a connection with a device (the pairing families) is the
// registry's and the daemon's.
//
// A Book needs only the store, a clock and a logger; daemon.New builds
// one and the Daemon's host methods call it.
//
// Imports: daemon/errcode and daemon/internal/store, and the standard
// library. Never api, never the rest of the daemon.
package hostauth
