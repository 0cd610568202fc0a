package api

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
)

// connections lists an app's rows with their dynamic state (GET
// /v1/apps/{appId}/connections). No credential value is ever part of it.
func (s *Server) connections(c echo.Context) error {
	ctx := c.Request().Context()
	rows, err := s.book.Connections(ctx, param(c, "appId"))
	if err != nil {
		return err
	}
	out := ConnectionsResponse{Connections: make([]ConnectionJSON, 0, len(rows))}
	for _, row := range rows {
		j, err := s.connectionJSON(ctx, row)
		if err != nil {
			return err
		}
		out.Connections = append(out.Connections, j)
	}
	return c.JSON(http.StatusOK, out)
}

// connectionJSON adds a row's dynamic state.
func (s *Server) connectionJSON(ctx context.Context, row grants.Connection) (ConnectionJSON, error) {
	st, ok, err := s.book.ConnectionState(ctx, row.AppID, row.Slot)
	if errors.Is(err, grants.ErrStateUnreadable) {
		// Listed, not a 500: the row says so, and how to mend it.
		st, ok, err = grants.UnreadableState(), true, nil
	}
	if err != nil {
		return ConnectionJSON{}, err
	}
	var j ConnectionJSON
	if ok {
		j = connectionJSON(row, &st)
	} else {
		j = connectionJSON(row, nil)
	}
	if armed, ok := s.exec.StandingFor(row.AppID, row.Slot); ok {
		sj := standingJSON(armed)
		j.Standing = &sj
	}
	return j, nil
}

// writer adapts one of the connection writers (and reconnect) to a route.
// The body is optional and must be an empty JSON object when present.
func (s *Server) writer(c echo.Context, write func(context.Context, string, string) (grants.Connection, error)) error {
	var empty struct{}
	if err := bindOptional(c, &empty); err != nil {
		return err
	}
	ctx := c.Request().Context()
	row, err := write(ctx, param(c, "appId"), param(c, "slot"))
	if err != nil {
		return err
	}
	j, err := s.connectionJSON(ctx, row)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ConnectionResponse{Connection: j})
}

// reviewed adapts approve and reapprove: the body must carry the
// reviewToken of the review the user saw (GET …/review), and a row that
// changed since is 409 REVIEW_STALE with nothing written.
func (s *Server) reviewed(c echo.Context, write func(context.Context, string, string, string) (grants.Connection, error)) error {
	var req ApproveRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	row, err := write(ctx, param(c, "appId"), param(c, "slot"), req.ReviewToken)
	if err != nil {
		return err
	}
	j, err := s.connectionJSON(ctx, row)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ConnectionResponse{Connection: j})
}

func (s *Server) approve(c echo.Context) error   { return s.reviewed(c, s.book.ApproveReviewed) }
func (s *Server) reapprove(c echo.Context) error { return s.reviewed(c, s.book.ReapproveReviewed) }

// revoke answers the revoked row and, for an OAuth row whose provider did
// not confirm the remote revocation, remoteRevocation: a fixed sentence
// (the local wipe happened anyway).
func (s *Server) revoke(c echo.Context) error {
	var empty struct{}
	if err := bindOptional(c, &empty); err != nil {
		return err
	}
	ctx := c.Request().Context()
	row, rep, err := s.book.RevokeReported(ctx, param(c, "appId"), param(c, "slot"))
	if err != nil {
		return err
	}
	j, err := s.connectionJSON(ctx, row)
	if err != nil {
		return err
	}
	out := RevokeResponse{Connection: j}
	if r := rep.Remote; r.Outcome != "" {
		out.Remote = &RemoteRevocationJSON{Outcome: r.Outcome, Message: r.Message, ManageAccessURL: r.ManageAccessURL}
		if !r.Confirmed() {
			out.RemoteRevocation = r.Message
		}
	}
	return c.JSON(http.StatusOK, out)
}
func (s *Server) reconnect(c echo.Context) error { return s.writer(c, s.book.Reconnect) }

// credentials stores credential values (PUT …/{slot}/credentials). They
// are write-only: the answer is 204 and never echoes one.
func (s *Server) credentials(c echo.Context) error {
	var req CredentialsRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if req.Fields == nil {
		return errcode.New(errcode.BadRequest, "fields is required")
	}
	if err := s.book.SetTypedCredentials(c.Request().Context(), param(c, "appId"), param(c, "slot"), req.Fields); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// proposalJSON adds the row's dynamic state to a proposal.
func (s *Server) proposalJSON(ctx context.Context, r grants.ProposeResult) (ProposalJSON, error) {
	c, err := s.connectionJSON(ctx, r.Connection)
	if err != nil {
		return ProposalJSON{}, err
	}
	return ProposalJSON{
		Connection: c, Staged: r.Staged, Unchanged: r.Unchanged, Borrowed: r.Borrowed, Disclosure: r.Disclosure, EntryID: r.EntryID,
		ClaimedProvenance: r.ClaimedProvenance, ClaimedConfidence: r.ClaimedConfidence,
	}, nil
}

// proposal answers one proposal.
func (s *Server) proposal(c echo.Context, r grants.ProposeResult, err error) error {
	if err != nil {
		return err
	}
	p, err := s.proposalJSON(c.Request().Context(), r)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ProposalResponse{Proposal: p})
}

