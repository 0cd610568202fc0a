package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Moved from db.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

// DBOps returns the five db-request ops.
func DBOps() []string { return []string{DBExec, DBExport, DBImport, DBKVGet, DBKVSet} }

// FrameType returns TypeDBRequest.
func (DBRequest) FrameType() string { return TypeDBRequest }

// MarshalJSON writes the frame with type and v: 1.
func (r DBRequest) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		Type       string          `json:"type"`
		V          int             `json:"v"`
		RequestID  string          `json:"requestId"`
		InstanceID string          `json:"instanceId"`
		Op         string          `json:"op"`
		SQL        string          `json:"sql,omitempty"`
		Params     json.RawMessage `json:"params,omitempty"`
		Key        string          `json:"key,omitempty"`
		Value      json.RawMessage `json:"value,omitempty"`
		Data       string          `json:"data,omitempty"`
	}{TypeDBRequest, protocolVersion, r.RequestID, r.InstanceID, r.Op, r.SQL, r.Params, r.Key, r.Value, r.Data})
}

// Validate reports whether r names a known op with the arguments it needs.
func (r DBRequest) Validate() error { return validationError(TypeDBRequest, r.problem()) }

func (r DBRequest) problem() string {
	if p := firstProblem(
		checkLen("requestId", r.RequestID, 1, MaxIDChars),
		checkLen("instanceId", r.InstanceID, 1, MaxIDChars),
	); p != "" {
		return p
	}
	if r.Params != nil && kindOf(r.Params) != kindArray {
		return "params must be an array"
	}
	if r.Data != "" {
		if p := artifactProblem(r.Data); p != "" {
			return p
		}
	}
	switch r.Op {
	case DBExec:
		if r.SQL == "" {
			return "exec needs sql"
		}
	case DBExport:
	case DBImport:
		if r.Data == "" {
			return "import needs data"
		}
	case DBKVGet:
		if r.Key == "" {
			return "kvGet needs key"
		}
	case DBKVSet:
		if r.Key == "" || r.Value == nil {
			return "kvSet needs key and value"
		}
	default:
		return "op must be one of exec, export, import, kvGet, kvSet"
	}
	return ""
}

// artifactProblem checks a base64 artifact: standard padded encoding
// without line breaks, at most MaxArtifactBytes decoded (R6). The length
// is checked before decoding.
func artifactProblem(data string) string {
	tooBig := fmt.Sprintf("data must decode to at most %d bytes", MaxArtifactBytes)
	if base64.StdEncoding.DecodedLen(len(data)) > MaxArtifactBytes+2 {
		return tooBig
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil || strings.ContainsAny(data, "\r\n") {
		return "data must be standard base64"
	}
	if len(b) > MaxArtifactBytes {
		return tooBig
	}
	return ""
}

func decodeDBRequest(ms []member) (DBRequest, error) {
	d := newDecoder(TypeDBRequest)
	var r DBRequest
	var seenID, seenInstance, seenOp bool
	for _, m := range ms {
		if d.common(m) {
			continue
		}
		switch string(m.key) {
		case "requestId":
			d.offerRequestID(m)
			r.RequestID, seenID = d.str(m, "requestId"), true
		case "instanceId":
			r.InstanceID, seenInstance = d.str(m, "instanceId"), true
		case "op":
			r.Op, seenOp = d.str(m, "op"), true
		case "sql":
			r.SQL = d.str(m, "sql")
		case "params":
			r.Params = d.raw(m, "params", string([]byte{kindArray}), "an array")
		case "key":
			r.Key = d.str(m, "key")
		case "value":
			r.Value = json.RawMessage(m.val)
		case "data":
			r.Data = d.str(m, "data")
		}
	}
	d.require(seenID, "requestId")
	d.require(seenInstance, "instanceId")
	d.require(seenOp, "op")
	return finish(r, &d)
}

func decodeDBResponse(ms []member) (DBResponse, error) {
	d := newDecoder(TypeDBResponse)
	var r DBResponse
	var seenID, seenOK, ok, seenResult, seenError bool
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
		case "result":
			r.Result, seenResult = json.RawMessage(m.val), true
		case "error":
			r.Error, seenError = d.errorBody(m), true
		}
	}
	d.require(seenID, "requestId")
	d.require(seenOK, "ok")
	switch {
	case ok && seenError:
		d.fail("an ok db-response carries no error")
	case !ok && seenResult:
		d.fail("an error db-response carries no result")
	case !ok:
		d.require(seenError, "error")
	}
	if d.problem == "" && !ok && r.Error == nil {
		d.fail("error is required")
	}
	return finish(r, &d)
}

// DBErrorResponse returns the error db-response for err (see ErrorBodyOf).
func DBErrorResponse(requestID string, err error) DBResponse {
	b := ErrorBodyOf(err)
	return DBResponse{RequestID: requestID, Error: &b}
}

// DBRequest is snug:db-request: host-brokered per-app storage. Part II,
// which defines the ops' arguments, is not available (ruling R1); snugd
// reads them as: exec needs sql (params optional, an array); import needs
// data, a base64 artifact of at most MaxArtifactBytes; kvGet needs key;
// kvSet needs key and value; export needs nothing.
type DBRequest struct {
	RequestID  string
	InstanceID string
	Op         string
	SQL        string
	Params     json.RawMessage // an array, optional
	Key        string
	Value      json.RawMessage // any JSON value
	Data       string          // standard base64
}
