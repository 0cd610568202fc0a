package wire

import (
	"fmt"

	"github.com/snug/snugd/daemon/errcode"
)

// Moved from netresponse.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

// ResponseHeaders returns the response-header whitelist (§3): the names a
// net-response may carry, lowercase, with the x-ratelimit-* glob last.
func ResponseHeaders() []string {
	return []string{"content-type", "content-length", "cache-control", "etag", "last-modified", "retry-after", "link", "x-ratelimit-*"}
}

// ParseNetResponse parses a snug:net-response. It is tolerant (unknown
// keys are ignored) but holds the frame to one of its two shapes.
func ParseNetResponse(raw []byte) (NetResponse, error) {
	if len(raw) > MaxNetFrameBytes {
		return NetResponse{}, oversizeRaw(TypeNetResponse, raw)
	}
	var buf [maxKnownKeys]member
	ms, perr := scanFrame(raw, buf[:0], TypeNetResponse, errcode.HostError)
	if perr != nil {
		return NetResponse{}, perr
	}
	return decodeNetResponse(ms)
}

func decodeNetResponse(ms []member) (NetResponse, error) {
	d := newDecoder(TypeNetResponse)
	var r NetResponse
	var seenID, seenOK, ok, seenStatus, seenHeaders, seenBody, seenTruncated, seenError bool
	for _, m := range ms {
		if d.common(m) {
			continue
		}
		switch string(m.key) {
		case "requestId":
			d.offerRequestID(m)
			r.RequestID, seenID = d.str(m, "requestId"), true
		case "ok":
			ok, seenOK = d.boolean(m, "ok"), true
		case "status":
			r.Status, seenStatus = d.integer(m, "status", 100, 599), true
		case "headers":
			r.Headers, seenHeaders = d.stringMap(m, "headers"), true
		case "body":
			r.Body, seenBody = d.str(m, "body"), true
		case "truncated":
			r.Truncated, seenTruncated = d.boolean(m, "truncated"), true
		case "url":
			if r.URL = d.str(m, "url"); r.URL == "" {
				d.fail(fmt.Sprintf("url must be 1–%d characters", MaxNetURLChars))
			}
		case "error":
			r.Error, seenError = d.errorBody(m), true
		}
	}
	d.require(seenID, "requestId")
	d.require(seenOK, "ok")
	switch {
	case ok && seenError:
		d.fail("an ok net-response carries no error")
	case ok:
		d.require(seenStatus, "status")
		d.require(seenHeaders, "headers")
		d.require(seenBody, "body")
		if r.Headers == nil {
			r.Headers = map[string]string{}
		}
	case seenStatus || seenHeaders || seenBody || seenTruncated:
		d.fail("an error net-response carries no status, headers, body or truncated")
	default:
		d.require(seenError, "error")
	}
	if d.problem == "" && !ok && r.Error == nil {
		d.fail("error is required")
	}
	return finish(r, &d)
}

// stringMap decodes an object of strings.
func (d *decoder) stringMap(m member, field string) map[string]string {
	if m.kind() != kindObject {
		d.fail(field + " must be an object of strings")
		return nil
	}
	var buf [maxKnownKeys]member
	out := map[string]string{}
	for _, e := range members(m.val, buf[:0]) {
		if e.kind() != kindString {
			d.fail(field + " must be an object of strings")
			return nil
		}
		out[string(e.key)] = stringValue(e.val)
	}
	return out
}

// errorBody decodes an error envelope: code, message and retryable, all
// three required; rawExcerpt and attemptsRemaining required with
// PARSE_FAILED and refused without it.
func (d *decoder) errorBody(m member) *ErrorBody {
	if m.kind() != kindObject {
		d.fail("error must be an object")
		return nil
	}
	var b ErrorBody
	var buf [maxKnownKeys]member
	var seenCode, seenMsg, seenRetry, seenExcerpt, seenAttempts bool
	for _, e := range members(m.val, buf[:0]) {
		switch string(e.key) {
		case "code":
			b.Code, seenCode = errcode.Code(d.str(e, "error.code")), true
		case "message":
			b.Message, seenMsg = d.str(e, "error.message"), true
		case "retryable":
			b.Retryable, seenRetry = d.boolean(e, "error.retryable"), true
		case "rawExcerpt":
			b.RawExcerpt, seenExcerpt = d.str(e, "error.rawExcerpt"), true
		case "attemptsRemaining":
			b.AttemptsRemaining, seenAttempts = d.integer(e, "error.attemptsRemaining", 0, ParseFailureBudget), true
		}
	}
	d.require(seenCode, "error.code")
	d.require(seenMsg, "error.message")
	d.require(seenRetry, "error.retryable")
	if b.Code == errcode.ParseFailed {
		d.require(seenExcerpt, "error.rawExcerpt")
		d.require(seenAttempts, "error.attemptsRemaining")
	} else if seenExcerpt || seenAttempts {
		d.fail("only a PARSE_FAILED error carries rawExcerpt and attemptsRemaining")
	}
	if d.problem == "" {
		d.fail(b.problem())
	}
	return &b
}
