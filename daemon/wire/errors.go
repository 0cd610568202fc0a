package wire

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snug/snugd/daemon/errcode"
)

// A ParseError is a frame that was refused. Code is what an answer
// carries: UNSUPPORTED_VERSION when v is not 1, NET_INVALID_REQUEST for a
// malformed net-request; Validate's refusal of a net-response carries
// HOST_ERROR. Message is safe to send back to the frame's sender: it names
// fields, rules and at most a header name the frame itself carried, never a
// value from the frame. RequestID is the requestId recovered from the raw
// frame when it carried exactly one plausible string id (1–128
// characters); when it is empty the frame MUST NOT be answered.
type ParseError struct {
	Code      errcode.Code
	Message   string
	RequestID string
	Type      string // the frame's type when it was known
}

func (e *ParseError) Error() string {
	if e.Type == "" {
		return "parse frame: " + string(e.Code) + ": " + e.Message
	}
	return "parse " + e.Type + ": " + string(e.Code) + ": " + e.Message
}

// Is reports whether target is e's code, so errors.Is(err,
// errcode.NetInvalidRequest) works.
func (e *ParseError) Is(target error) bool { return target == e.Code }

// ErrorCode returns e's code (errcode.CodeOf finds it).
func (e *ParseError) ErrorCode() errcode.Code { return e.Code }

// Answer returns the net-response error that answers the refused
// frame, and reports whether one may be sent: only when a requestId was
// recovered (a frame without one is never answered) and the frame is a
// net-request, the one frame snugd parses.
func (e *ParseError) Answer() (Frame, bool) {
	if e.RequestID == "" || e.Type != TypeNetRequest {
		return nil, false
	}
	body := e.Body()
	return NetResponse{RequestID: e.RequestID, Error: &body}, true
}

// Body returns e as an error envelope. A frame that failed to parse fails
// again unchanged, so it is never retryable.
func (e *ParseError) Body() ErrorBody {
	return ErrorBody{Code: e.Code, Message: e.Message, Retryable: false}
}

// ErrorBody is the error envelope every error answer carries: code,
// message and retryable, always all three. A PARSE_FAILED
// error also carries rawExcerpt (≤ 200 characters) and attemptsRemaining
// (§6), and only that code carries them.
type ErrorBody struct {
	Code              errcode.Code
	Message           string
	Retryable         bool
	RawExcerpt        string // PARSE_FAILED only
	AttemptsRemaining int    // PARSE_FAILED only
}

// MarshalJSON writes {code, message, retryable}, plus rawExcerpt and
// attemptsRemaining when the code is PARSE_FAILED.
func (b ErrorBody) MarshalJSON() ([]byte, error) {
	type base struct {
		Code      errcode.Code `json:"code"`
		Message   string       `json:"message"`
		Retryable bool         `json:"retryable"`
	}
	if b.Code != errcode.ParseFailed {
		return marshal(base{b.Code, b.Message, b.Retryable})
	}
	return marshal(struct {
		base
		RawExcerpt        string `json:"rawExcerpt"`
		AttemptsRemaining int    `json:"attemptsRemaining"`
	}{base{b.Code, b.Message, b.Retryable}, b.RawExcerpt, b.AttemptsRemaining})
}

var _ json.Marshaler = ErrorBody{}

// problem returns what is wrong with b, or "".
func (b ErrorBody) problem() string {
	switch {
	case b.Code == "" || chars(string(b.Code)) > maxCodeChars:
		return fmt.Sprintf("error.code must be 1–%d characters", maxCodeChars)
	case b.Code != errcode.ParseFailed && (b.RawExcerpt != "" || b.AttemptsRemaining != 0):
		return "only a PARSE_FAILED error carries rawExcerpt and attemptsRemaining"
	case chars(b.RawExcerpt) > MaxRawExcerpt:
		return fmt.Sprintf("error.rawExcerpt must be at most %d characters", MaxRawExcerpt)
	case b.AttemptsRemaining < 0 || b.AttemptsRemaining > ParseFailureBudget:
		return fmt.Sprintf("error.attemptsRemaining must be 0–%d", ParseFailureBudget)
	}
	return ""
}

// emitProblem adds what a sender may not do: emit a reserved code.
func (b ErrorBody) emitProblem() string {
	if e, ok := errcode.Lookup(b.Code); ok && e.Reserved {
		return "error.code " + string(b.Code) + " is reserved and never emitted"
	}
	return b.problem()
}

// ErrorBodyOf turns err into an error envelope. The code is the one err
// carries (a *ParseError, *errcode.Error or bare errcode.Code in its
// chain); the message is the safe message it carries, or the code's
// registered meaning; retryable is the registry's flag, except that a
// frame that failed to parse is never retryable. An error without a code,
// or with a code that is reserved or not registered, becomes HOST_ERROR,
// so a reserved code is never emitted. The wrapped cause
// (errcode.Error.Err) never reaches the envelope.
func ErrorBodyOf(err error) ErrorBody {
	if pe, ok := errors.AsType[*ParseError](err); ok {
		return pe.Body()
	}
	code, _ := errcode.CodeOf(err)
	msg := ""
	if ce, ok := errors.AsType[*errcode.Error](err); ok && ce.Code == code {
		msg = ce.Msg
	}
	if !errcode.Emittable(code) {
		code = errcode.HostError
	}
	entry, _ := errcode.Lookup(code)
	if msg == "" {
		msg = entry.Meaning
	}
	return ErrorBody{Code: entry.Code, Message: msg, Retryable: entry.Retryable}
}

// validationError turns a problem into the error Validate returns.
func validationError(typ, problem string) error {
	if problem == "" {
		return nil
	}
	return &ParseError{Code: shapeCode(typ), Type: typ, Message: problem}
}
