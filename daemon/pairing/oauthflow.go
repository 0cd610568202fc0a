package pairing

import (
	"context"
	"crypto/rand"
	"errors"
	"net/url"
	"strings"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/oauth"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/scrub"
)

// The authorization-code flow (spec §12.5, §12.12, §13; RFC 6749 §4.1,
// RFC 7636, RFC 8252): POST /v1/oauth/start opens an oauth Flow in the
// flow book and seals the protocol's half (verifier, redirect, surface,
// host) in auth:_flow:<flowId>; the state is HMAC-SHA256 under
// auth:_state_hmac. Either callback — the desktop loopback GET
// /oauth/callback or the web POST /v1/oauth/callback — verifies state,
// flow, expiry and single use, marks the flow used in the same
// transaction that reads it, exchanges the code through the guarded
// client and commits tokens and _connection in one transaction.
//
// The oauth leaf's flow ID is the flow book's ID without its "f_" prefix
// (both are 16 random bytes, base64url), so a state names its flow.

// flowKeyPrefix is the key prefix of auth:_flow:<flowId>.
const FlowKeyPrefix = "auth:_flow:"

// Fixed sentences of the flows.
const (
	msgOAuthConnected  = "connected"
	MsgOAuthWider      = "connected; the provider granted more scopes than were asked for (see scopesGranted)"
	msgOAuthExchange   = "the provider did not accept the sign-in code; start the sign-in again"
	msgOAuthNotStored  = "the sign-in worked but its tokens could not be stored; start it again"
	msgOAuthChanged    = "the connection changed during the sign-in; start it again"
	msgOAuthFlowGone   = "the sign-in answer does not match a sign-in in progress"
	msgOAuthNoClientID = "store the connection's client ID (snugd ctl credentials set) before signing in"
)

// OAuthStart is what POST /v1/oauth/start answers.
type OAuthStart struct {
	Flow         Flow
	AuthorizeURL string
}

