package oauth

import (
	"log/slog"
	"slices"
	"strconv"
)

// Class is what a failed token-endpoint call means for the connection.
type Class int

const (
	// Failed: the endpoint refused the request for a reason a retry will
	// not change (a bad client, a refused redirect, a malformed answer).
	Failed Class = iota
	// Expired: the grant is gone (invalid_grant): the connection becomes
	// expired and the user is offered a reconnect.
	Expired
	// Transient: a 5xx, a 429, a timeout or a network failure: the server
	// may still honour the refresh token, so the caller keeps it.
	Transient
)

func (c Class) String() string {
	switch c {
	case Expired:
		return "expired"
	case Transient:
		return "transient"
	}
	return "failed"
}

// tokenErrors are the error codes of RFC 6749 §5.2, RFC 7009 §2.2.1 and
// the two §4.1.2.1 codes token endpoints also send. Error.Code is one of
// them or empty; provider text never is.
var tokenErrors = []string{
	"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client",
	"unsupported_grant_type", "invalid_scope", "unsupported_token_type",
	"server_error", "temporarily_unavailable",
}

// Error is a failed token, refresh or revocation request. Its Error text
// is a fixed sentence: never the provider's text, never a submitted
// secret. The provider's raw answer is available through Body, for the
// caller to scrub with Secrets and hand to the provider-error extractor.
//
// conformance: P3-C13-24
type Error struct {
	// Op is the request: "code exchange", "client credentials", "refresh",
	// "revoke refresh token" or "revoke access token".
	Op    string
	Class Class
	// Code is the RFC 6749 §5.2 error code when the answer carried a
	// known one, else empty.
	Code string
	// Status is the HTTP status, 0 when no answer arrived.
	Status int
	// Secrets are every secret value this request submitted (client
	// secret, its Basic form, refresh token, code, code verifier, token):
	// the scrub candidate set for this seat's error handling.
	Secrets []string

	reason string
	body   []byte
	err    error
}

// Body returns the provider's answer, capped, unscrubbed. It holds
// provider text and may echo a submitted secret: scrub it with Secrets
// before anything else sees it.
func (e *Error) Body() []byte { return slices.Clone(e.body) }

func (e *Error) Error() string {
	s := "oauth " + e.Op + ": " + e.reason
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	return s
}

// Unwrap returns the transport failure behind a Transient error, if any.
// It names hosts, never a secret (every secret travels in the body).
func (e *Error) Unwrap() error { return e.err }

// GoString keeps %#v from printing the body and the secrets.
func (e *Error) GoString() string { return e.Error() }

// LogValue logs the error without the body and the secrets.
func (e *Error) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("op", e.Op), slog.String("class", e.Class.String()),
		slog.String("code", e.Code), slog.String("status", strconv.Itoa(e.Status)),
		slog.String("reason", e.reason),
	)
}
