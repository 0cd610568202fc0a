package pairing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/snug/snugd/daemon/claim"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/transports"
)

// The token-claim pairing family, SimpleFIN's: the user
// pastes a one-time setup token; snugd decodes its claim URL, proves the
// counterparty is a SimpleFIN Bridge, POSTs the claim URL once, and keeps
// the user name and password of the access URL the bridge answers as the
// row's basic_auth field, committed with claimVerifiedAt in one write.
//
// Both hops are held to the row's frozen ceiling: https only, exact host,
// no userinfo on the claim URL, userinfo required on the access URL,
// the public transport's SSRF guard (one lookup, the checked addresses
// only), no redirect followed on either, a size cap and a timeout. The
// access URL's path must equal the registry's pinned access path. The
// checks themselves are daemon/claim's; this file sends and commits.
//
// Nothing of the setup token, the claim URL or the access URL reaches a
// log line, the journal, an error, /v1/status or a diagnostic: refusals
// are daemon/claim's fixed sentences, logs name the app, the slot and the
// refusal's reason, and transport errors are never logged (their cause
// could, in some future version of a library, quote the URL).

// Caps on what the bridge may answer. An /info answer is a short JSON
// object and an access URL about a hundred bytes.
const (
	maxInfoBytes  = 64 << 10
	maxClaimBytes = 8 << 10
)

// claimTimeout bounds a whole ceremony (lookup, probe and claim, each also
// bounded by the request timeout), so its answer arrives within the API's
// one-minute deadline for a quick route: an answer cut off after the
// commit would send the user to paste a token that is already spent.
const claimTimeout = 45 * time.Second

// ClaimRefusedError is a refused token claim: Reason is one of
// daemon/claim's list and Error() its fixed sentence. Its code is
// CLAIM_REFUSED; the API shows the reason and the token's fate beside the
// sentence.
type ClaimRefusedError struct {
	Reason claim.Reason
	Fate   claim.Fate
}

func (e *ClaimRefusedError) Error() string { return claim.Refuse(e.Reason).Error() }

// ErrorCode reports CLAIM_REFUSED.
func (e *ClaimRefusedError) ErrorCode() errcode.Code { return errcode.ClaimRefused }

// ClaimSetupToken runs the token-claim ceremony for (appID, slot): decode
// and check the pasted setupToken, probe the bridge (verify before claim),
// POST the claim URL once, check the access URL, and commit its
// credentials with claimVerifiedAt in one transaction. It returns the row
// as it stands afterwards; its state is then connected with the marker
// set.
//
// The row must be approved and bind to a registry entry of the
// token-claim family (SimpleFIN's): CONNECTION_NOT_FOUND,
// CONNECTION_NOT_APPROVED or NOT_FOUND otherwise. Every refusal of the
// token or of the bridge is a *ClaimRefusedError whose text is a fixed
// sentence. A claim that fails after it was sent is reported as possibly
// used up and is never retried. ClaimSetupToken is safe for concurrent
// use.
//
// A connection that already holds working credentials (connected) claims
// a new token only with replace, else ALREADY_CONNECTED before anything
// is sent (the token stays unused); its old credentials keep working
// until the new ones commit, journaled as a credential-replace act.
func (d *Service) ClaimSetupToken(ctx context.Context, appID, slot, setupToken string, replace bool) (grants.Connection, error) {
	c, err := d.grants.Connection(ctx, appID, slot)
	if err != nil {
		return grants.Connection{}, err
	}
	if c.Status != grants.StatusApproved || c.Requirement == nil {
		return grants.Connection{}, errcode.New(errcode.ConnectionNotApproved, "only an approved connection can claim a setup token")
	}
	p, ok := d.registry.Pairing(c.Requirement)
	if !ok || p.Family != registry.FamilyTokenClaim {
		return grants.Connection{}, errcode.New(errcode.NotFound, "the connection has no token-claim pairing")
	}
	// A state that cannot be read holds nothing known to work (the
	// claim's commit then says it could not store).
	st, _, err := d.grants.ConnectionState(ctx, appID, slot)
	replacing := err == nil && working(st)
	if replacing && !replace {
		return grants.Connection{}, alreadyConnected(appID, slot, "claimed", st.ClaimVerifiedAt, st.ObtainedAt)
	}
	cctx, cancel := context.WithTimeout(ctx, claimTimeout)
	access, err := d.claimAccess(cctx, c.AllowedHosts, p, setupToken)
	cancel()
	if err != nil {
		if r, ok := claim.ReasonOf(err); ok {
			return grants.Connection{}, d.refuseClaim(appID, slot, r)
		}
		return grants.Connection{}, err
	}
	if err := d.commitClaim(ctx, c, p.Field, access, replacing); err != nil {
		return grants.Connection{}, err
	}
	d.log.Info("setup token claimed", "app", appID, "slot", slot)
	return d.grants.Connection(ctx, appID, slot)
}

