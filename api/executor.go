package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/journal"
)

// net runs one snug:net-request through the executor (POST /v1/net). The
// answer is the snug:net-response frame written byte for byte as the
// executor encoded it, 200 whether it is ok or an error envelope; a frame
// the executor does not answer (no plausible requestId) is an API error
// without a frame. The request's context is the call's: when the host
// goes away the executor stops, and a confirm the call parked is denied;
// the call carries its host's id, so unpairing the host withdraws it.
func (s *Server) net(c echo.Context) error {
	var req NetRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if req.AppID == "" || len(req.Frame) == 0 {
		return errcode.New(errcode.BadRequest, "appId and frame are required")
	}
	if !plainText(req.AppID) {
		return errcode.New(errcode.BadRequest, "appId holds control characters") // as a path would refuse it
	}
	if err := s.book.CheckApp(c.Request().Context(), req.AppID); err != nil {
		return err // another host's app: as if it did not exist (scopeBody)
	}
	var delivery fetch.Delivery
	switch req.Delivery {
	case "app":
		delivery = fetch.DeliveryApp
	case "llm":
		delivery = fetch.DeliveryLLM
	default:
		return errcode.New(errcode.BadRequest, `delivery must be "app" or "llm"`)
	}
	ctx := c.Request().Context()
	return frame(c, s.exec.Net(ctx, fetch.NetCall{AppID: req.AppID, Frame: req.Frame, Delivery: delivery}))
}

// testConnection runs the requirement's testRequest (POST …/{slot}/test).
func (s *Server) testConnection(c echo.Context) error {
	var empty struct{}
	if err := bindOptional(c, &empty); err != nil {
		return err
	}
	res, err := s.exec.TestConnection(c.Request().Context(), param(c, "appId"), param(c, "slot"))
	if err != nil {
		return err
	}
	return frame(c, res)
}

// ProviderErrorHeader carries, beside a net-response whose upstream status
// was 400 or more, the executor's ≤160-character extract of the provider's
// error (scrubbed, extracted, re-scrubbed) for a host that shows it
// to a person. It is percent-encoded UTF-8; it never enters the frame.
const ProviderErrorHeader = "Snugd-Provider-Error"

// frame writes an executor answer as it is: never re-encoded. The
// answer's frame buffer goes back for reuse once it is written (the
// response writer has copied or sent every byte by then). The length is
// declared, so a big frame goes out as one body rather than a chunk whose
// end waits for the handler to return: the host has the whole answer
// before the buffers are zeroed and handed back.
func frame(c echo.Context, res fetch.NetResult) error {
	defer res.Release()
	if !res.Answer {
		return errcode.New(errcode.NetInvalidRequest, "the frame carries no usable requestId, so it is not answered")
	}
	h := c.Response().Header()
	if res.ProviderError != "" {
		h.Set(ProviderErrorHeader, url.PathEscape(res.ProviderError))
	}
	h.Set("Content-Length", strconv.Itoa(len(res.Frame)))
	return c.Blob(http.StatusOK, "application/json", res.Frame)
}

// facts answers the LLM-safe facts of an app's connections.
func (s *Server) facts(c echo.Context) error {
	out := FactsResponse{Facts: []FactJSON{}}
	for _, f := range s.records.Facts(param(c, "appId")) {
		out.Facts = append(out.Facts, FactJSON{
			Slot: f.Slot, Provider: f.Provider, Kind: string(f.Kind), Status: string(f.Status), Scopes: f.Scopes,
			Hosts: nonNil(f.Hosts), Address: f.Address, LAN: f.LAN, Label: f.Label, Armed: f.Armed,
		})
	}
	return c.JSON(http.StatusOK, out)
}

// confirms lists the pending confirms, oldest first.
func (s *Server) confirms(c echo.Context) error {
	out := ConfirmsResponse{Confirms: []ConfirmJSON{}}
	for _, cf := range s.exec.Confirms(c.Request().Context()) { // scopeFiltered
		out.Confirms = append(out.Confirms, confirmJSON(cf))
	}
	return c.JSON(http.StatusOK, out)
}

// confirm answers one pending confirm.
func (s *Server) confirm(c echo.Context) error {
	cf, ok := s.confirmFor(c)
	if !ok {
		return errNoConfirm()
	}
	return c.JSON(http.StatusOK, ConfirmResponse{Confirm: confirmJSON(cf)})
}

// confirmFor returns the pending confirm of the route's :id when the
// caller may see its app; another host's confirm is not there for it.
func (s *Server) confirmFor(c echo.Context) (fetch.Confirm, bool) {
	return s.exec.ConfirmByID(c.Request().Context(), param(c, "id"))
}

func errNoConfirm() error { return errcode.New(errcode.NotFound, "no pending confirm has that id") }

