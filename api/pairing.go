package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hostauth"
)

// health answers that snugd runs, and its version: nothing else, so an
// unauthenticated caller learns nothing more.
func (s *Server) health(c echo.Context) error {
	return c.JSON(http.StatusOK, Health{OK: true, Version: s.version})
}

// pair records a pairing request (POST /v1/hosts/pair). Well-formed
// requests are rate-limited per origin; a desktop request, which has no
// origin, per host name, so that one local process asking again and again
// spends its own name's allowance, not every desktop host's. A request
// with an invitation goes to pairInvited instead.
func (s *Server) pair(c echo.Context) error {
	var req PairRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if req.Invitation != "" {
		return s.pairInvited(c, req)
	}
	keys, msg := failureKeys(requestOrigin(c), ""), "too many pairing requests from this origin; retry later"
	if requestOrigin(c) == "" && req.Surface == string(hostauth.SurfaceDesktop) {
		keys, msg = []string{"desktop " + strings.ToLower(req.Name)}, "too many pairing requests under this host name; retry later"
	}
	if wait := s.pairs.take(keys); wait > 0 {
		return rateLimitedMsg(c.Response(), wait, msg)
	}
	p, err := s.hostBook.Pair(c.Request().Context(), hostauth.PairRequest{
		Name: req.Name, Surface: hostauth.Surface(req.Surface), Origin: req.Origin, Challenge: req.Challenge,
	}, requestOrigin(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pairResponse(p))
}

// pairInvited records a desktop pairing request that carries an
// administrator's invitation. The invitation is checked before any
// bucket is spent, as a correct verifier is: the pairing buckets of a
// name, the failed-authentication bucket that every local process
// shares, and the waiting requests are all what a flooding process can
// fill, and none of them stands between an invitation and its host. A
// wrong one (INVITATION_INVALID) counts as a failed authentication of
// the caller's origin, like a wrong verifier, and past that bucket's
// burst answers 429 instead; guessing 256 bits is hopeless anyway.
func (s *Server) pairInvited(c echo.Context, req PairRequest) error {
	origin := requestOrigin(c)
	p, err := s.hostBook.Pair(c.Request().Context(), hostauth.PairRequest{
		Name: req.Name, Surface: hostauth.Surface(req.Surface), Origin: req.Origin, Challenge: req.Challenge,
		Invitation: hostauth.InvitationTokenOf(req.Invitation),
	}, origin)
	if code, _ := errcode.CodeOf(err); code == errcode.InvitationInvalid {
		keys := failureKeys(origin, "")
		if wait := s.fails.blocked(keys); wait > 0 {
			return rateLimited(c.Response(), wait)
		}
		s.fails.fail(keys)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pairResponse(p))
}

func pairResponse(p hostauth.Pairing) PairResponse {
	r := PairResponse{PairingID: p.ID, Code: p.Code, State: string(p.State), Invited: p.Invited, ExpiresAt: Time{p.ExpiresAt}}
	if p.Invited {
		r.Code = "" // nothing to approve: a code would only confuse
	}
	return r
}

// redeem redeems a pairing with its verifier (POST
// /v1/hosts/pair/{pairingId}/redeem). The right verifier is never rate
// limited: every local process shares the origin "", so a budget it could
// spend must not stand between a desktop host and its token. A wrong
// verifier counts against its pairing (hostauth denies the request at
// MaxVerifierFailures, the limit that matters: five guesses at a verifier
// of 43 or more characters, PKCE's shape) and as a failed authentication of the caller's origin, which
// past its burst answers 429 instead of the mismatch.
func (s *Server) redeem(c echo.Context) error {
	var req RedeemRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	origin := requestOrigin(c)
	r, err := s.hostBook.Redeem(c.Request().Context(), param(c, "pairingId"), req.Verifier, origin)
	if code, _ := errcode.CodeOf(err); code == errcode.VerifierMismatch || code == errcode.PairingNotFound {
		keys := failureKeys(origin, "")
		if wait := s.fails.blocked(keys); wait > 0 {
			return rateLimited(c.Response(), wait)
		}
		s.fails.fail(keys)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RedeemResponse{State: string(r.State), Token: r.Token.Reveal()})
}

// hosts lists paired hosts and waiting pairing requests (ctl).
func (s *Server) hosts(c echo.Context) error {
	ctx := c.Request().Context()
	hs, err := s.hostBook.Hosts(ctx)
	if err != nil {
		return err
	}
	ps, err := s.hostBook.Pending(ctx)
	if err != nil {
		return err
	}
	invs, err := s.hostBook.Invitations(ctx)
	if err != nil {
		return err
	}
	out := HostsResponse{Hosts: []HostJSON{}, Pending: []PairingJSON{}, Invitations: []InvitationJSON{}}
	for _, h := range hs {
		out.Hosts = append(out.Hosts, HostJSON{HostID: h.ID, Name: h.Name, Surface: string(h.Surface), Origin: h.Origin, CreatedAt: Time{h.CreatedAt}, LastSeenAt: timePtr(h.LastSeenAt)})
	}
	for _, p := range ps {
		out.Pending = append(out.Pending, pairingJSON(p))
	}
	for _, i := range invs {
		out.Invitations = append(out.Invitations, InvitationJSON{InvitationID: i.ID, Name: i.Name, Surface: string(i.Surface), ExpiresAt: Time{i.ExpiresAt}, CreatedAt: Time{i.CreatedAt}})
	}
	return c.JSON(http.StatusOK, out)
}

// inviteHost mints a pairing invitation for a desktop host's name (ctl
// only: like approval, an invitation never comes from TCP). Its value is
// in this answer once and nowhere else.
func (s *Server) inviteHost(c echo.Context) error {
	var req InviteRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	inv, tok, err := s.hostBook.Invite(c.Request().Context(), req.Name, hostauth.Surface(req.Surface))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, InviteResponse{
		Invitation: tok.Reveal(), InvitationID: inv.ID, Name: inv.Name, Surface: string(inv.Surface), ExpiresAt: Time{inv.ExpiresAt},
	})
}

// approveHost approves a pairing code (ctl only: approval never happens
// over TCP).
func (s *Server) approveHost(c echo.Context) error {
	var req CodeRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	p, err := s.hostBook.Approve(c.Request().Context(), req.Code)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, DecisionResponse{Pairing: pairingJSON(p)})
}

// denyHost denies a pairing code (ctl).
func (s *Server) denyHost(c echo.Context) error {
	var req CodeRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	p, err := s.hostBook.Deny(c.Request().Context(), req.Code)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, DecisionResponse{Pairing: pairingJSON(p)})
}

// deleteHost unpairs a host (ctl); its token stops working at once.
func (s *Server) deleteHost(c echo.Context) error {
	id := param(c, "hostId")
	if _, err := s.hostBook.Unpair(c.Request().Context(), id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, DeletedResponse{HostID: id, Deleted: true})
}