// refuseClaim logs a refusal by its reason and returns it.
func (d *Service) refuseClaim(appID, slot string, r claim.Reason) error {
	e := &ClaimRefusedError{Reason: r, Fate: claim.Refuse(r).Fate()}
	d.log.Warn("setup token claim refused", "app", appID, "slot", slot, "reason", string(r), "token_fate", string(e.Fate))
	return e
}

// claimAccess runs the network half: checks, probe, the one POST, the
// access URL's checks. Its errors are *claim.Error.
func (d *Service) claimAccess(ctx context.Context, ceiling []string, p registry.Pairing, setupToken string) (claim.Access, error) {
	claimURL, err := claim.ParseSetupToken(setupToken, ceiling, p.AccessPath)
	if err != nil {
		return claim.Access{}, err
	}
	// Gate 5 for both requests: one lookup, every answer checked; the probe
	// and the claim dial only these addresses.
	host, ok := fetch.RequestHost(claimURL)
	if !ok {
		return claim.Access{}, claim.Refuse(claim.ReasonTokenShape)
	}
	resolved, err := d.side.Resolve(ctx, ceiling, host)
	if err != nil {
		return claim.Access{}, claimTransportError(err, false)
	}
	if err := d.verifyBridge(ctx, resolved, claimURL.Host, p.Verify); err != nil {
		return claim.Access{}, err
	}
	resp, err := d.postClaim(ctx, resolved, claimURL.String())
	if err != nil {
		return claim.Access{}, err
	}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		return claim.Access{}, claim.Refuse(claim.ReasonClaimRedirect)
	case resp.StatusCode == http.StatusForbidden:
		return claim.Access{}, claim.Refuse(claim.ReasonTokenRefused)
	case resp.StatusCode != http.StatusOK:
		return claim.Access{}, claim.Refuse(claim.ReasonUncertain)
	}
	return claim.ParseAccessURL(resp.Body, ceiling, p.AccessPath)
}

// verifyBridge is verify-before-claim: GET the registry's probe path on
// the claim host, which must answer 200 with a SimpleFIN /info object.
// Nothing has been sent to the claim URL yet, so every failure leaves the
// token unused.
func (d *Service) verifyBridge(ctx context.Context, resolved transports.Resolved, host string, probe registry.Probe) error {
	if probe.Method != http.MethodGet || probe.Path == "" {
		return claim.Refuse(claim.ReasonNotBridge) // the registry's checks make this unreachable
	}
	u, err := fetch.ComposeURL("https", host, probe.Path)
	if err != nil {
		return claim.Refuse(claim.ReasonNotBridge)
	}
	ctx, cancel := context.WithTimeout(ctx, d.side.Timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return claim.Refuse(claim.ReasonNotBridge)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.side.Do(ctx, req, resolved, maxInfoBytes)
	if err != nil {
		if errors.Is(err, transports.ErrBodyTooLarge) {
			return claim.Refuse(claim.ReasonNotBridge)
		}
		return claimTransportError(err, false)
	}
	if resp.StatusCode != http.StatusOK {
		return claim.Refuse(claim.ReasonNotBridge)
	}
	return claim.CheckInfo(resp.Body)
}

// postClaim sends the one claim POST, with an empty body, and never again:
// there is no retry anywhere on this path (P3-C12.12-18). Whether a
// failure may have spent the token is told by whether a connection to the
// bridge was established: before that nothing of the request left snugd.
func (d *Service) postClaim(ctx context.Context, resolved transports.Resolved, claimURL string) (*transports.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, d.side.Timeout())
	defer cancel()
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, claimURL, http.NoBody)
	if err != nil {
		return nil, claim.Refuse(claim.ReasonTokenShape) // unreachable: the URL was rebuilt from checked parts
	}
	req.ContentLength = 0
	req.Header.Set("Accept", "text/plain")
	resp, err := d.side.Do(ctx, req, resolved, maxClaimBytes)
	if err != nil {
		return nil, claimTransportError(err, connected.Load())
	}
	return resp, nil
}