// StartOAuth starts an authorization-code flow for an approved OAuth row.
// A web host's flow uses the origin-callback surface, only when the
// registry vouches it for the row's endpoints; any other caller (a
// desktop host, snugd ctl) uses the desktop loopback redirect on port,
// only when the registry vouches the loopback posture, and
// only with PKCE. One live flow per (app, slot): a newer one replaces it.
// A connection that holds working tokens (connected) signs in again only
// with replace, else ALREADY_CONNECTED; its tokens keep working until the
// new sign-in's commit, which journals the replacement.
//
// conformance: P3-C13-03, P3-C13-04, P3-C13-17
func (d *Service) StartOAuth(ctx context.Context, appID, slot string, port int, replace bool) (OAuthStart, error) {
	if err := grants.CheckAppID(appID); err != nil {
		return OAuthStart{}, err
	}
	if err := grants.CheckSlot(slot); err != nil {
		return OAuthStart{}, err
	}
	if err := d.grants.CheckApp(ctx, appID); err != nil {
		return OAuthStart{}, err
	}
	o, err := d.readOAuthRow(ctx, appID, slot)
	if err != nil {
		return OAuthStart{}, grants.RowError(d.log, "start sign-in", err)
	}
	r := o.req
	if r.Kind != requirement.KindOAuth2AuthCode {
		return OAuthStart{}, errcode.New(errcode.BadRequest, "only an authorization-code connection signs in; a client-credentials one fetches its token at first use")
	}
	clientID := string(o.slice["client_id"])
	if clientID == "" {
		return OAuthStart{}, errcode.New(errcode.BadRequest, msgOAuthNoClientID)
	}
	if hasWorkingTokens(o) && !replace {
		return OAuthStart{}, alreadyConnected(appID, slot, "signed in", o.state.ObtainedAt)
	}
	p := oauth.FlowParams{AppID: appID, Slot: slot, Surface: oauth.SurfaceDesktop, Port: port, PKCE: r.PKCE == nil || *r.PKCE}
	hostID, isHost := hostauth.CallerHost(ctx)
	if isHost {
		h, err := d.hostByID(ctx, hostID)
		if err != nil {
			return OAuthStart{}, err
		}
		p.HostID = hostID
		if h.Surface == hostauth.SurfaceWeb {
			if _, vouched := d.registry.WebRegistration(r); !vouched {
				return OAuthStart{}, errcode.New(errcode.BadRequest, "snugd's registry does not vouch for a web sign-in redirect for this provider, so the web sign-in cannot start")
			}
			p.Surface, p.Origin = oauth.SurfaceWeb, h.Origin
		}
	}
	if p.Surface == oauth.SurfaceDesktop {
		posture, err := d.registry.DesktopRedirect(r)
		if err != nil {
			return OAuthStart{}, errcode.New(errcode.BadRequest, err.Error())
		}
		if posture != registry.PostureLoopback {
			return OAuthStart{}, errcode.New(errcode.BadRequest, registry.ErrRedirectUnvouched.Error())
		}
	}
	key, err := d.StateKey(ctx)
	if err != nil {
		return OAuthStart{}, grants.Internal(d.log, "state key", err)
	}
	of, err := oauth.NewFlow(p, d.now())
	if err != nil {
		return OAuthStart{}, errcode.New(errcode.BadRequest, err.Error())
	}
	// The flow's work is the callback's, not a goroutine's: the flow
	// context is not needed.
	flow, _, err := d.flows.Start(ctx, FlowOAuth, appID, slot, hostID, FlowPending, oauth.FlowLifetime)
	if err != nil {
		return OAuthStart{}, err
	}
	// After the start, which ended the slot's previous flow: its sealed
	// verifier goes now, not at the next sign-in. The new flow has
	// nothing sealed yet.
	if err := d.SweepFlows(ctx); err != nil {
		d.flows.end(flow.ID, FlowFailed, "the sign-in could not be started")
		return OAuthStart{}, grants.Internal(d.log, "sweep oauth flows", err)
	}
	of.ID = strings.TrimPrefix(flow.ID, "f_")
	of.ExpiresAt = flow.ExpiresAt.Truncate(1e9)
	state, err := oauth.State(key, of)
	if err == nil {
		var u string
		u, err = oauth.AuthorizeURL(oauth.AuthorizeRequest{
			Endpoint: r.Endpoints.Authorize, ClientID: clientID, RedirectURI: of.RedirectURI,
			Scopes: r.Scopes, State: state, Verifier: of.Verifier, Params: r.AuthorizeParams,
			ScopeSeparator: scopeSeparator(d.registry, r),
		})
		if err == nil {
			if err = d.SealFlow(ctx, flow.ID, of); err == nil {
				return OAuthStart{Flow: flow, AuthorizeURL: u}, nil
			}
		}
	}
	d.flows.end(flow.ID, FlowFailed, "the sign-in could not be started")
	if errors.Is(err, oauth.ErrEndpoint) || errors.Is(err, oauth.ErrReservedParam) || errors.Is(err, oauth.ErrClientID) {
		return OAuthStart{}, errcode.New(errcode.BadRequest, err.Error())
	}
	return OAuthStart{}, grants.Internal(d.log, "start sign-in", err)
}

func (d *Service) hostByID(ctx context.Context, id string) (hostauth.Host, error) {
	hs, err := d.hosts.Hosts(ctx)
	if err != nil {
		return hostauth.Host{}, grants.Internal(d.log, "read hosts", err)
	}
	for _, h := range hs {
		if h.ID == id {
			return h, nil
		}
	}
	return hostauth.Host{}, errcode.New(errcode.HostNotFound, "the calling host is not paired")
}

