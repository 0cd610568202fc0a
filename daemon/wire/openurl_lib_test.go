package wire

import "github.com/snug/snugd/daemon/errcode"

// Moved from openurl.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

// FrameType returns TypeOpenURLRequest.
func (OpenURLRequest) FrameType() string { return TypeOpenURLRequest }

// MarshalJSON writes the frame with type and v: 1.
func (r OpenURLRequest) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type       string `json:"type"`
		V          int    `json:"v"`
		RequestID  string `json:"requestId"`
		InstanceID string `json:"instanceId"`
		URL        string `json:"url"`
	}{TypeOpenURLRequest, protocolVersion, r.RequestID, r.InstanceID, r.URL})
}

// Validate applies ParseOpenURLRequest's rules to r's values.
func (r OpenURLRequest) Validate() error { return validationError(TypeOpenURLRequest, r.problem()) }

func (r OpenURLRequest) problem() string {
	if p := firstProblem(
		checkLen("requestId", r.RequestID, 1, MaxIDChars),
		checkLen("instanceId", r.InstanceID, 1, MaxIDChars),
		checkLen("url", r.URL, 1, maxOpenURLChars),
	); p != "" {
		return p
	}
	return openURLProblem(r.URL)
}

// openURLProblem: the URL MUST parse, MUST be https and MUST carry no
// username or password (§4). It also meets net-request's URL shape
// (ruling R3): the user reads this URL in a confirm dialog, so the shapes
// that make two parsers disagree about the host are refused here too.
func openURLProblem(s string) string {
	u, p := strictURL("url", s)
	if p != "" {
		return p
	}
	if u.Scheme != "https" {
		return "url must be https"
	}
	return ""
}

// ParseOpenURLRequest parses a snug:open-url-request. It is strict (R4):
// any key outside {type, v, requestId, instanceId, url} rejects the frame,
// and so does a duplicate key. A refused frame is answered, when its
// requestId was recovered, by an open-url-result with status refused
// (ParseError.Answer).
func ParseOpenURLRequest(raw []byte) (OpenURLRequest, error) {
	if len(raw) > MaxFrameBytes {
		return OpenURLRequest{}, oversizeRaw(TypeOpenURLRequest, raw)
	}
	var buf [maxKnownKeys]member
	ms, perr := scanFrame(raw, buf[:0], TypeOpenURLRequest, errcode.HostError)
	if perr != nil {
		return OpenURLRequest{}, perr
	}
	return decodeOpenURLRequest(ms)
}

func decodeOpenURLRequest(ms []member) (OpenURLRequest, error) {
	const (
		kType = 1 << iota
		kV
		kRequestID
		kInstanceID
		kURL
	)
	d := newDecoder(TypeOpenURLRequest)
	var r OpenURLRequest
	var seen uint8
	for _, m := range ms {
		var bit uint8
		switch string(m.key) {
		case "type":
			bit = kType
			d.common(m)
		case "v":
			bit = kV
			d.common(m)
		case "requestId":
			bit = kRequestID
			d.offerRequestID(m)
			r.RequestID = d.str(m, "requestId")
		case "instanceId":
			bit = kInstanceID
			r.InstanceID = d.str(m, "instanceId")
		case "url":
			bit = kURL
			r.URL = d.str(m, "url")
		default:
			d.fail("unknown key: open-url-request is strict")
			continue
		}
		if seen&bit != 0 {
			d.fail("duplicate key " + string(m.key))
		}
		seen |= bit
	}
	d.require(seen&kType != 0, "type")
	d.require(seen&kRequestID != 0, "requestId")
	d.require(seen&kInstanceID != 0, "instanceId")
	d.require(seen&kURL != 0, "url")
	return finish(r, &d)
}

func decodeOpenURLResult(ms []member) (OpenURLResult, error) {
	d := newDecoder(TypeOpenURLResult)
	var r OpenURLResult
	var seenID, seenStatus bool
	for _, m := range ms {
		if d.common(m) {
			continue
		}
		switch string(m.key) {
		case "requestId":
			d.offerRequestID(m)
			r.RequestID, seenID = d.str(m, "requestId"), true
		case "status":
			r.Status, seenStatus = d.str(m, "status"), true
		case "reason":
			r.Reason = d.str(m, "reason")
		}
	}
	d.require(seenID, "requestId")
	d.require(seenStatus, "status")
	return finish(r, &d)
}

// OpenURLRequest is snug:open-url-request: the app asks the host to open
// URL in the user's real browser, after the host's own confirm dialog and
// on a user gesture (§4). There is no target, window-features or
// navigation seat.
type OpenURLRequest struct {
	RequestID  string
	InstanceID string
	URL        string // https, 1–2048 characters, no userinfo
}