// putConnection is the user channel (PUT /v1/apps/{appId}/connections/{slot}):
// a declared row, or a staged change on an approved row.
func (s *Server) putConnection(c echo.Context) error {
	var req PutConnectionRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if len(req.Requirement) == 0 {
		return errcode.New(errcode.BadRequest, "requirement is required")
	}
	r, err := s.proposers.ProposeUser(c.Request().Context(), param(c, "appId"), param(c, "slot"), req.Requirement)
	return s.proposal(c, r, err)
}

// directive is the assistant channel (POST /v1/apps/{appId}/directives):
// the body is the connection_requirement directive itself, parsed strictly
// by the daemon; ?userDocs=true says the user supplied the documentation
// the model read.
func (s *Server) directive(c echo.Context) error {
	var userDocs bool
	switch v := c.QueryParams()["userDocs"]; {
	case len(v) == 0 || len(v) == 1 && v[0] == "false":
	case len(v) == 1 && v[0] == "true":
		userDocs = true
	default:
		return errcode.New(errcode.BadRequest, "userDocs must be true or false")
	}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return bodyError(err)
	}
	r, err := s.proposers.ProposeDirective(c.Request().Context(), param(c, "appId"), raw, userDocs)
	return s.proposal(c, r, err)
}

// install is the install channel (POST /v1/apps/{appId}/install).
func (s *Server) install(c echo.Context) error {
	var req InstallRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	rs, err := s.proposers.InstallStarter(ctx, param(c, "appId"), grants.StarterInstall{Source: req.StarterID, FactorySHA256: req.FactorySHA256, CurrentSHA256: req.CurrentSHA256})
	if err != nil {
		return err
	}
	out := InstallResponse{Proposals: make([]ProposalJSON, 0, len(rs))}
	for _, r := range rs {
		p, err := s.proposalJSON(ctx, r)
		if err != nil {
			return err
		}
		out.Proposals = append(out.Proposals, p)
	}
	return c.JSON(http.StatusOK, out)
}

// pickOption proposes a registry entry's alternative flow for the row, on
// the user channel (POST …/{slot}/option).
func (s *Server) pickOption(c echo.Context) error {
	var req OptionRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	r, err := s.proposers.PickOption(c.Request().Context(), param(c, "appId"), param(c, "slot"), req.OptionID)
	return s.proposal(c, r, err)
}

// review answers what a review or re-approval screen shows (GET
// …/{slot}/review).
func (s *Server) review(c echo.Context) error {
	ctx := c.Request().Context()
	rv, err := s.proposers.Review(ctx, param(c, "appId"), param(c, "slot"))
	if err != nil {
		return err
	}
	conn, err := s.connectionJSON(ctx, rv.Connection)
	if err != nil {
		return err
	}
	out := ReviewResponse{
		Connection: conn, Posture: string(rv.Posture), Borrowed: rv.Borrowed, Disclosure: rv.Disclosure,
		Diff: make([]FieldDiff, 0, len(rv.Diff)), Hosts: nonNil(rv.Hosts), PendingHosts: rv.PendingHosts,
		Scopes: nonNil(rv.Scopes), PendingScopes: rv.Pending, Instructions: nonNil(rv.Instructions),
		ConsoleURL: rv.ConsoleURL, ConsoleHost: rv.ConsoleHost, PairingFamily: rv.PairingFamily, PairingOwed: rv.PairingOwed,
	}
	for _, d := range rv.Diff {
		out.Diff = append(out.Diff, FieldDiff{Path: d.Path, Old: rawOrNull(d.Old), New: rawOrNull(d.New)})
	}
	out.ReviewToken = rv.Token
	if r := rv.Replaced; r != nil {
		out.Replaced = &ReplacedJSON{
			Status: string(r.Status), ApprovedAt: timePtr(r.GrantedAt), RequirementVersion: r.RequirementVersion,
			Hosts: nonNil(r.Hosts), CredentialsCleared: r.CredentialsCleared, ReplacedAt: Time{r.ReplacedAt},
			Diff: make([]FieldDiff, 0, len(rv.ReplacedDiff)),
		}
		for _, d := range rv.ReplacedDiff {
			out.Replaced.Diff = append(out.Replaced.Diff, FieldDiff{Path: d.Path, Old: rawOrNull(d.Old), New: rawOrNull(d.New)})
		}
	}
	return c.JSON(http.StatusOK, out)
}
