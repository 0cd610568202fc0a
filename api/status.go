package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// status answers GET /v1/status: the daemon's report with the server's
// version, uptime, address and transport policy. Never a credential.
func (s *Server) status(c echo.Context) error {
	r, err := s.core.StatusReport(c.Request().Context())
	if err != nil {
		return err
	}
	s.mu.Lock()
	listen := s.listen
	s.mu.Unlock()
	out := StatusResponse{
		Version: s.version, StartedAt: Time{s.started}, UptimeSeconds: int64(s.now().Sub(s.started).Seconds()),
		DataDir: r.DataDir, Listen: listen, TransportPolicy: string(s.exec.TransportPolicy()), Apps: r.Apps,
		Connections:     ConnectionCounts(r.Connections),
		Hosts:           HostCounts(r.Hosts),
		Helpers:         []HelperStatusJSON{},
		Standing:        []StandingJSON{},
		PendingConfirms: 0,
	}
	// A host sees its own apps' counts only (scopeFiltered, decided by
	// the daemon's StatusReport); the ctl channel sees everything.
	out.PendingConfirms = r.PendingConfirms
	for _, st := range r.Standing {
		out.Standing = append(out.Standing, standingJSON(st))
	}
	out.Database, out.DatabaseMessage, out.DiskFree, out.Goroutines = "ok", "", r.DiskFree, r.Goroutines
	switch {
	case r.Damaged != "":
		out.Database, out.DatabaseMessage = "damaged", r.Damaged
	case r.Unwritable != "":
		out.Database, out.DatabaseMessage = "unwritable", r.Unwritable
		out.UnwritableSince = &Time{r.UnwritableSince}
	}
	if c := r.HelperSandbox; c != nil {
		out.HelperSandbox = &HelperSandboxJSON{Landlock: c.Landlock, Files: c.Files, Network: c.Network, Scoped: c.Scoped,
			NoNewPrivs: c.NoNewPrivs, Descendants: c.Descendants, Summary: c.String()}
	}
	for _, h := range r.Helpers {
		out.Helpers = append(out.Helpers, HelperStatusJSON{HelperID: h.ID, State: h.State, Sessions: h.Sessions, Restarts: h.Restarts, LastError: h.LastError})
	}
	return c.JSON(http.StatusOK, out)
}
