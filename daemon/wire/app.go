package wire

import "encoding/json"

// AppResponse is snug:app-response, in exactly one of R3's three shapes:
//
//   - streaming: OK and Streaming, Text is the cumulative prose so far
//     (display-provisional), Seq optional;
//   - final: OK and not Streaming, Data is the agent's JSON object;
//   - error: Error set (OK false).
//
// A terminal frame is a final or an error frame; every accepted requestId
// gets exactly one. mode: 'delta' is reserved and never written.
type AppResponse struct {
	RequestID string
	OK        bool
	Streaming bool
	Text      string          // streaming shape
	Seq       int             // streaming shape, optional (0 is not written)
	Data      json.RawMessage // final shape: a JSON object
	Error     *ErrorBody      // error shape
}

// FrameType returns TypeAppResponse.
func (AppResponse) FrameType() string { return TypeAppResponse }

// Terminal reports whether r ends its request (R3).
func (r AppResponse) Terminal() bool { return !r.OK || !r.Streaming }

// MarshalJSON writes the frame in its shape, with type and v: 1.
func (r AppResponse) MarshalJSON() ([]byte, error) {
	type head struct {
		Type      string `json:"type"`
		V         int    `json:"v"`
		RequestID string `json:"requestId"`
		OK        bool   `json:"ok"`
	}
	h := head{TypeAppResponse, protocolVersion, r.RequestID, r.Error == nil && r.OK}
	switch {
	case r.Error != nil || !r.OK:
		return marshal(struct {
			head
			Error *ErrorBody `json:"error"`
		}{h, r.Error})
	case r.Streaming:
		return marshal(struct {
			head
			Streaming bool   `json:"streaming"`
			Text      string `json:"text"`
			Seq       int    `json:"seq,omitempty"`
		}{h, true, r.Text, r.Seq})
	}
	return marshal(struct {
		head
		Streaming bool            `json:"streaming"`
		Data      json.RawMessage `json:"data"`
	}{h, false, r.Data})
}

// Validate reports whether r is exactly one of the three shapes, with an
// emittable error code.
func (r AppResponse) Validate() error {
	p := r.problem()
	if p == "" && r.Error != nil {
		p = r.Error.emitProblem()
	}
	return validationError(TypeAppResponse, p)
}

func (r AppResponse) problem() string {
	if p := checkLen("requestId", r.RequestID, 1, MaxIDChars); p != "" {
		return p
	}
	switch {
	case !r.OK:
		if r.Error == nil || r.Streaming || r.Text != "" || r.Seq != 0 || r.Data != nil {
			return "an error app-response carries error and nothing of the other shapes"
		}
		return r.Error.problem()
	case r.Error != nil:
		return "an ok app-response carries no error"
	case r.Streaming:
		if r.Data != nil {
			return "a streaming app-response carries text, not data"
		}
		if r.Seq < 0 || r.Seq > maxSafeInteger {
			return "seq must be a non-negative integer"
		}
	default:
		if r.Text != "" || r.Seq != 0 {
			return "a final app-response carries data, not text"
		}
		if kindOf(r.Data) != kindObject {
			return "a final app-response carries a data object"
		}
	}
	return ""
}
