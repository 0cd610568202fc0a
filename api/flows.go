package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/pairing"
)

// FlowJSON is GET /v1/flows/{flowId}: a pairing flow (OAuth consent, the
// Hue link button, a QR device link). The contract's fields (state, qr,
// qrExpiresAt) are top level; the rest are additions. No field ever holds
// a credential, an authorization code or a provider's text.
type FlowJSON struct {
	FlowID              string `json:"flowId"`
	Kind                string `json:"kind"`
	AppID               string `json:"appId"`
	Slot                string `json:"slot"`
	State               string `json:"state"`
	Message             string `json:"message,omitempty"`
	QR                  string `json:"qr,omitempty"`
	QRExpiresAt         *Time  `json:"qrExpiresAt,omitempty"`
	Deadline            *Time  `json:"deadline,omitempty"`
	Label               string `json:"label,omitempty"`
	Fingerprint         string `json:"fingerprint,omitempty"`
	PreviousFingerprint string `json:"previousFingerprint,omitempty"`
	CreatedAt           Time   `json:"createdAt"`
	UpdatedAt           Time   `json:"updatedAt"`
	ExpiresAt           Time   `json:"expiresAt"`
}

func flowJSON(f pairing.Flow) FlowJSON {
	j := FlowJSON{FlowID: f.ID, Kind: string(f.Kind), AppID: f.AppID, Slot: f.Slot, State: string(f.State),
		Message: f.Message, QR: f.QR, Label: f.Label, Fingerprint: f.Fingerprint, PreviousFingerprint: f.PreviousFingerprint,
		CreatedAt: Time{f.CreatedAt}, UpdatedAt: Time{f.UpdatedAt}, ExpiresAt: Time{f.ExpiresAt}}
	if !f.QRExpiresAt.IsZero() {
		j.QRExpiresAt = &Time{f.QRExpiresAt}
	}
	if !f.Deadline.IsZero() {
		j.Deadline = &Time{f.Deadline}
	}
	return j
}

// flow answers one pairing flow; ?format=png answers a device-link
// flow's QR code as an image (link.go), ?format=json (or none) the JSON.
func (s *Server) flow(c echo.Context) error {
	f, err := s.ceremonies.Flow(c.Request().Context(), param(c, "flowId"))
	if err != nil {
		return err
	}
	switch c.QueryParam("format") {
	case "", "json":
	case "png":
		return flowPNG(c, f)
	default:
		return errcode.New(errcode.BadRequest, "format must be json or png")
	}
	return c.JSON(http.StatusOK, flowJSON(f))
}
