package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
)

// The thirteen frame types.
const (
	TypeAppAnnounce    = "snug:app-announce"
	TypeHostReady      = "snug:host-ready"
	TypeAppMessage     = "snug:app-message"
	TypeAppCancel      = "snug:app-cancel"
	TypeAppResponse    = "snug:app-response"
	TypeDBRequest      = "snug:db-request"
	TypeDBResponse     = "snug:db-response"
	TypeNetRequest     = "snug:net-request"
	TypeNetResponse    = "snug:net-response"
	TypeOpenURLRequest = "snug:open-url-request"
	TypeOpenURLResult  = "snug:open-url-result"
	TypeHostEvent      = "snug:host-event"
	TypeAppEvent       = "snug:app-event"

	typePrefix      = "snug:"
	protocolVersion = 1 // Every frame carries v: 1
)

// FrameTypes returns the thirteen frame types in the order of Part I's
// table.
func FrameTypes() []string {
	return []string{
		TypeAppAnnounce, TypeHostReady, TypeAppMessage, TypeAppCancel, TypeAppResponse,
		TypeDBRequest, TypeDBResponse, TypeNetRequest, TypeNetResponse,
		TypeOpenURLRequest, TypeOpenURLResult, TypeHostEvent, TypeAppEvent,
	}
}

// Size classes, measured on the serialized UTF-8 bytes of a frame
// (an exact key set), and the frame protocol's other limits. Lengths in characters count
// Unicode code points, as JSON Schema's maxLength does.
const (
	MaxFrameBytes    = 256 << 10      // every frame but the db and net pairs
	MaxDBFrameBytes  = 8 << 20        // snug:db-request, snug:db-response
	MaxNetFrameBytes = 1<<20 + 64<<10 // MAX_NET_FRAME_BYTES: snug:net-request, snug:net-response
	MaxRawExcerpt    = 200            // characters of PARSE_FAILED's rawExcerpt
	MaxIDChars       = 128            // requestId, instanceId, appId
	// ParseFailureBudget is how many consecutive agent-reply parse
	// failures a thread may have before the host requires an explicit
	// user reset: the most a PARSE_FAILED error's attemptsRemaining says.
	ParseFailureBudget = 3

	maxCodeChars = 128
	maxKnownKeys = 16 // stack room for a frame's top-level members
	// maxScanBytes bounds the work spent on an oversized frame to recover
	// its requestId: twice the largest class. Larger input is refused
	// unread and never answered.
	maxScanBytes = 2 * MaxDBFrameBytes
)

// FrameLimit returns the size class of frameType in bytes: 8 MiB for
// the db pair, MaxNetFrameBytes for the net pair and 256 KiB for every
// other type, unknown ones included.
func FrameLimit(frameType string) int {
	switch frameType {
	case TypeDBRequest, TypeDBResponse:
		return MaxDBFrameBytes
	case TypeNetRequest, TypeNetResponse:
		return MaxNetFrameBytes
	}
	return MaxFrameBytes
}

// A Frame is one of the thirteen frame types. Every Frame marshals to JSON
// with its type and v: 1; use Encode to get its exact wire bytes.
type Frame interface {
	FrameType() string
}

// scanFrame checks that raw is UTF-8 JSON text holding one object and
// returns its members. A frame that fails here is never answered: without
// an object there is no requestId to answer.
func scanFrame(raw []byte, buf []member, typ string, code errcode.Code) ([]member, *ParseError) {
	if !utf8.Valid(raw) {
		return nil, &ParseError{Code: code, Type: typ, Message: "frame is not UTF-8"}
	}
	ms, err := scanObject(raw, buf)
	if err != nil {
		return nil, &ParseError{Code: code, Type: typ, Message: "frame is not a JSON object"}
	}
	return ms, nil
}

// oversize is the error for a frame over its size class. The requestId is
// still recovered from the members, so the sender hears why.
func oversize(typ string, ms []member) *ParseError {
	d := decoder{typ: typ, code: shapeCode(typ)}
	for _, m := range ms {
		if string(m.key) == "requestId" {
			d.offerRequestID(m)
		}
	}
	return &ParseError{Code: d.code, Type: typ, RequestID: d.recovered(), Message: fmt.Sprintf("frame exceeds %d bytes", FrameLimit(typ))}
}

// shapeCode is the code a shape failure of typ answers with:
// net-request shape failures are NET_INVALID_REQUEST. The registry has no
// shape code for the other frames, so they answer HOST_ERROR, which is how
// a receiver renders the unregistered MALFORMED anyway.
func shapeCode(typ string) errcode.Code {
	if typ == TypeNetRequest {
		return errcode.NetInvalidRequest
	}
	return errcode.HostError
}

// Encode validates f and returns its wire bytes: compact JSON, HTML
// characters unescaped (so the size class measures what is sent), with
// type and v: 1. A frame over its size class is an error, except a
// NetResponse, which becomes the NET_SIZE_EXCEEDED answer to the same
// request (never a silent drop); EncodeNetResponse says when it did.
func Encode(f Frame) ([]byte, error) {
	if r, ok := f.(NetResponse); ok {
		b, _, err := EncodeNetResponse(r)
		return b, err
	}
	s, b, err := encode(f)
	if err != nil {
		return nil, err
	}
	if len(b) > FrameLimit(s.FrameType()) {
		return nil, fmt.Errorf("encode %s: frame is %d bytes, over its %d-byte size class", s.FrameType(), len(b), FrameLimit(s.FrameType()))
	}
	return b, nil
}

// EncodeNetResponse encodes r as Encode does. When r is over the net
// size class, b is instead the NET_SIZE_EXCEEDED answer to the same
// request and replaced is true, so the caller records the refusal
// without reading the bytes.
//
// It writes the frame with appendNetResponse (byte for byte what
// MarshalJSON writes, without encoding/json's reflection and second
// buffer) into one buffer sized for the body: the frame outlives the call
// (the API writes it after the executor has journaled the request), so
// the buffer is the answer's own rather than a pooled one.
func EncodeNetResponse(r NetResponse) (b []byte, replaced bool, err error) {
	return AppendNetResponse(nil, r)
}

// AppendNetResponse is EncodeNetResponse appending to dst (a reused
// buffer's dst[:0], say): the frame is dst[len(dst):] of the result, in
// dst's own array when it has the room. A replaced or refused frame is
// never in dst's array.
func AppendNetResponse(dst []byte, r NetResponse) (b []byte, replaced bool, err error) {
	if err := r.Validate(); err != nil {
		return nil, false, err
	}
	b = appendNetResponse(dst, r)[len(dst):]
	if len(b) <= FrameLimit(TypeNetResponse) {
		return b, false, nil
	}
	b, err = NetErrorResponse(r.RequestID, r.URL, errcode.New(errcode.NetSizeExceeded, "the response exceeds the net frame size class")).MarshalJSON()
	return b, err == nil, err
}

// A sendable frame is one this package sends: it validates itself and
// writes its own compact, unescaped JSON (sparing encoding/json a second
// pass over the bytes). No non-spec type is minted.
type sendable interface {
	Frame
	json.Marshaler
	Validate() error
}

// The frame types this package sends: the net pair.
var (
	_ sendable = NetRequest{}
	_ sendable = NetResponse{}
)

// encode validates f and marshals it, whatever its size.
func encode(f Frame) (sendable, []byte, error) {
	s, ok := f.(sendable)
	if !ok {
		return nil, nil, fmt.Errorf("encode %s: not a frame this package sends", f.FrameType())
	}
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	b, err := s.MarshalJSON()
	if err != nil {
		return nil, nil, err
	}
	return s, b, nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
