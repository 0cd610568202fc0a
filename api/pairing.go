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
// spends its own name's allowance, not every desktop host's.
func (s *Server) pair(c echo.Context) error {
	var req PairRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	keys, msg := failureKeys(requestOrigin(c), ""), "too many pairing requests from this origin; retry later"
	if requestOrigin(c) == "" && req.Surface == string(hostauth.SurfaceDesktop) {
		keys, msg = []string{"desktop " + strings.ToLower(req.Name)}, "too many pairing requests under this host name; retry later"
	}
	if wait := s.pairs.take(keys); wait > 0 {
		return rateLimitedMsg(c.Response(), wait, msg)
	}
	p, err := s.d.Pair(c.Request().Context(), hostauth.PairRequest{
		Name: req.Name, Surface: hostauth.Surface(req.Surface), Origin: req.Origin, Challenge: req.Challenge,
	}, requestOrigin(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, PairResponse{PairingID: p.ID, Code: p.Code, ExpiresAt: Time{p.ExpiresAt}})
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
	r, err := s.d.RedeemPairing(c.Request().Context(), param(c, "pairingId"), req.Verifier, origin)
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
	hs, err := s.d.Hosts(ctx)
	if err != nil {
		return err
	}
	ps, err := s.d.PendingPairings(ctx)
	if err != nil {
		return err
	}
	out := HostsResponse{Hosts: []HostJSON{}, Pending: []PairingJSON{}}
	for _, h := range hs {
		out.Hosts = append(out.Hosts, HostJSON{HostID: h.ID, Name: h.Name, Surface: string(h.Surface), Origin: h.Origin, CreatedAt: Time{h.CreatedAt}, LastSeenAt: timePtr(h.LastSeenAt)})
	}
	for _, p := range ps {
		out.Pending = append(out.Pending, pairingJSON(p))
	}
	return c.JSON(http.StatusOK, out)
}

// approveHost approves a pairing code (ctl only: approval never happens
// over TCP).
func (s *Server) approveHost(c echo.Context) error {
	var req CodeRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	p, err := s.d.ApprovePairing(c.Request().Context(), req.Code)
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
	p, err := s.d.DenyPairing(c.Request().Context(), req.Code)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, DecisionResponse{Pairing: pairingJSON(p)})
}

// deleteHost unpairs a host (ctl); its token stops working at once.
func (s *Server) deleteHost(c echo.Context) error {
	id := param(c, "hostId")
	if err := s.d.DeleteHost(c.Request().Context(), id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, DeletedResponse{HostID: id, Deleted: true})
}