// stateKey returns auth:_state_hmac, making 32 random bytes on first use.
// One key for every app (app-agnostic).
func (d *Service) StateKey(ctx context.Context) ([]byte, error) {
	var key []byte
	err := d.store.Update(ctx, func(tx *store.Tx) error {
		v, err := tx.Secret(store.StateHMACKey)
		if err == nil && len(v) == oauth.StateKeySize {
			key = v
			return nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		key = make([]byte, oauth.StateKeySize)
		rand.Read(key)
		return tx.PutSecret(store.StateHMACKey, key)
	})
	return key, err
}

// sealFlow writes the protocol half of a flow, sealed like every secret.
func (d *Service) SealFlow(ctx context.Context, id string, f oauth.Flow) error {
	b, err := f.MarshalBinary()
	if err != nil {
		return err
	}
	return d.store.Update(ctx, func(tx *store.Tx) error { return tx.PutSecret(FlowKeyPrefix+id, b) })
}

// sweepFlows deletes every auth:_flow:<id> whose flow is no longer
// pending in the flow book: ended, replaced, expired, or from before a
// restart (flows live in memory). It runs before a flow is sealed and
// when the daemon starts, so a verifier outlives its flow only until the
// next sign-in.
func (d *Service) SweepFlows(ctx context.Context) error {
	return d.store.Update(ctx, func(tx *store.Tx) error {
		keys, err := tx.SecretKeys(FlowKeyPrefix)
		if err != nil {
			return err
		}
		now := d.now()
		for _, k := range keys {
			if f, ok := d.flows.Get(strings.TrimPrefix(k, FlowKeyPrefix)); ok && f.State == FlowPending && now.Before(f.ExpiresAt) {
				continue
			}
			if err := tx.DeleteSecret(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// OAuthLoopbackCallback is the desktop GET /oauth/callback: rawQuery is
// the redirect's query. It returns the flow as it ended, or an error with
// a fixed sentence.
func (d *Service) OAuthLoopbackCallback(ctx context.Context, rawQuery string) (Flow, error) {
	code, state, err := oauth.ParseCallback(rawQuery)
	return d.oauthCallback(ctx, code, state, err, oauth.Callback{Surface: oauth.SurfaceDesktop})
}

// OAuthWebCallback is POST /v1/oauth/callback: the calling web host's own
// callback page hands over code and state, or the provider's error code.
// Only the host (and origin) that started the flow is admitted.
func (d *Service) OAuthWebCallback(ctx context.Context, code, state, providerError string) (Flow, error) {
	hostID, ok := hostauth.CallerHost(ctx)
	if !ok {
		return Flow{}, errcode.New(errcode.BadRequest, oauth.ErrWrongCallback.Error())
	}
	h, err := d.hostByID(ctx, hostID)
	if err != nil {
		return Flow{}, err
	}
	// The body's values go through the leaf's one callback parser, so
	// both surfaces admit exactly the same answers.
	q := url.Values{"state": {state}}
	if providerError != "" {
		q.Set("error", providerError)
	} else {
		q.Set("code", code)
	}
	code, state, perr := oauth.ParseCallback(q.Encode())
	return d.oauthCallback(ctx, code, state, perr, oauth.Callback{Surface: oauth.SurfaceWeb, HostID: hostID, Origin: h.Origin})
}

// oauthCallback is the work of both callbacks.
//
// conformance: P3-C13-18, P3-C13-19
func (d *Service) oauthCallback(ctx context.Context, code, state string, perr error, at oauth.Callback) (Flow, error) {
	var authErr *oauth.AuthorizeError
	if perr != nil && !errors.As(perr, &authErr) {
		return Flow{}, errcode.New(errcode.BadRequest, oauth.ErrCallback.Error())
	}
	oid, err := oauth.FlowIDFromState(state)
	if err != nil {
		return Flow{}, errcode.New(errcode.BadRequest, err.Error())
	}
	id := "f_" + oid
	live, ok := d.flows.Get(id)
	if !ok || live.Kind != FlowOAuth {
		return Flow{}, errcode.New(errcode.BadRequest, msgOAuthFlowGone)
	}
	key, err := d.StateKey(ctx)
	if err != nil {
		return Flow{}, grants.Internal(d.log, "state key", err)
	}
	// Verify and mark used in one transaction: a second callback with the
	// same state finds the flow used (single use).
	var f oauth.Flow
	var verr error
	err = d.store.Update(ctx, func(tx *store.Tx) error {
		b, err := tx.Secret(FlowKeyPrefix + id)
		if errors.Is(err, store.ErrNotFound) {
			verr = oauth.ErrBadState
			return nil
		}
		if err != nil {
			return err
		}
		if err := f.UnmarshalBinary(b); err != nil {
			return err
		}
		if verr = oauth.Verify(key, f, state, at, d.now()); verr != nil {
			return nil
		}
		f.Used = true
		nb, err := f.MarshalBinary()
		if err != nil {
			return err
		}
		return tx.PutSecret(FlowKeyPrefix+id, nb)
	})
	if err != nil {
		return Flow{}, grants.Internal(d.log, "read oauth flow", err)
	}
	switch {
	case errors.Is(verr, oauth.ErrFlowExpired):
		d.flows.end(id, FlowExpired, verr.Error())
		return Flow{}, errcode.New(errcode.BadRequest, verr.Error())
	case verr != nil:
		// A tampered state or another host's callback ends nothing: the
		// flow stays for its rightful callback.
		return Flow{}, errcode.New(errcode.BadRequest, verr.Error())
	}
	if live.State != FlowPending || f.AppID != live.AppID || f.Slot != live.Slot {
		return Flow{}, errcode.New(errcode.BadRequest, oauth.ErrFlowUsed.Error())
	}
	if authErr != nil {
		st := FlowFailed
		if authErr.Code == "access_denied" {
			st = FlowDenied
		}
		d.flows.end(id, st, authErr.Error())
		return d.endedFlow(id), nil
	}
	o, err := d.readOAuthRow(ctx, f.AppID, f.Slot)
	if err != nil {
		d.flows.end(id, FlowFailed, msgOAuthChanged)
		return d.endedFlow(id), nil
	}
	ep := d.oauthEndpoint(o.req, o.slice)
	tok, err := d.OauthClient(o.ceiling).Exchange(ctx, ep, oauth.ExchangeParams{
		Code: code, RedirectURI: f.RedirectURI, Verifier: f.Verifier, Scopes: o.req.Scopes,
	})
	if err != nil {
		var oe *oauth.Error
		if errors.As(err, &oe) {
			var set scrub.Set
			set.Add(oe.Secrets...)
			set.Add(code, f.Verifier, ep.ClientSecret)
			d.log.Warn("oauth code exchange failed", "app", f.AppID, "slot", f.Slot, "err", oe,
				"provider", scrub.ProviderErrorText(string(oe.Body()), set.Candidates(), nil))
		}
		d.flows.end(id, FlowFailed, msgOAuthExchange)
		return d.endedFlow(id), nil
	}
	if err := d.storeToken(ctx, o.conn, tok, grants.CommitChange, hasWorkingTokens(o)); err != nil {
		msg := msgOAuthNotStored
		if _, ok := errcode.CodeOf(err); ok {
			msg = msgOAuthChanged
		} else {
			d.log.Error("store oauth tokens", "app", f.AppID, "slot", f.Slot, "err", err)
		}
		d.flows.end(id, FlowFailed, msg)
		return d.endedFlow(id), nil
	}
	msg := msgOAuthConnected
	if len(tok.Wider) > 0 {
		msg = MsgOAuthWider
	}
	d.flows.Update(id, func(fl *Flow) { fl.State, fl.Message = FlowConnected, msg })
	return d.endedFlow(id), nil
}

// hasWorkingTokens reports whether o holds tokens a new sign-in would
// replace: an access token, and a state that says connected.
func hasWorkingTokens(o oauthRow) bool {
	return working(o.state) && len(o.slice[grants.AccessTokenField]) > 0
}

func (d *Service) endedFlow(id string) Flow {
	f, _ := d.flows.Get(id)
	return f
}

// scopeSeparator is the separator of r's authorize scopes: its registry
// entry's ("," for the providers that document it), else RFC 6749's space.
func scopeSeparator(reg *registry.Registry, r *requirement.Requirement) string {
	if p, ok := reg.OAuthProtocol(r); ok {
		return p.ScopeSeparator
	}
	return ""
}
