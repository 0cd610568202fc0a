package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/errcode"
)

// connections lists an app's rows with their dynamic state (GET
// /v1/apps/{appId}/connections). No credential value is ever part of it.
func (s *Server) connections(c echo.Context) error {
	ctx := c.Request().Context()
	rows, err := s.d.Connections(ctx, param(c, "appId"))
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
func (s *Server) connectionJSON(ctx context.Context, row daemon.Connection) (ConnectionJSON, error) {
	st, ok, err := s.d.ConnectionState(ctx, row.AppID, row.Slot)
	if err != nil {
		return ConnectionJSON{}, err
	}
	if !ok {
		return connectionJSON(row, nil), nil
	}
	return connectionJSON(row, &st), nil
}

// writer adapts one of the writers of §12.3 (and reconnect) to a route.
// The body is optional and must be an empty JSON object when present.
func (s *Server) writer(c echo.Context, write func(context.Context, string, string) (daemon.Connection, error)) error {
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

func (s *Server) approve(c echo.Context) error   { return s.writer(c, s.d.Approve) }
func (s *Server) reapprove(c echo.Context) error { return s.writer(c, s.d.Reapprove) }
func (s *Server) revoke(c echo.Context) error    { return s.writer(c, s.d.Revoke) }
func (s *Server) reconnect(c echo.Context) error { return s.writer(c, s.d.Reconnect) }

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
	if err := s.d.SetCredentials(c.Request().Context(), param(c, "appId"), param(c, "slot"), req.Fields); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
