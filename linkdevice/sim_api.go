package linkdevice

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The simulator's messaging API (PROTOCOL.md, "The simulator helper"):
//
//	GET  /v1/threads                     → 200 {"threads": [{"id", "title", "messages"}]}
//	GET  /v1/threads/{id}/messages       → 200 {"messages": [{"id", "from", "text", "sentAt"}]}
//	POST /v1/threads/{id}/messages       {"threadId", "text"} → 201 {"message": {…}}
//
// Errors are {"error": {"code", "message"}}: 400 bad_request (bad JSON, no
// text, text over 4096 bytes, threadId unlike the path's), 404 not_found,
// 405 method_not_allowed, 413 too_large, 429 rate_limited (with
// Retry-After) past the send limit per thread per minute.
// The simulator's send as the standing approval's target rule reads it: the thread
// id is the {target} segment of SimSendPath and the SimTargetField member
// of the JSON body, and the two must agree. main builds the registry
// entry sim's daemon.StandingTarget from these.
const (
	SimSendMethod  = "POST"
	SimSendPath    = "/v1/threads/{target}/messages"
	SimTargetField = "threadId"
)

const (
	simMaxText     = 4096
	simMaxMessages = 200 // kept per thread; the oldest go first
	simSendWindow  = time.Minute
)

func (s *simulator) serveAPI(req Request) Response {
	u, err := url.ParseRequestURI(req.PathAndQuery)
	if err != nil {
		return simError(http.StatusBadRequest, "bad_request", "the path does not parse")
	}
	parts := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	switch {
	case len(parts) == 2 && parts[0] == "v1" && parts[1] == "threads":
		if req.Method != http.MethodGet {
			return simError(http.StatusMethodNotAllowed, "method_not_allowed", "use GET")
		}
		type summary struct {
			ID       string `json:"id"`
			Title    string `json:"title"`
			Messages int    `json:"messages"`
		}
		out := []summary{}
		for _, t := range s.session.Threads {
			out = append(out, summary{t.ID, t.Title, len(t.Messages)})
		}
		return simJSON(http.StatusOK, map[string]any{"threads": out})
	case len(parts) == 4 && parts[0] == "v1" && parts[1] == "threads" && parts[3] == "messages":
		id, err := url.PathUnescape(parts[2])
		if err != nil {
			return simError(http.StatusBadRequest, "bad_request", "the thread id does not parse")
		}
		t := s.threadLocked(id)
		if t == nil {
			return simError(http.StatusNotFound, "not_found", "no such thread")
		}
		switch req.Method {
		case http.MethodGet:
			return simJSON(http.StatusOK, map[string]any{"messages": t.Messages})
		case http.MethodPost:
			return s.sendLocked(t, req.Body)
		}
		return simError(http.StatusMethodNotAllowed, "method_not_allowed", "use GET or POST")
	}
	return simError(http.StatusNotFound, "not_found", "no such resource")
}

func (s *simulator) threadLocked(id string) *simThread {
	for i := range s.session.Threads {
		if s.session.Threads[i].ID == id {
			return &s.session.Threads[i]
		}
	}
	return nil
}

func (s *simulator) sendLocked(t *simThread, body []byte) Response {
	if len(body) > 16<<10 {
		return simError(http.StatusRequestEntityTooLarge, "too_large", "the body exceeds 16384 bytes")
	}
	var in struct {
		ThreadID *string `json:"threadId"`
		Text     *string `json:"text"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || dec.More() {
		return simError(http.StatusBadRequest, "bad_request", "the body must be one JSON object {threadId, text}")
	}
	switch {
	case in.ThreadID == nil || in.Text == nil:
		return simError(http.StatusBadRequest, "bad_request", "threadId and text are required")
	case *in.ThreadID != t.ID:
		return simError(http.StatusBadRequest, "bad_request", "threadId does not match the path")
	case strings.TrimSpace(*in.Text) == "" || len(*in.Text) > simMaxText || !utf8.ValidString(*in.Text):
		return simError(http.StatusBadRequest, "bad_request", "text must be 1-4096 bytes of UTF-8")
	}
	now := time.Now()
	if s.sends == nil {
		s.sends = map[string][]time.Time{}
	}
	recent := s.sends[t.ID][:0]
	for _, at := range s.sends[t.ID] {
		if now.Sub(at) < simSendWindow {
			recent = append(recent, at)
		}
	}
	if len(recent) >= s.opt.SendLimit {
		s.sends[t.ID] = recent
		wait := simSendWindow - now.Sub(recent[0])
		r := simError(http.StatusTooManyRequests, "rate_limited", "too many messages to this thread; try again later")
		r.Header.Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		return r
	}
	s.sends[t.ID] = append(recent, now)
	n := 0
	for _, th := range s.session.Threads {
		n += len(th.Messages)
	}
	m := simMessage{ID: fmt.Sprintf("m%d-%d", now.UnixNano(), n+1), From: "me", Text: *in.Text, SentAt: now.UTC()}
	t.Messages = append(t.Messages, m)
	if len(t.Messages) > simMaxMessages {
		t.Messages = t.Messages[len(t.Messages)-simMaxMessages:]
	}
	if err := s.saveLocked(); err != nil {
		s.log.Error("save session", "err", err)
		return simError(http.StatusInternalServerError, "internal", "the message was sent but not saved")
	}
	return simJSON(http.StatusCreated, map[string]any{"message": m})
}

func simJSON(status int, v any) Response {
	body, _ := json.Marshal(v)
	return Response{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

func simError(status int, code, msg string) Response {
	return simJSON(status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
