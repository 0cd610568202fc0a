package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/pairing"
)

// LinkStartRequest is the optional body of POST …/{slot}/link/start. A
// slot that is already linked is relinked only with replace; the old link
// keeps working until the new one is stored.
type LinkStartRequest struct {
	Replace bool `json:"replace,omitempty"`
}

// LinkStartResponse is POST …/{slot}/link/start: the device-link flow to
// follow through GET /v1/flows/{flowId}, as it stands (state qr; the first
// code may already be there).
type LinkStartResponse struct {
	FlowID string   `json:"flowId"`
	Flow   FlowJSON `json:"flow"`
}

// linkStart starts the device-link flow of an approved linked_device row
// bound to a registry helper (the device-link pairing family): 200 {flowId, flow}.
// CONNECTION_NOT_APPROVED, NOT_FOUND (no device-link pairing),
// ALREADY_CONNECTED (linked, and no replace) and NET_FETCH_FAILED (no
// helper, or it could not start) refuse.
func (s *Server) linkStart(c echo.Context) error {
	var req LinkStartRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	f, err := s.devices.StartLink(c.Request().Context(), param(c, "appId"), param(c, "slot"), req.Replace)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, LinkStartResponse{FlowID: f.ID, Flow: flowJSON(f)})
}

// cancelFlow cancels a device-link flow (DELETE /v1/flows/{flowId}): it
// ends failed ("the link was cancelled") and the helper's attempt is
// cancelled. Another host's flow answers as an unknown id.
func (s *Server) cancelFlow(c echo.Context) error {
	f, err := s.devices.CancelLink(c.Request().Context(), param(c, "flowId"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, flowJSON(f))
}

// flowPNG answers a device-link flow's current QR code as a PNG image
// (GET /v1/flows/{flowId}?format=png). Reading it changes nothing; a flow
// with no code (not device-link, ended, or before the first code) is 404.
func flowPNG(c echo.Context, f pairing.Flow) error {
	img, err := pairing.FlowQRPNG(f)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, "image/png", img)
}
