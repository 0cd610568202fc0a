// Package oauth is snugd's OAuth 2.0 protocol core (spec §12.5, §12.12,
// §13; rulings R14, R23, R24): PKCE S256, the authorization URL, flow
// state signed with auth:_state_hmac, the callback's query, the token
// endpoint calls (code exchange, client credentials, refresh, RFC 7009
// revocation) and the single-flight refresher of gate 8.
//
// Imports: the standard library only. It knows nothing of the store, the
// daemon or the API: plain values in, plain results out. The daemon seals
// what it returns and decides what a failure means to a client.
package oauth
