package pairing

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/oauth"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/scrub"
)

// The OAuth kinds' custody and gate 8: the token source the executor asks, the guarded
// client every token, refresh and revoke POST goes through, and the
// revocation that runs before a revoked slot is wiped. The protocol is
// daemon/oauth's; this file decides where things are stored and what a
// failure means for the connection.
//
// A slot's tokens live in its credential slice beside the fields, under
// reserved names (a leading underscore: never a requirement field, never a
// template value): auth:<app>:<slot>:_access_token and _refresh_token.
// _connection carries obtainedAt, expiresIn, scopesGranted, status and a
// fixed-sentence lastError.

// Fixed lastError sentences of OAuth connections: never provider text.
const (
	OauthExpiredMessage = "the provider no longer accepts this connection's sign-in: reconnect it"
	OauthFailedMessage  = "the provider refused the token request: check the client ID and secret, then reconnect"
)

// oauthClient is the token-endpoint client for a row with ceiling.
func (d *Service) OauthClient(ceiling []string) *oauth.Client {
	return &oauth.Client{HTTP: d.side.HTTPClient(ceiling, oauth.DefaultMaxBody+1), Timeout: d.side.Timeout(), Now: d.now}
}

// oauthEndpoint is r's token side with the slot's client fields, and the
// protocol seats of the registry entry r binds (how the client
// authenticates at the token endpoint, how a grant is revoked, where the
// person removes access): RFC defaults for a row that binds no entry.
func (d *Service) oauthEndpoint(r *requirement.Requirement, fields map[string]store.Secret) oauth.Endpoint {
	ep := oauth.Endpoint{
		TokenURL: r.Endpoints.Token, RevokeURL: r.Endpoints.Revoke,
		ClientID: string(fields["client_id"]), ClientSecret: string(fields["client_secret"]),
	}
	if p, ok := d.registry.OAuthProtocol(r); ok {
		if s, ok := oauth.ParseAuthStyle(string(p.TokenAuth)); ok {
			ep.AuthStyle = s
		}
		if m, ok := oauth.ParseRevokeMethod(string(p.Revocation.Method)); ok {
			ep.RevokeMethod = m
		}
		if ep.RevokeMethod == oauth.RevokeGitHubGrant {
			ep.RevokeURL = p.Revocation.URL
		}
		ep.ManageAccessURL = p.Revocation.ManageAccessURL
	}
	return ep
}

// oauthTokens is the executor's TokenSource for the two OAuth kinds,
// backed by the daemon's one Refresher: one refresh per slot at a time.
type OauthTokens struct{ d *Service }

// oauthRow is what a token request needs of a slot, read in one view.
type oauthRow struct {
	conn    grants.Connection
	req     *requirement.Requirement
	ceiling []string
	slice   map[string]store.Secret
	state   grants.ConnState
}

func (d *Service) readOAuthRow(ctx context.Context, appID, slot string) (oauthRow, error) {
	var o oauthRow
	err := d.store.View(ctx, func(tx *store.Tx) error {
		row, err := tx.Connection(appID, slot)
		if err != nil {
			return err
		}
		c := grants.FromRow(row)
		if c.Status != grants.StatusApproved || c.Requirement == nil {
			return errcode.New(errcode.ConnectionNotApproved, "the connection is not approved")
		}
		if k := c.Requirement.Kind; k != requirement.KindOAuth2AuthCode && k != requirement.KindOAuth2ClientCreds {
			return errcode.New(errcode.BadRequest, "the connection is not an OAuth connection")
		}
		o.conn, o.req, o.ceiling = c, c.Requirement, c.AllowedHosts
		if o.slice, err = tx.SlotSecrets(appID, slot); err != nil {
			return err
		}
		o.state, _, err = grants.ReadConnState(tx, appID, slot)
		return err
	})
	return o, err
}

// storedToken reads the token of a slice and its state.
func storedToken(o oauthRow) oauth.Token {
	t := oauth.Token{
		AccessToken: string(o.slice[grants.AccessTokenField]), RefreshToken: string(o.slice[grants.RefreshTokenField]),
		TokenType: "Bearer", Scopes: slices.Clone(o.state.ScopesGranted),
	}
	if o.state.ObtainedAt != nil {
		t.ObtainedAt = time.UnixMilli(*o.state.ObtainedAt)
	}
	if o.state.ExpiresIn != nil {
		t.ExpiresIn = time.Duration(*o.state.ExpiresIn) * time.Second
	}
	return t
}

