package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
)

// bind decodes the request's JSON body into v strictly: one JSON value, no
// field v does not have, nothing after it. The security chain has already
// refused a body that is not JSON or is too large. Errors name a field at
// most, never a value.
func bind(c echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return bodyError(err)
		}
		return errcode.New(errcode.BadRequest, "data after the JSON value")
	}
	return nil
}

// bindOptional is bind for routes whose body is optional: an empty body
// leaves v as it is.
func bindOptional(c echo.Context, v any) error {
	if c.Request().ContentLength == 0 {
		return nil
	}
	return bind(c, v)
}

func bodyError(err error) error {
	var (
		mbe *http.MaxBytesError
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return errcode.New(errcode.PayloadTooLarge, fmt.Sprintf("the request body is larger than the route's %d bytes", mbe.Limit))
	case errors.Is(err, io.EOF):
		return errcode.New(errcode.BadRequest, "a JSON body is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errcode.New(errcode.BadRequest, "the body is not valid JSON (it ends early)")
	case errors.As(err, &se):
		return errcode.New(errcode.BadRequest, fmt.Sprintf("the body is not valid JSON (at byte %d)", se.Offset))
	case errors.As(err, &te):
		return errcode.New(errcode.BadRequest, fmt.Sprintf("field %q has the wrong type", te.Field))
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		// A stalled sender: the server's read deadline passed mid-body.
		// The error names the socket's addresses, so it is never shown.
		return errcode.New(errcode.RequestTimeout, "the request body did not arrive in time")
	}
	// json's "unknown field" error names the key, which is the caller's
	// own and not a value. Any other error is the connection's (a body
	// broken off), whose text names sockets: a fixed sentence instead.
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return errcode.New(errcode.BadRequest, "the body does not fit this route: "+msg)
	}
	return errcode.New(errcode.BadRequest, "the request body could not be read")
}

// param returns a path parameter, unescaped by the security chain.
func param(c echo.Context, name string) string {
	p, _ := c.Request().Context().Value(paramsKey).(map[string]string)
	return p[name]
}

// requestOrigin returns the request's Origin header ("" when none); the
// chain has admitted it.
func requestOrigin(c echo.Context) string { return c.Request().Header.Get("Origin") }
