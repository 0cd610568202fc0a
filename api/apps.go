package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/grants"
)

// AppsResponse is GET /v1/apps (ctl only): every app with a connection
// row, its connections and what needs the administrator. Never a
// credential.
type AppsResponse struct {
	Apps []AppJSON `json:"apps"`
}

// AppJSON is one app of GET /v1/apps.
type AppJSON struct {
	AppID           string          `json:"appId"`
	Connections     []AppConnJSON   `json:"connections"`
	Attention       []AttentionJSON `json:"attention"`
	PendingConfirms int             `json:"pendingConfirms"`
	// Owner and shares join here when app ownership lands.
}

// AppConnJSON is one connection of an AppJSON.
type AppConnJSON struct {
	Slot            string `json:"slot"`
	Provider        string `json:"provider,omitempty"` // absent when the stored requirement no longer validates
	Kind            string `json:"kind,omitempty"`
	Status          string `json:"status"` // declared | approved | revoked
	NeedsReapproval bool   `json:"needsReapproval"`
	Imported        bool   `json:"imported"`
	Invalid         bool   `json:"invalid"`
	// Credentials is the state's status (pending, connected, expired,
	// error), or unreadable when a stored value of the slot does not open
	// under the master key; null before any credential or flow.
	Credentials *string `json:"credentials"`
	LastError   string  `json:"lastError,omitempty"`
	ExpiresAt   *Time   `json:"expiresAt,omitempty"`
	LANPin      string  `json:"lanPin,omitempty"` // the pinned certificate's SHA-256 fingerprint
	Standing    bool    `json:"standing"`
}

// AttentionJSON is one thing that needs the administrator: kind is one
// of proposal, staged, imported, invalid, credentials, error, expired,
// expiring, pin, confirm, standing; slot is absent for the app as a whole.
type AttentionJSON struct {
	Slot    string `json:"slot,omitempty"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// apps answers GET /v1/apps.
func (s *Server) apps(c echo.Context) error {
	apps, err := s.records.Apps(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, appsJSON(apps))
}

func appsJSON(apps []grants.AppSummary) AppsResponse {
	out := AppsResponse{Apps: []AppJSON{}}
	for _, a := range apps {
		j := AppJSON{AppID: a.AppID, Connections: []AppConnJSON{}, Attention: []AttentionJSON{}, PendingConfirms: a.PendingConfirms}
		for _, cs := range a.Connections {
			cj := AppConnJSON{
				Slot: cs.Slot, Provider: cs.Provider, Kind: cs.Kind, Status: string(cs.Status),
				NeedsReapproval: cs.NeedsReapproval, Imported: cs.Imported, Invalid: cs.Invalid,
				LastError: cs.LastError, LANPin: cs.LANPin, Standing: cs.Standing,
			}
			if cs.Credentials != "" {
				st := string(cs.Credentials)
				cj.Credentials = &st
			}
			if cs.ExpiresAt != nil {
				cj.ExpiresAt = &Time{*cs.ExpiresAt}
			}
			j.Connections = append(j.Connections, cj)
		}
		for _, at := range a.Attention {
			j.Attention = append(j.Attention, AttentionJSON{Slot: at.Slot, Kind: string(at.Kind), Message: at.Message})
		}
		out.Apps = append(out.Apps, j)
	}
	return out
}

// Apps calls GET /v1/apps (ctl channel only).
func (c *Client) Apps(ctx context.Context) ([]AppJSON, error) {
	var out AppsResponse
	return out.Apps, c.do(ctx, http.MethodGet, "/v1/apps", nil, &out)
}