// AccessToken returns a bearer for (appID, slot), refreshing it first when
// it expires within the 60-second skew, or fetching it at first use for a
// client-credentials row. Concurrent requests share one refresh.
//
// conformance: P3-C13-23
func (s OauthTokens) AccessToken(ctx context.Context, req fetch.TokenRequest) (string, error) {
	d := s.d
	own := true // the first load is the request's: the slice gate 8 read
	var o oauthRow
	load := func(ctx context.Context) (oauth.Token, error) {
		if own && req.Slice != nil {
			own = false
			cur := oauthRow{slice: req.Slice}
			if v, ok := req.Slice[store.ConnectionStateField]; ok {
				st, err := grants.UnmarshalConnState(v)
				if err != nil {
					return oauth.Token{}, err
				}
				cur.state = st
			}
			if req.Kind == requirement.KindOAuth2AuthCode && cur.state.Status == grants.ConnExpired {
				// The grant is gone: nothing is posted until a new sign-in.
				return oauth.Token{}, errors.New(OauthExpiredMessage)
			}
			return storedToken(cur), nil
		}
		// The shared refresh reads the row once, afresh: another refresh
		// may have committed since the request read its slice, and a
		// rotated refresh token must not be spent twice. The refresh
		// uses what this read.
		var err error
		o, err = d.readOAuthRow(ctx, req.AppID, req.Slot)
		if err != nil {
			return oauth.Token{}, err
		}
		if o.req.Kind == requirement.KindOAuth2AuthCode && o.state.Status == grants.ConnExpired {
			return oauth.Token{}, errors.New(OauthExpiredMessage)
		}
		return storedToken(o), nil
	}
	refresh := func(ctx context.Context, cur oauth.Token) (oauth.Token, error) {
		return d.refreshToken(ctx, o, cur)
	}
	t, err := d.refresher.Fresh(ctx, oauth.Key{AppID: req.AppID, Slot: req.Slot}, load, refresh)
	if err != nil {
		return "", err
	}
	return t.AccessToken, nil
}

// refreshToken obtains a new token for the slot and stores it.
func (d *Service) refreshToken(ctx context.Context, o oauthRow, cur oauth.Token) (oauth.Token, error) {
	appID, slot := o.conn.AppID, o.conn.Slot
	var err error
	ep := d.oauthEndpoint(o.req, o.slice)
	client := d.OauthClient(o.ceiling)
	var t oauth.Token
	switch o.req.Kind {
	case requirement.KindOAuth2ClientCreds:
		t, err = client.ClientCredentials(ctx, ep, o.req.Scopes)
	default:
		if cur.RefreshToken == "" {
			if cur.AccessToken != "" {
				// Expiring, and the provider gave nothing to renew it.
				d.grants.MarkConnection(ctx, appID, slot, grants.ConnExpired, OauthExpiredMessage)
			}
			return oauth.Token{}, errors.New(grants.OauthNotConnectedText)
		}
		if o.req.Endpoints.Refresh != "" {
			ep.TokenURL = o.req.Endpoints.Refresh
		}
		t, err = client.Refresh(ctx, ep, cur.RefreshToken, o.req.Scopes)
	}
	if err != nil {
		d.noteTokenFailure(ctx, appID, slot, o, err)
		return oauth.Token{}, err
	}
	if err := d.storeToken(ctx, o.conn, t, grants.CommitRefresh, false); err != nil {
		return oauth.Token{}, err
	}
	return t, nil
}

// storeToken writes the access token, the (rotated) refresh token and the
// state in ONE transaction, after re-reading the row: a row revoked or
// re-approved meanwhile takes nothing. connected is true for a new
// sign-in, which announces connection-changed; a refresh changes no grant
// and only clears the credential cache. A sign-in that replaces working
// tokens (replacing) journals a credential-replace act in the same
// transaction.
func (d *Service) storeToken(ctx context.Context, before grants.Connection, t oauth.Token, what grants.Commit, replacing bool) error {
	appID, slot := before.AppID, before.Slot
	err := d.grants.CommitIfUnchanged(ctx, before, what, func(tx *store.Tx) error {
		if err := writeOAuthToken(tx, appID, slot, t); err != nil {
			return err
		}
		return journalReplace(ctx, tx, before, replacing, "a new OAuth sign-in replaced the tokens")
	})
	if errors.Is(err, grants.ErrRowChanged) {
		return errcode.New(errcode.ConnectionNotApproved, "the connection changed while its token was obtained")
	}
	if err != nil {
		return err
	}
	if len(t.Wider) > 0 {
		// A granted scope set wider than the pinned or requested one
		// is disclosed (scope names, never a token).
		d.log.Warn("the provider granted scopes beyond those requested", "app", appID, "slot", slot, "wider", t.Wider)
	}
	return nil
}