// decide records the user's decision on a confirm (204). Deciding a
// confirm that was already decided is a no-op.
func (s *Server) decide(c echo.Context) error {
	var req DecisionRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	var allow bool
	switch req.Decision {
	case "allow":
		allow = true
	case "deny":
	default:
		return errcode.New(errcode.BadRequest, `decision must be "allow" or "deny"`)
	}
	remember := fetch.RememberOnce
	switch req.Remember {
	case "", "once":
	case "session":
		remember = fetch.RememberSession
	default:
		return errcode.New(errcode.BadRequest, `remember must be "once" or "session"`)
	}
	if err := s.exec.DecideConfirmBy(c.Request().Context(), param(c, "id"), allow, remember); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// standings lists the armed standing approvals.
func (s *Server) standings(c echo.Context) error {
	out := StandingsResponse{Standing: []StandingJSON{}}
	for _, st := range s.exec.Standings(c.Request().Context()) {
		out.Standing = append(out.Standing, standingJSON(st))
	}
	return c.JSON(http.StatusOK, out)
}

// arm arms a standing approval: an authenticated host attesting the user's
// gesture, or the ctl channel.
func (s *Server) arm(c echo.Context) error {
	var req StandingRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if !plainText(req.AppID) {
		return errcode.New(errcode.BadRequest, "appId holds control characters") // as a path would refuse it
	}
	if err := s.book.CheckApp(c.Request().Context(), req.AppID); err != nil {
		return err // scopeBody
	}
	spec := fetch.StandingSpec{
		AppID: req.AppID, Slot: req.Slot, Target: req.Target, Trigger: req.Trigger, MaxSends: req.MaxSends,
		Window: time.Duration(req.WindowSeconds) * time.Second, UserGesture: req.UserGesture,
	}
	if req.WindowSeconds < 0 || req.WindowSeconds > int64(365*24*time.Hour/time.Second) {
		return errcode.New(errcode.BadRequest, "windowSeconds is out of range")
	}
	if q := req.QuietHours; q != nil {
		quiet, err := quietHours(*q)
		if err != nil {
			return err
		}
		spec.Quiet = quiet
	}
	st, err := s.exec.ArmStanding(c.Request().Context(), spec)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, StandingResponse{Standing: standingJSON(st)})
}

// quietHours reads "HH:MM" times and an IANA zone; without one, the
// machine's local time.
func quietHours(q QuietHoursJSON) (*fetch.QuietHours, error) {
	start, ok1 := parseClock(q.Start)
	end, ok2 := parseClock(q.End)
	if !ok1 || !ok2 {
		return nil, errcode.New(errcode.BadRequest, `quietHours start and end must be "HH:MM"`)
	}
	loc := time.Local
	if q.TimeZone != "" {
		var err error
		if loc, err = time.LoadLocation(q.TimeZone); err != nil || strings.ContainsAny(q.TimeZone, `.\`) {
			return nil, errcode.New(errcode.BadRequest, "quietHours timeZone is not a known IANA time zone")
		}
	}
	return &fetch.QuietHours{Start: start, End: end, Location: loc}, nil
}

func parseClock(s string) (time.Duration, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	h, err1 := strconv.Atoi(s[:2])
	m, err2 := strconv.Atoi(s[3:])
	if err1 != nil || err2 != nil || h < 0 || h > 23 || m < 0 || m > 59 {
		return 0, false
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute, true
}

// disarm disarms one standing approval (204).
func (s *Server) disarm(c echo.Context) error {
	if err := s.exec.DisarmStanding(c.Request().Context(), param(c, "id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// kill disarms every standing approval.
func (s *Server) kill(c echo.Context) error {
	var empty struct{}
	if err := bindOptional(c, &empty); err != nil {
		return err
	}
	// A host's kill switch disarms its own apps' standing approvals,
	// and counts only those.
	return c.JSON(http.StatusOK, KillResponse{Disarmed: s.exec.KillStanding(c.Request().Context())})
}

// journal answers one page of the journal, newest first: ?appId=,
// ?unattended=true, ?before=<id>, ?limit=1..1000 (default 100).
func (s *Server) journal(c echo.Context) error {
	q := journal.JournalQuery{AppID: c.QueryParam("appId"), Kind: c.QueryParam("kind")}
	switch c.QueryParam("unattended") {
	case "", "false":
	case "true":
		q.UnattendedOnly = true
	default:
		return errcode.New(errcode.BadRequest, "unattended must be true or false")
	}
	if v := c.QueryParam("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errcode.New(errcode.BadRequest, "before must be an integer")
		}
		q.Before = n
	}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			// 0 is refused too: the journal's zero means "the
			// default", which a caller asks for by leaving limit out.
			return errcode.New(errcode.BadRequest, "limit must be an integer from 1 to 1000")
		}
		q.Limit = n
	}
	entries, err := s.records.Journal(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := JournalResponse{Entries: make([]JournalEntryJSON, 0, len(entries))}
	for _, e := range entries { // scopeFiltered below the API: a host's page holds its apps' entries only
		j := JournalEntryJSON{
			ID: e.ID, At: Time{e.At}, AppID: e.AppID, Slot: e.Slot, Host: e.Host, ResolvedHost: e.ResolvedHost, Method: e.Method, Outcome: e.Outcome,
			Gate: e.Gate, Code: e.Code, Status: e.Status, DurationMS: e.Duration.Milliseconds(), Unattended: e.Unattended, Note: e.Note,
			Act: e.Act, Count: max(e.Count, 1),
		}
		if !e.LastAt.IsZero() {
			j.LastAt = &Time{e.LastAt}
		}
		out.Entries = append(out.Entries, j)
	}
	limit := q.Limit
	if limit == 0 {
		limit = 100
	}
	if len(entries) == limit && len(entries) > 0 {
		out.Next = entries[len(entries)-1].ID
	}
	return c.JSON(http.StatusOK, out)
}
