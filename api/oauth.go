package api

import (
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/pairing"
)

// The OAuth routes (API.md "Flows"): start a
// sign-in, and its two callbacks — the desktop loopback redirect target
// GET /oauth/callback (open, no Origin, a plain page) and the web
// surface's POST /v1/oauth/callback (authenticated: only the host the flow
// was started for).

// OAuthStartRequest is POST /v1/oauth/start's body.
type OAuthStartRequest struct {
	AppID string `json:"appId"`
	Slot  string `json:"slot"`
	// Replace is needed to sign in again on a connection that holds
	// working tokens (else ALREADY_CONNECTED); they keep working until
	// the new sign-in completes.
	Replace bool `json:"replace,omitempty"`
}

// OAuthStartResponse is its answer: the flow to follow and the URL the
// person opens. The URL carries the state and the PKCE challenge, never
// the verifier.
type OAuthStartResponse struct {
	FlowID       string   `json:"flowId"`
	AuthorizeURL string   `json:"authorizeUrl"`
	Flow         FlowJSON `json:"flow"`
}

// OAuthCallbackRequest is POST /v1/oauth/callback's body: what the
// provider's redirect handed the host's callback page — code and state,
// or error and state.
type OAuthCallbackRequest struct {
	Code  string `json:"code,omitempty"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// apiPort is the TCP API's port, for the desktop loopback redirect; 0
// when the TCP listener is not serving.
func (s *Server) apiPort() int {
	s.mu.Lock()
	addr := s.listen
	s.mu.Unlock()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

func (s *Server) oauthStart(c echo.Context) error {
	var req OAuthStartRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if req.AppID == "" || req.Slot == "" {
		return errcode.New(errcode.BadRequest, "appId and slot are required")
	}
	port := s.apiPort()
	if port == 0 {
		return errcode.New(errcode.BadRequest, "the loopback API is not listening, so no sign-in redirect can reach snugd")
	}
	st, err := s.ceremonies.StartOAuth(c.Request().Context(), req.AppID, req.Slot, port, req.Replace)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, OAuthStartResponse{FlowID: st.Flow.ID, AuthorizeURL: st.AuthorizeURL, Flow: flowJSON(st.Flow)})
}

// The desktop callback's pages: fixed, naming no token, code or host.
const (
	pageConnected = "<!doctype html><meta charset=utf-8><title>Snug</title><p>Connected. You can close this window and return to Snug.</p>\n"
	pageNotDone   = "<!doctype html><meta charset=utf-8><title>Snug</title><p>The sign-in did not complete. Return to Snug to see why and try again.</p>\n"
)

// oauthLoopback is GET /oauth/callback, the RFC 8252 loopback redirect
// target on http://127.0.0.1:<port>. Whatever happens it answers one of
// two fixed pages, uncached, with no referrer (the URL holds the code).
//
// conformance: P3-C13-18
func (s *Server) oauthLoopback(c echo.Context) error {
	f, err := s.ceremonies.OAuthLoopbackCallback(c.Request().Context(), c.Request().URL.RawQuery)
	h := c.Response().Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'")
	page, status := pageConnected, http.StatusOK
	if err != nil || f.State != pairing.FlowConnected {
		page, status = pageNotDone, http.StatusBadRequest
	}
	c.Response().WriteHeader(status)
	_, werr := io.WriteString(c.Response(), page)
	return werr
}

// oauthWebCallback is POST /v1/oauth/callback: the flow as it ended.
func (s *Server) oauthWebCallback(c echo.Context) error {
	var req OAuthCallbackRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	f, err := s.ceremonies.OAuthWebCallback(c.Request().Context(), req.Code, req.State, req.Error)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, flowJSON(f))
}
