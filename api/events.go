package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/hints"
)

// events streams hints as Server-Sent Events (GET /v1/events). A hint is a
// doorbell: its data is references only, rebuilt here field by
// field from the daemon's typed hint, so nothing a sender supplied is
// relayed verbatim. A comment line every heartbeat keeps the connection
// alive and finds a client that went away. The stream ends when the client
// goes away, when the daemon closes and when shutdown begins.
//
// EventSource cannot send an Authorization header, so a browser host reads
// the stream with fetch and a ReadableStream. Tokens are never accepted in
// a query string.
func (s *Server) events(c echo.Context) error {
	ctx := c.Request().Context()
	hints := s.core.Hints(ctx) // the caller's own apps' hints (daemon.Hints)
	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 2000\n: snugd hints\n\n"); err != nil {
		return nil
	}
	w.Flush()
	beat := time.NewTicker(s.heartbeat)
	defer beat.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-s.stop:
			return nil
		case h, ok := <-hints:
			if !ok {
				return nil
			}
			err = writeEvent(w, h)
		case <-beat.C:
			_, err = fmt.Fprint(w, ": ping\n\n")
		}
		if err != nil {
			return nil // the client is gone
		}
		w.Flush()
	}
}

// writeEvent writes one hint as "event: <type>\ndata: <json>\n\n".
func writeEvent(w *echo.Response, h hints.Hint) error {
	var d EventData
	switch h.Type {
	case hints.ConfirmPending:
		d.ID = h.ID
	case hints.ConnectionChanged:
		d.AppID, d.Slot = h.AppID, h.Slot
	case hints.FlowUpdated:
		d.FlowID = h.ID
	case hints.HelperChanged:
		d.HelperID = h.ID
	default:
		return nil // an unknown hint type is not forwarded
	}
	b, err := json.Marshal(d) // escapes newlines: one data line
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", h.Type, b)
	return err
}
