package wire

import (
	"encoding/json"
)

// The db-request ops (§2).
const (
	DBExec   = "exec"
	DBExport = "export"
	DBImport = "import"
	DBKVGet  = "kvGet"
	DBKVSet  = "kvSet"
)

// DBResponse is snug:db-response: the answer to a db-request, a result
// (Error nil; Result optional, any JSON value) or an error envelope.
type DBResponse struct {
	RequestID string
	Result    json.RawMessage
	Error     *ErrorBody
}

// FrameType returns TypeDBResponse.
func (DBResponse) FrameType() string { return TypeDBResponse }

// MarshalJSON writes {…, ok, result?} or {…, ok: false, error}.
func (r DBResponse) MarshalJSON() ([]byte, error) {
	type head struct {
		Type      string `json:"type"`
		V         int    `json:"v"`
		RequestID string `json:"requestId"`
		OK        bool   `json:"ok"`
	}
	h := head{TypeDBResponse, protocolVersion, r.RequestID, r.Error == nil}
	if r.Error != nil {
		return marshal(struct {
			head
			Error *ErrorBody `json:"error"`
		}{h, r.Error})
	}
	return marshal(struct {
		head
		Result json.RawMessage `json:"result,omitempty"`
	}{h, r.Result})
}

// Validate reports whether r is one of its two shapes with an emittable
// error code.
func (r DBResponse) Validate() error {
	p := r.problem()
	if p == "" && r.Error != nil {
		p = r.Error.emitProblem()
	}
	return validationError(TypeDBResponse, p)
}

func (r DBResponse) problem() string {
	if p := checkLen("requestId", r.RequestID, 1, MaxIDChars); p != "" {
		return p
	}
	if r.Error != nil {
		if r.Result != nil {
			return "an error db-response carries no result"
		}
		return r.Error.problem()
	}
	return ""
}
