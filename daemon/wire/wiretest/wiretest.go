// Package wiretest reads back the frames snugd writes, for the tests of
// the packages that write them (daemon, api). snugd itself never parses a
// net-response, so its parser is no part of package wire. Only _test.go
// files may import this package (cmd/snugd's import-rule test says so).
package wiretest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/wire"
)

// netResponse is every key a snug:net-response carries, in either shape.
type netResponse struct {
	Type      string            `json:"type"`
	V         *int              `json:"v"`
	RequestID string            `json:"requestId"`
	OK        *bool             `json:"ok"`
	Status    *int              `json:"status"`
	Headers   map[string]string `json:"headers"`
	Body      *string           `json:"body"`
	Truncated bool              `json:"truncated"`
	URL       string            `json:"url"`
	Error     *struct {
		Code              errcode.Code `json:"code"`
		Message           string       `json:"message"`
		Retryable         *bool        `json:"retryable"`
		RawExcerpt        string       `json:"rawExcerpt"`
		AttemptsRemaining int          `json:"attemptsRemaining"`
	} `json:"error"`
}

// ParseNetResponse reads a snug:net-response strictly: one JSON object of
// at most wire.MaxNetFrameBytes with no key outside the frame's, type
// snug:net-response and v 1, exactly one of the two shapes (ok with
// status, headers and body; or not ok with an error of code, message and
// retryable), and a value that passes NetResponse.Validate.
func ParseNetResponse(raw []byte) (wire.NetResponse, error) {
	if len(raw) > wire.MaxNetFrameBytes {
		return wire.NetResponse{}, fmt.Errorf("net-response of %d bytes exceeds %d", len(raw), wire.MaxNetFrameBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f netResponse
	if err := dec.Decode(&f); err != nil {
		return wire.NetResponse{}, fmt.Errorf("net-response: %w", err)
	}
	if dec.More() {
		return wire.NetResponse{}, errors.New("net-response: data after the frame")
	}
	switch {
	case f.Type != wire.TypeNetResponse:
		return wire.NetResponse{}, fmt.Errorf("type %q, want %q", f.Type, wire.TypeNetResponse)
	case f.V == nil || *f.V != 1:
		return wire.NetResponse{}, errors.New("v is not 1")
	case f.OK == nil:
		return wire.NetResponse{}, errors.New("no ok")
	case *f.OK && (f.Error != nil || f.Status == nil || f.Headers == nil || f.Body == nil):
		return wire.NetResponse{}, errors.New("ok: true without status, headers and body, or with an error")
	case !*f.OK && (f.Error == nil || f.Status != nil || f.Headers != nil || f.Body != nil || f.Truncated):
		return wire.NetResponse{}, errors.New("ok: false without an error, or with a response")
	case !*f.OK && f.Error.Retryable == nil:
		return wire.NetResponse{}, errors.New("error without retryable")
	}
	r := wire.NetResponse{RequestID: f.RequestID, Truncated: f.Truncated, URL: f.URL}
	if *f.OK {
		r.Status, r.Headers, r.Body = *f.Status, f.Headers, *f.Body
	} else {
		r.Error = &wire.ErrorBody{Code: f.Error.Code, Message: f.Error.Message, Retryable: *f.Error.Retryable,
			RawExcerpt: f.Error.RawExcerpt, AttemptsRemaining: f.Error.AttemptsRemaining}
	}
	if err := r.Validate(); err != nil {
		return wire.NetResponse{}, err
	}
	return r, nil
}