// writeOAuthToken is the one write inside tx: both tokens and the state.
func writeOAuthToken(tx *store.Tx, appID, slot string, t oauth.Token) error {
	if err := tx.PutSecret(store.FieldKey(appID, slot, grants.AccessTokenField), store.Secret(t.AccessToken)); err != nil {
		return err
	}
	if t.RefreshToken != "" {
		if err := tx.PutSecret(store.FieldKey(appID, slot, grants.RefreshTokenField), store.Secret(t.RefreshToken)); err != nil {
			return err
		}
	}
	state, _, err := grants.ReadConnState(tx, appID, slot)
	if err != nil {
		return err
	}
	at := t.ObtainedAt.UnixMilli()
	state.Status, state.ObtainedAt, state.LastError = grants.ConnConnected, &at, ""
	state.ExpiresIn = nil
	if t.ExpiresIn > 0 {
		secs := int64(t.ExpiresIn / time.Second)
		state.ExpiresIn = &secs
	}
	state.ScopesGranted = slices.Clone(t.Scopes)
	return grants.WriteConnState(tx, appID, slot, state)
}

// noteTokenFailure says what a failed token request means for the
// connection: invalid_grant marks it expired (reconnect offered), a
// transient failure changes nothing (the refresh token is kept), any
// other failure marks it error. The provider's answer is logged only
// through the extractor, scrubbed of every secret the request sent.
//
// conformance: P3-C13-24
func (d *Service) noteTokenFailure(ctx context.Context, appID, slot string, o oauthRow, err error) {
	var oe *oauth.Error
	if !errors.As(err, &oe) {
		d.log.Warn("oauth token request", "app", appID, "slot", slot, "err", err)
		return
	}
	var set scrub.Set
	set.Add(oe.Secrets...)
	for _, v := range o.slice {
		set.Add(string(v))
	}
	provider := scrub.ProviderErrorText(string(oe.Body()), set.Candidates(), nil)
	d.log.Warn("oauth token request failed", "app", appID, "slot", slot, "err", oe, "provider", provider)
	var status grants.ConnStatus
	var msg string
	switch oe.Class {
	case oauth.Expired:
		status, msg = grants.ConnExpired, OauthExpiredMessage
	case oauth.Failed:
		status, msg = grants.ConnError, OauthFailedMessage
	default:
		return
	}
	d.grants.MarkConnection(ctx, appID, slot, status, msg)
}

// RevokeRemote withdraws an OAuth slot's grant at the provider as its
// registry entry says (RFC 7009, the provider's own token revocation, or
// GitHub's grant deletion; a row that binds no entry gets RFC 7009 when it
// has a revoke endpoint), best effort through the guarded client, and
// reports what happened: a token the provider no longer honours counts as
// revoked, and a provider snugd cannot call leaves the access in place,
// which the report says with where to remove it. It never blocks the
// wipe: the caller wipes whatever it returns.
//
// conformance: P3-C13-22
func (d *Service) RevokeRemote(ctx context.Context, appID, slot string) grants.RemoteRevocation {
	o, err := d.readOAuthRow(ctx, appID, slot)
	if err != nil {
		return grants.RemoteRevocation{} // not an approved OAuth row: nothing at a provider
	}
	ep := d.oauthEndpoint(o.req, o.slice)
	rev := d.OauthClient(o.ceiling).RevokeGrant(ctx, ep, string(o.slice[grants.AccessTokenField]), string(o.slice[grants.RefreshTokenField]))
	for _, e := range rev.Errors {
		d.log.Warn("oauth revocation failed; the local copy is wiped anyway", "app", appID, "slot", slot, "err", e)
	}
	out := grants.RemoteRevocation{Message: rev.Message(), ManageAccessURL: rev.ManageAccessURL}
	switch rev.Outcome {
	case oauth.Revoked:
		out.Outcome = "revoked"
	case oauth.AlreadyRevoked:
		out.Outcome = "already-revoked"
	case oauth.AccessRemains:
		out.Outcome = "access-remains"
	default:
		out.Outcome = "failed"
	}
	return out
}

// For returns the token source of s.
func (OauthTokens) For(s *Service) OauthTokens { return OauthTokens{d: s} }
