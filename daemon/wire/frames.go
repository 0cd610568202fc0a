package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
)

// The thirteen frame types of Part I §2.
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
	protocolVersion = 1 // R1: every frame carries v: 1
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

// ProtocolVersions returns the versions this package speaks, for
// snug:host-ready.protocolVersions (R1).
func ProtocolVersions() []int { return []int{protocolVersion} }

// Size classes (R6), measured on the serialized UTF-8 bytes of a frame
// (ruling R3), and Part I's other limits. Lengths in characters count
// Unicode code points, as JSON Schema's maxLength does.
const (
	MaxFrameBytes    = 256 << 10      // every frame but the db and net pairs
	MaxDBFrameBytes  = 8 << 20        // snug:db-request, snug:db-response
	MaxNetFrameBytes = 1<<20 + 64<<10 // MAX_NET_FRAME_BYTES: snug:net-request, snug:net-response
	MaxArtifactBytes = 5 << 20        // a db import artifact, decoded
	MaxRawExcerpt    = 200            // characters of PARSE_FAILED's rawExcerpt
	MaxIDChars       = 128            // requestId, instanceId, appId
	// ParseFailureBudget is how many consecutive agent-reply parse
	// failures a thread may have before the host requires an explicit
	// user reset.
	ParseFailureBudget = 3

	maxAppIDChars       = MaxIDChars
	maxDisplayNameChars = 80
	maxDescriptionChars = 400
	maxIconEmojiChars   = 8
	maxIconColorChars   = 32
	maxActionChars      = 128
	maxEventChars       = 128
	maxCodeChars        = 128
	maxReasonChars      = 300
	maxOpenURLChars     = 2048
	maxSafeInteger      = 1<<53 - 1 // the largest integer a JSON number holds exactly
	maxKnownKeys        = 16        // stack room for a frame's top-level members
	// maxScanBytes bounds the work spent on an oversized frame to recover
	// its requestId: twice the largest class. Larger input is refused
	// unread and never answered.
	maxScanBytes = 2 * MaxDBFrameBytes
)

// ThreadConflictBackoff returns the delays before the retries of a turn
// that met THREAD_CONFLICT (R6): 100, 250 and 500 ms.
func ThreadConflictBackoff() []time.Duration {
	return []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond}
}

// FrameLimit returns the size class of frameType in bytes (R6): 8 MiB for
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

// Ignored is what Parse returns for a frame with a valid v whose snug:*
// type this package does not know. R2: the caller drops it silently; it is
// not an error and is never answered.
type Ignored struct {
	Type string
}

// FrameType returns the unknown type the frame carried.
func (i Ignored) FrameType() string { return i.Type }

// Parse parses one frame of any type: a frame of a known type comes back as
// its Go type (AppMessage, NetRequest, …), a frame with v: 1 and an unknown
// snug:* type as Ignored (R2), and anything else as a *ParseError.
//
// Parse is safe for concurrent use.
func Parse(raw []byte) (Frame, error) {
	if len(raw) > maxScanBytes {
		return nil, &ParseError{Code: errcode.HostError, Message: "frame exceeds every size class"}
	}
	var buf [maxKnownKeys]member
	ms, perr := scanFrame(raw, buf[:0], "", errcode.HostError)
	if perr != nil {
		return nil, perr
	}
	typ, ok := frameType(ms)
	if !ok {
		// Not a snug frame at all, or one whose type cannot be told: it is
		// never answered.
		return nil, &ParseError{Code: errcode.HostError, Message: "frame has no snug:* type"}
	}
	if len(raw) > FrameLimit(typ) {
		return nil, oversize(typ, ms)
	}
	switch typ {
	case TypeAppAnnounce:
		return asFrame(decodeAppAnnounce(ms))
	case TypeHostReady:
		return asFrame(decodeHostReady(ms))
	case TypeAppMessage:
		return asFrame(decodeAppMessage(ms))
	case TypeAppCancel:
		return asFrame(decodeAppCancel(ms))
	case TypeAppResponse:
		return asFrame(decodeAppResponse(ms))
	case TypeDBRequest:
		return asFrame(decodeDBRequest(ms))
	case TypeDBResponse:
		return asFrame(decodeDBResponse(ms))
	case TypeNetRequest:
		return asFrame(decodeNetRequest(ms))
	case TypeNetResponse:
		return asFrame(decodeNetResponse(ms))
	case TypeOpenURLRequest:
		return asFrame(decodeOpenURLRequest(ms))
	case TypeOpenURLResult:
		return asFrame(decodeOpenURLResult(ms))
	case TypeHostEvent:
		return asFrame(decodeHostEvent(ms))
	case TypeAppEvent:
		return asFrame(decodeAppEvent(ms))
	}
	d := decoder{typ: typ, code: errcode.HostError}
	for _, m := range ms {
		d.common(m)
		if string(m.key) == "requestId" {
			d.offerRequestID(m)
		}
	}
	if err := d.versionErr(); err != nil {
		return nil, err
	}
	return Ignored{Type: typ}, nil
}

// asFrame turns a decoder's result into Parse's.
func asFrame[T Frame](f T, err error) (Frame, error) {
	if err != nil {
		return nil, err
	}
	return f, nil
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

// frameType returns the frame's snug:* type. Two type keys that disagree
// leave it unknown.
func frameType(ms []member) (string, bool) {
	typ := ""
	for _, m := range ms {
		if string(m.key) != "type" {
			continue
		}
		if m.kind() != kindString {
			return "", false
		}
		t := stringValue(m.val)
		if typ != "" && t != typ {
			return "", false
		}
		typ = t
	}
	return typ, strings.HasPrefix(typ, typePrefix)
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

// shapeCode is the code a shape failure of typ answers with. Ruling R2:
// net-request shape failures are NET_INVALID_REQUEST. R5's registry has no
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
// request (R6: never a silent drop); EncodeNetResponse says when it did.
// Ignored frames cannot be encoded.
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
// request (R6) and replaced is true, so the caller records the refusal
// without reading the bytes.
//
// It writes the frame with appendNetResponse (byte for byte what
// MarshalJSON writes, without encoding/json's reflection and second
// buffer) into one buffer sized for the body: the frame outlives the call
// (the API writes it after the executor has journaled the request), so
// the buffer is the answer's own rather than a pooled one.
func EncodeNetResponse(r NetResponse) (b []byte, replaced bool, err error) {
	if err := r.Validate(); err != nil {
		return nil, false, err
	}
	b = appendNetResponse(nil, r)
	if len(b) <= FrameLimit(TypeNetResponse) {
		return b, false, nil
	}
	b, err = NetErrorResponse(r.RequestID, r.URL, errcode.New(errcode.NetSizeExceeded, "the response exceeds the net frame size class")).MarshalJSON()
	return b, err == nil, err
}

// A sendable frame is one this package sends: it validates itself and
// writes its own compact, unescaped JSON (sparing encoding/json a second
// pass over the bytes). Ignored is not one: no non-spec type is minted.
type sendable interface {
	Frame
	json.Marshaler
	Validate() error
}

// The thirteen frame types this package sends.
var (
	_ sendable = AppAnnounce{}
	_ sendable = HostReady{}
	_ sendable = AppMessage{}
	_ sendable = AppCancel{}
	_ sendable = AppResponse{}
	_ sendable = DBRequest{}
	_ sendable = DBResponse{}
	_ sendable = NetRequest{}
	_ sendable = NetResponse{}
	_ sendable = OpenURLRequest{}
	_ sendable = OpenURLResult{}
	_ sendable = HostEvent{}
	_ sendable = AppEvent{}
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
