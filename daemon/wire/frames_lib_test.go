package wire

import (
	"strings"
	"time"

	"github.com/snug/snugd/daemon/errcode"
)

// Moved from frames.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

// ProtocolVersions returns the versions this package speaks, for
// snug:host-ready.protocolVersions (R1).
func ProtocolVersions() []int { return []int{protocolVersion} }

// ThreadConflictBackoff returns the delays before the retries of a turn
// that met THREAD_CONFLICT (R6): 100, 250 and 500 ms.
func ThreadConflictBackoff() []time.Duration {
	return []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond}
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

// Ignored is what Parse returns for a frame with a valid v whose snug:*
// type this package does not know. R2: the caller drops it silently; it is
// not an error and is never answered.
type Ignored struct {
	Type string
}
