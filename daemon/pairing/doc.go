// Package pairing runs the ceremonies that give a connection its
// credential, and the flows a host follows while they run.
//
// Where each concern lives:
//
//   - Service (service.go) holds the ceremonies' dependencies: the grant
//     book as Rows and Stager (declared in service.go), the executor's
//     guarded side client, the flow book.
//   - OAuth (oauthflow.go: sign-in on desktop and web, the sealed flow
//     state; oauthconn.go: gate 8's token source, refresh, revocation at
//     the provider). The protocol itself is daemon/oauth.
//   - The token claim (claim.go): SimpleFIN's verify-then-claim, its pure
//     checks in daemon/claim.
//   - Devices: LAN pairing with a Hue bridge and its relocation (lan.go),
//     device links through a helper and the helpers' transports
//     (linkdev.go).
//   - Flows (flows.go): the book of flows in progress and their lifetimes.
//
// Every network call goes through fetch.Side; everything a ceremony
// obtains is stored through grants' CommitIfUnchanged.
//
// Imports: daemon/fetch, daemon/grants, daemon/journal, daemon/hints,
// daemon/hostauth, the store, daemon/oauth, daemon/claim, lan and
// linkdevice. Nothing below it imports it: the composition root registers
// its hooks.
package pairing
