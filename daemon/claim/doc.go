// Package claim holds the pure checks of the token-claim pairing family:
// decoding a pasted SimpleFIN setup token into its claim
// URL, the strict checks on that URL against a row's frozen ceiling, the
// strict parse of the access URL the bridge answers with, and the check
// of the bridge's /info answer (verify-before-claim). It does no I/O: the
// daemon's claim flow (daemon/claim.go) sends the probe and the one claim
// POST through the public transport and commits what this package hands
// back.
//
// Every refusal is an *Error carrying one Reason from a short fixed list
// (Refusals), whose sentence never quotes the pasted bytes, the claim URL,
// the access URL or anything the bridge said (P3-C12.12-23). Nothing here
// logs.
//
// The claimtest subpackage is a SimpleFIN Bridge simulator for tests.
//
// Imports: the standard library and daemon/requirement (host
// normalization, the one used on both sides of the ceiling check).
package claim