// claimTransportError maps a transport failure to a refusal: a refused
// address leaves the token unused; any other failure after a connection
// was made may have spent it.
func claimTransportError(err error, connected bool) error {
	var blocked *transports.BlockedError
	switch {
	case errors.As(err, &blocked):
		return claim.Refuse(claim.ReasonAddressRefused)
	case connected:
		return claim.Refuse(claim.ReasonUncertain)
	}
	return claim.Refuse(claim.ReasonUnreachable)
}

// commitClaim writes the access credentials and the claimVerifiedAt
// marker in one transaction ("one write, no window"), after
// re-reading the row: a row revoked or re-approved while the claim ran
// takes nothing. A failed write is said plainly, without the URL: the
// credentials are not kept anywhere else. A replacement's journal entry
// commits with it.
func (d *Service) commitClaim(ctx context.Context, before grants.Connection, field string, access claim.Access, replacing bool) error {
	err := d.grants.CommitIfUnchanged(ctx, before, grants.CommitChange, func(tx *store.Tx) error {
		if err := WriteClaim(tx, before.AppID, before.Slot, field, access); err != nil {
			return err
		}
		return journalReplace(ctx, tx, before, replacing, "a new SimpleFIN claim replaced the access credentials")
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, grants.ErrRowChanged):
		return d.refuseClaim(before.AppID, before.Slot, claim.ReasonConnectionChanged)
	default:
		d.log.Error("store claimed credentials", "app", before.AppID, "slot", before.Slot, "err", err)
		return d.refuseClaim(before.AppID, before.Slot, claim.ReasonNotStored)
	}
}

// writeClaim is the one write inside tx: the basic_auth field and the
// state with claimVerifiedAt. Either both commit or neither does.
func WriteClaim(tx *store.Tx, appID, slot, field string, access claim.Access) error {
	return grants.WriteVerified(tx, appID, slot, field, store.Secret(access.Credentials()), func(s *grants.ConnState, at int64) {
		s.ClaimVerifiedAt = &at
	})
}

// accessRevokedMessage is lastError of a token-claim connection whose
// bridge refused its credentials.
const AccessRevokedMessage = "the SimpleFIN Bridge refused the access credentials (access revoked or expired): claim a new setup token"

// noteClaimAnswer marks a token-claim connection error when its bridge
// answered a request 403: the user revoked the access on the bridge, and
// the wizard must offer a new claim. The app still gets the 403 as a
// response. It runs after the executor answered, on the app's and the
// probe's path alike, and never fails the request; the app going away
// does not stop the mark.
func (d *Service) noteClaimAnswer(ctx context.Context, f *fetch.Fetch, res fetch.NetResult) {
	if res.Status != http.StatusForbidden || res.Code != "" || f.Grant == nil || f.Grant.Req == nil || f.Sidecar != "" {
		return
	}
	p, ok := d.registry.Pairing(f.Grant.Req)
	if !ok || p.Family != registry.FamilyTokenClaim {
		return
	}
	appID, slot := f.Call.AppID, f.Grant.Slot
	if d.grants.MarkConnection(ctx, appID, slot, grants.ConnError, AccessRevokedMessage) {
		d.log.Warn("token-claim access refused by the bridge; connection marked error", "app", appID, "slot", slot)
	}
}
