package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
)

// App ownership: the ctl channel's view of who may reach an
// app, and the administrator's share and unshare. The host-side check is
// the security chain's (scopePath) and the handlers' (scopeBody,
// scopeFiltered); see routes.go.

// appAccess answers GET /v1/apps/{appId}/access (ctl).
func (s *Server) appAccess(c echo.Context) error {
	app := param(c, "appId")
	owner, shared, err := s.book.AppAccess(c.Request().Context(), app)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, AccessResponse{AppID: app, Owner: owner, Shared: shared})
}

// shareApp gives a second host access to the app (POST
// /v1/apps/{appId}/shares, ctl), and answers the app's access.
func (s *Server) shareApp(c echo.Context) error {
	var req ShareRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if req.HostID == "" {
		return errcode.New(errcode.BadRequest, "hostId is required")
	}
	if err := s.book.ShareApp(c.Request().Context(), param(c, "appId"), req.HostID); err != nil {
		return err
	}
	return s.appAccess(c)
}

// unshareApp takes the app away from a host (DELETE
// /v1/apps/{appId}/shares/{hostId}, ctl): its share, or its ownership.
func (s *Server) unshareApp(c echo.Context) error {
	if err := s.book.UnshareApp(c.Request().Context(), param(c, "appId"), param(c, "hostId")); err != nil {
		return err
	}
	return s.appAccess(c)
}
