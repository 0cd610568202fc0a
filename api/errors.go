package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
)

// statusTable maps every code the API answers with to its HTTP status: the
// one place this is written down (API.md, Conventions). A code that is not
// listed answers 500.
func statusTable() map[errcode.Code]int {
	return map[errcode.Code]int{
		// 400: the call is malformed.
		errcode.BadRequest:        http.StatusBadRequest,
		errcode.DirectiveInvalid:  http.StatusBadRequest,
		errcode.SlotMismatch:      http.StatusBadRequest,
		errcode.FieldUnknown:      http.StatusBadRequest,
		errcode.ImportInvalid:     http.StatusBadRequest,
		errcode.NetInvalidRequest: http.StatusBadRequest, // a net frame the executor would not answer
		// 401: no or an unknown token.
		errcode.Unauthorized: http.StatusUnauthorized,
		errcode.NotPaired:    http.StatusUnauthorized, // a web page: pair again
		// 403: Host or Origin refused, or not allowed for this token.
		errcode.Forbidden:         http.StatusForbidden,
		errcode.VerifierMismatch:  http.StatusForbidden,
		errcode.InvitationInvalid: http.StatusForbidden,
		// 404: unknown route or resource.
		errcode.NotFound:           http.StatusNotFound,
		errcode.ConnectionNotFound: http.StatusNotFound,
		errcode.PairingNotFound:    http.StatusNotFound,
		errcode.HostNotFound:       http.StatusNotFound,
		errcode.ReviewStale:        http.StatusConflict,
		errcode.AppNotFound:        http.StatusNotFound,
		errcode.RequestTimeout:     http.StatusRequestTimeout,
		// 405.
		errcode.MethodNotAllowed: http.StatusMethodNotAllowed,
		// 409: a writer refusing a transition.
		errcode.ConnectionApproved:    http.StatusConflict,
		errcode.ConnectionRevoked:     http.StatusConflict,
		errcode.ConnectionNotDeclared: http.StatusConflict,
		errcode.ConnectionNotApproved: http.StatusConflict,
		errcode.NoPendingChange:       http.StatusConflict,
		errcode.ConnectionNotRevoked:  http.StatusConflict,
		errcode.SlotCapReached:        http.StatusConflict,
		errcode.PairingRedeemed:       http.StatusConflict,
		errcode.StandingArmed:         http.StatusConflict,
		errcode.ConfirmWithdrawn:      http.StatusConflict,
		errcode.InvitationCapReached:  http.StatusConflict,
		// 413, 415.
		errcode.PayloadTooLarge:      http.StatusRequestEntityTooLarge,
		errcode.UnsupportedMediaType: http.StatusUnsupportedMediaType,
		// 422: a requirement or template that fails validation (with
		// details), or an install that does not match a bundled starter.
		errcode.RequirementInvalid: http.StatusUnprocessableEntity,
		errcode.StarterNotVouched:  http.StatusUnprocessableEntity,
		errcode.ClaimRefused:       http.StatusUnprocessableEntity,
		errcode.LANRefused:         http.StatusUnprocessableEntity,
		errcode.AlreadyConnected:   http.StatusConflict,
		// 429.
		errcode.RateLimited: http.StatusTooManyRequests,
		// 500.
		errcode.Internal: http.StatusInternalServerError,
		// 502: a local helper the call needed did not serve it (outside a
		// net frame, where the code travels in the frame).
		errcode.NetFetchFailed: http.StatusBadGateway,
		// 507: the disk holding snugd's data cannot take a write.
		errcode.StorageFull: http.StatusInsufficientStorage,
	}
}

// Detail names one violation of a 422: the seat and the rule it breaks.
type Detail struct {
	Path string `json:"path"`
	Rule string `json:"rule"`
}

// errorJSON is the one error shape: {"error": {"code", "message",
// "retryable", "details"?}}.
type errorJSON struct {
	Error errorFields `json:"error"`
}

type errorFields struct {
	Code      errcode.Code `json:"code"`
	Message   string       `json:"message"`
	Retryable bool         `json:"retryable"`
	Details   []Detail     `json:"details,omitempty"`
}

// apiError is a refusal ready to write: its status and body.
type apiError struct {
	status int
	body   errorJSON
}

// apiRefusal builds the apiError for code with a safe message: its status
// from the table, its retryable flag from the registry.
func apiRefusal(code errcode.Code, msg string) apiError {
	e, _ := errcode.Lookup(code)
	status, ok := statusTable()[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	return apiError{status: status, body: errorJSON{errorFields{Code: code, Message: msg, Retryable: e.Retryable}}}
}

// errorOf turns a handler's error into an apiError. Coded errors keep
// their code and safe message; a requirement that fails validation lists
// every violation; an INTERNAL answers bare (the daemon logged it where it
// happened), and anything uncoded is logged here and answers INTERNAL.
func errorOf(log *slog.Logger, err error) apiError {
	var ve *grants.ValidationError
	if errors.As(err, &ve) {
		a := apiRefusal(errcode.RequirementInvalid, "the requirement fails validation")
		for _, v := range ve.Violations {
			a.body.Error.Details = append(a.body.Error.Details, Detail{Path: v.Path, Rule: v.Rule})
		}
		return a
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return apiRefusal(errcode.NotFound, "no such route")
		case http.StatusMethodNotAllowed:
			return apiRefusal(errcode.MethodNotAllowed, "the route does not take this method")
		case http.StatusRequestEntityTooLarge:
			return apiRefusal(errcode.PayloadTooLarge, "the request body is too large")
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apiRefusal(errcode.PayloadTooLarge, "the request body is too large for this route")
	}
	code, ok := errcode.CodeOf(err)
	if !ok {
		// No layer below classified it, so none logged it: this is the
		// layer that handles it.
		log.Error("request failed", "err", err)
		return apiRefusal(errcode.Internal, "internal error; the daemon's log says why")
	}
	if code == errcode.Internal {
		// The daemon made it INTERNAL and logged it there, with what it
		// was doing (STYLE.md: log at the layer that handles the error).
		return apiRefusal(errcode.Internal, "internal error; the daemon's log says why")
	}
	if _, listed := statusTable()[code]; !listed {
		log.Error("request failed with a code the API does not map", "code", string(code), "err", err)
		return apiRefusal(errcode.Internal, "internal error; the daemon's log says why")
	}
	msg := string(code)
	var ce *errcode.Error
	if errors.As(err, &ce) && ce.Msg != "" {
		msg = ce.Msg
	} else if e, ok := errcode.Lookup(code); ok {
		msg = e.Meaning
	}
	return apiRefusal(code, msg)
}

// write sends the refusal. The body never echoes a request value.
func (a apiError) write(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if a.status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="snugd"`)
	}
	w.WriteHeader(a.status)
	json.NewEncoder(w).Encode(a.body)
}

// Error makes apiError usable as a handler's error.
func (a apiError) Error() string { return string(a.body.Error.Code) + ": " + a.body.Error.Message }

// httpErrorHandler is echo's error handler: every error a handler returns
// goes out in the one error shape.
func (s *Server) httpErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var a apiError
	if !errors.As(err, &a) {
		a = errorOf(s.log, err)
	}
	a.write(c.Response())
}
