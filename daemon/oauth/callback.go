package oauth

import (
	"errors"
	"net/url"
	"slices"
)

// Bounds on a callback's query. Real codes are tens to a few hundred
// characters (Google's are ~75, GitHub's 20, Spotify's ~300); a state is
// what State writes (66 characters).
const (
	maxCallbackQuery = 8 << 10
	maxCode          = 2048
	maxState         = 256
)

// ErrCallback: the callback query is not one RFC 6749 §4.1.2 answer — a
// parameter repeated (§3.1 forbids it), too long, unprintable, a code or
// state missing, or both a code and an error.
var ErrCallback = errors.New("the sign-in answer is malformed")

// authorizeErrors are the error codes of RFC 6749 §4.1.2.1. Anything else
// is reported as "unknown", never echoed.
var authorizeErrors = []string{
	"invalid_request", "unauthorized_client", "access_denied",
	"unsupported_response_type", "invalid_scope", "server_error",
	"temporarily_unavailable",
}

// AuthorizeError is an authorization error answer (RFC 6749 §4.1.2.1).
// Code is one of the §4.1.2.1 codes or "unknown"; error_description and
// error_uri are provider text and are dropped, never surfaced.
type AuthorizeError struct {
	Code string
}

func (e *AuthorizeError) Error() string {
	switch e.Code {
	case "access_denied":
		return "the sign-in was declined at the provider"
	case "invalid_scope":
		return "the provider refused the requested scopes"
	case "server_error", "temporarily_unavailable":
		return "the provider could not complete the sign-in; try again later"
	case "unknown":
		return "the provider answered the sign-in with an error"
	}
	return "the provider refused the sign-in request (" + e.Code + ")"
}

// ParseCallback reads the query of a redirect to /oauth/callback (RFC 6749
// §4.1.2). It returns the code and the state, or an *AuthorizeError with
// the state (so the caller can still find and close the flow) when the
// provider answered with an error, or ErrCallback. Unknown parameters (iss,
// scope, session_state…) are allowed; no parameter may appear twice.
func ParseCallback(rawQuery string) (code, state string, err error) {
	if len(rawQuery) > maxCallbackQuery {
		return "", "", ErrCallback
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", "", ErrCallback
	}
	for _, vs := range q {
		if len(vs) != 1 {
			return "", "", ErrCallback
		}
	}
	get := func(name string) (string, bool) {
		vs, ok := q[name]
		if !ok {
			return "", false
		}
		return vs[0], true
	}
	state, hasState := get("state")
	if !hasState || len(state) > maxState || !printable(state) {
		return "", "", ErrCallback
	}
	if e, ok := get("error"); ok {
		if _, hasCode := get("code"); hasCode {
			return "", "", ErrCallback
		}
		if !slices.Contains(authorizeErrors, e) {
			e = "unknown"
		}
		return "", state, &AuthorizeError{Code: e}
	}
	code, hasCode := get("code")
	if !hasCode || len(code) > maxCode || !printable(code) {
		return "", "", ErrCallback
	}
	return code, state, nil
}
