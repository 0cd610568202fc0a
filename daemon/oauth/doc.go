// Package oauth is snugd's OAuth 2.0 protocol core (the
// OAuth kinds and gate 8): PKCE S256, the authorization
// URL, flows and their HMAC-signed state, the callback's query, the token
// endpoint calls (code exchange, client credentials, refresh, RFC 7009
// revocation) and the single-flight refresher of gate 8.
//
// Imports: the standard library only (cmd/snugd/deps_test.go holds it to
// that). It knows nothing of the store, the daemon or the API: plain
// values in, plain results out. The daemon seals what it keeps, writes it
// in its own transactions, and decides what a failure means to a client.
//
// golang.org/x/oauth2 is deliberately not used: its RetrieveError puts the
// provider's error_description and raw body in Error(), its auto-detected
// auth style re-posts the secrets a second way, it reads answers up to
// 1 MiB, and its TokenSource refreshes with a fixed 10-second skew and no
// single flight. The parts it would give (PKCE helpers, the §5.1 parse)
// are a few lines here.
//
// # Starting a flow (POST /v1/oauth/start)
//
//	f, err := oauth.NewFlow(oauth.FlowParams{AppID, Slot, HostID, Surface, Port, Origin, PKCE}, now)
//	state, err := oauth.State(stateKey, f)   // stateKey: auth:_state_hmac, 32 bytes
//	u, err := oauth.AuthorizeURL(oauth.AuthorizeRequest{
//		Endpoint: row.Endpoints.Authorize, ClientID: fields["client_id"],
//		RedirectURI: f.RedirectURI, Scopes: row.Scopes, State: state,
//		Verifier: f.Verifier, Params: row.AuthorizeParams,
//		ScopeSeparator: protocol.ScopeSeparator, // "," for Linear, Strava, Todoist
//	})
//	b, err := f.MarshalBinary()              // seal as auth:_flow:<f.ID>
//
// NewFlow refuses a desktop flow without PKCE (ErrLoopbackWithoutPKCE);
// AuthorizeURL refuses a loopback redirect without a verifier, an endpoint
// that is not https, and authorizeParams naming a parameter snugd sets
// (ErrReservedParam, the same list as requirement.ReservedAuthorizeParams),
// and a scope separator other than a space or a comma, or one a scope
// holds (ErrScopeSeparator).
// The desktop redirect is http://127.0.0.1:<port>/oauth/callback (RFC 8252
// §7.3, §8.3: the IP literal, never localhost); the web one is the host's
// https origin followed by /oauth/callback. Whether the registry vouches
// the desktop posture is the caller's check, before NewFlow.
//
// # The callback (GET /oauth/callback, POST /v1/oauth/callback)
//
//	code, state, err := oauth.ParseCallback(rawQuery)  // or the web route's {code, state}
//	id, err := oauth.FlowIDFromState(state)
//	// in one transaction: load auth:_flow:<id>, UnmarshalBinary, then
//	err = oauth.Verify(stateKey, f, state, oauth.Callback{Surface, HostID, Origin}, now)
//	// and on success mark it used (or delete it) before the exchange
//	tok, err := client.Exchange(ctx, ep, oauth.ExchangeParams{Code: code,
//		RedirectURI: f.RedirectURI, Verifier: f.Verifier, Scopes: row.Scopes})
//
// ParseCallback refuses a repeated parameter, an oversized or unprintable
// value, and a missing code or state (ErrCallback); an error answer comes
// back as an *AuthorizeError whose Code is one of RFC 6749 §4.1.2.1's or
// "unknown", with the state so the flow can be closed. Verify checks the
// MAC in constant time, then single use (ErrFlowUsed), the ten-minute
// expiry (ErrFlowExpired) and that the callback arrived where the flow
// said: a desktop flow only on the loopback route, a web flow only from
// its host and origin (ErrWrongCallback). Every refusal is a fixed
// sentence; none names a token, code or host.
//
// # Token endpoint calls
//
//	client := &oauth.Client{HTTP: publicTransportClient}  // ceiling + SSRF guard inside
//	ep := oauth.Endpoint{TokenURL, RevokeURL, ClientID, ClientSecret, AuthStyle,
//		RevokeMethod, ManageAccessURL}
//	tok, err := client.ClientCredentials(ctx, ep, row.Scopes)
//	tok, err := client.Refresh(ctx, ep, stored.RefreshToken, stored.Scopes)
//	rev := client.RevokeGrant(ctx, ep, stored.AccessToken, stored.RefreshToken)
//
// AuthStyle, RevokeMethod and ManageAccessURL come from the registry entry
// the row binds to (its tokenAuth and revocation seats, read with
// ParseAuthStyle and ParseRevokeMethod; a github-grant's RevokeURL is the
// seat's url); a row of no entry keeps the RFC defaults.
//
// Client copies HTTP and makes CheckRedirect refuse, so no redirect is
// followed whatever the transport does, and refuses any 3xx answer; it
// reads the answer under MaxBody (64 KiB), bounds the call with Timeout
// (30 s) under ctx, and refuses an endpoint that is not https before any
// connection. The ceiling check (token, refresh and revoke hosts
// inside the row's frozen ceiling) is the transport's: the daemon passes
// an *http.Client whose transport refuses a host outside the row's
// allowed_hosts before dialing.
//
// A Token carries the access token, the refresh token to store (Rotated
// when Refresh got a new one: write it and the access token in one
// transaction), ExpiresIn and ObtainedAt, the granted Scopes, and Wider:
// granted scopes beyond the requested or pinned ones, for the caller to
// disclose. Only Bearer tokens whose value is an RFC 6750 b64token are
// accepted, so the value can ride in a header.
//
// A failure is an *Error: a fixed-sentence Error(), the Class (Expired for
// invalid_grant — mark the connection expired and offer reconnect;
// Transient for 5xx, 429, timeouts and network failures — keep the refresh
// token; Failed for the rest), the RFC 6749 §5.2 Code when the answer
// carried a known one, the Status, Secrets — every secret the request
// submitted (client_secret and its Basic form, refresh_token, code,
// code_verifier, token), the scrub candidate set — and Body(), the
// provider's raw answer, capped and unscrubbed, for the caller to scrub
// with Secrets and hand to its provider-error extractor. Neither Error(), %v, %#v
// nor LogValue ever prints Body or Secrets.
//
// # Revocation
//
// RevokeGrant withdraws the grant the provider's way: RFC 7009 (refresh
// token, then access token, each with its hint), Twitch's form of exactly
// token and client_id, GitHub's grant deletion (DELETE with Basic
// client credentials, which drops every token of the app for the user),
// or Dropbox's bearer revocation (the access token revokes itself and its
// refresh token; an expired one is refreshed once first).
// It reports a Revocation whose Outcome tells the truth — Revoked,
// AlreadyRevoked (the provider says the token was already invalid:
// Twitch's 400 "Invalid token", RFC 6750's invalid_token; counted as
// revoked), AccessRemains (nothing could be sent: the provider has no
// revocation snugd can call, so the user's grant stays there) or
// RevokeFailed — and a fixed Message naming ManageAccessURL, the page
// where the user removes the app, when the outcome leaves access at the
// provider. Revoke returns only the failures. The caller wipes its copy
// whatever the outcome.
//
// # Gate 8: the refresher
//
//	var r oauth.Refresher                     // one per daemon
//	tok, err := r.Fresh(ctx, oauth.Key{AppID, Slot}, load, refresh)
//
// NeedsRefresh says a token must be refreshed when it expires within Skew
// (60 s). Fresh calls load (read the slot's stored token); when there is
// none or it is within the skew, it runs refresh once per Key, however
// many requests ask meanwhile, and hands every waiter the same result,
// failure included. Inside the shared call load runs again first, so a
// caller that read the old token just before another refresh stored the
// new one posts nothing: a rotated refresh token is never redeemed twice.
//
// Everything here is safe for concurrent use.
package oauth
