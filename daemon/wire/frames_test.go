package wire

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
)

// sampleFrames returns one valid frame of each type this package sends.
func sampleFrames() []Frame {
	return []Frame{
		NetRequest{RequestID: "r3", InstanceID: "inst-1", URL: "https://api.example.com/x", Method: "POST", Headers: map[string]string{"Content-Type": "application/json"}, Body: "{}", HasBody: true},
		NetResponse{RequestID: "r3", Status: 201, Headers: map[string]string{"etag": `"1"`}, Body: "{}"},
		NetErrorResponse("r3", "https://api.example.com/x", errcode.New(errcode.NetHostBlocked, "m")),
	}
}

// futureFrame is a frame of a type outside the spec set.
type futureFrame struct{}

func (futureFrame) FrameType() string { return "snug:future" }

// TestFrameTypes: exactly the thirteen frame types, and each frame this
// package sends encodes with its type and v: 1; a net-request parses back
// to itself.
//
// conformance: P1-F2-01, P1-R1-01, P1-R2-03
func TestFrameTypes(t *testing.T) {
	want := []string{"snug:app-announce", "snug:host-ready", "snug:app-message", "snug:app-cancel", "snug:app-response", "snug:db-request", "snug:db-response", "snug:net-request", "snug:net-response", "snug:open-url-request", "snug:open-url-result", "snug:host-event", "snug:app-event"}
	if got := FrameTypes(); !slices.Equal(got, want) {
		t.Errorf("FrameTypes() = %v, want %v", got, want)
	}
	for _, f := range sampleFrames() {
		b, err := Encode(f)
		if err != nil {
			t.Fatalf("Encode(%T) = %v", f, err)
		}
		m := decodeMap(t, b)
		if m["type"] != f.FrameType() || m["v"] != 1.0 {
			t.Errorf("Encode(%T) = %s, want type %s and v 1", f, b, f.FrameType())
		}
		if !strings.HasPrefix(m["type"].(string), "snug:") || !slices.Contains(want, m["type"].(string)) {
			t.Errorf("Encode(%T) minted type %v outside the spec set", f, m["type"])
		}
		if r, ok := f.(NetRequest); ok {
			back, err := ParseNetRequest(b)
			if err != nil || !reflect.DeepEqual(back, r) {
				t.Errorf("ParseNetRequest(Encode(%+v)) = %+v, %v", r, back, err)
			}
		}
	}
	if _, err := Encode(futureFrame{}); err == nil {
		t.Error("Encode(snug:future) = nil error, want a refusal: no non-spec type is minted")
	}
}

// TestSizeClasses: 256 KiB by default, 8 MiB for db frames, the net class
// for net frames; a frame too large to scan is refused unread.
//
// conformance: P1-R6-01, P1-R6-02, P1-R6-03
func TestSizeClasses(t *testing.T) {
	if FrameLimit(TypeHostReady) != 262144 || FrameLimit(TypeAppMessage) != 262144 || FrameLimit(TypeHostEvent) != 262144 || FrameLimit("snug:future") != 262144 {
		t.Error("FrameLimit of the default class is not 256 KiB")
	}
	if FrameLimit(TypeDBRequest) != 8<<20 || FrameLimit(TypeDBResponse) != 8<<20 {
		t.Error("FrameLimit of the db pair is not 8 MiB")
	}
	if FrameLimit(TypeNetRequest) != 1114112 || FrameLimit(TypeNetResponse) != 1114112 {
		t.Error("FrameLimit of the net pair is not 1 MiB + 64 KiB")
	}
	huge := []byte(`{"type":"snug:net-request","v":1,"requestId":"r1","pad":"` + strings.Repeat("p", maxScanBytes) + `"}`)
	_, err := ParseNetRequest(huge)
	if pe := wantCode(t, "frame over the scan bound", err, errcode.NetInvalidRequest); pe.RequestID != "" {
		t.Errorf("ParseNetRequest(frame over %d bytes): RequestID = %q, want none: such a frame is not scanned", maxScanBytes, pe.RequestID)
	}
}

// TestParseErrorAnswers: a refused net-request is answered by a
// net-response error; a refusal of any other type is never answered.
//
// conformance: P1-R1-04, P1-R1-05
func TestParseErrorAnswers(t *testing.T) {
	raw := `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i","url":"https://a.example/","method":"GET","body":""}`
	want := NetResponse{RequestID: "r1", Error: &ErrorBody{Code: errcode.NetInvalidRequest, Message: "a GET request carries no body"}}
	_, err := ParseNetRequest([]byte(raw))
	pe := parseErr(t, err)
	got, ok := pe.Answer()
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseNetRequest(%s).Answer() = %#v, %t, want %#v", raw, got, ok, want)
	} else if _, err := Encode(got); err != nil {
		t.Errorf("Encode(answer to %s) = %v", raw, err)
	}
	for _, typ := range FrameTypes() {
		if typ == TypeNetRequest {
			continue
		}
		pe := &ParseError{Code: errcode.HostError, Type: typ, RequestID: "r1", Message: "m"}
		if f, ok := pe.Answer(); ok {
			t.Errorf("Answer() for a refused %s = %#v, want none", typ, f)
		}
	}
}

func TestParseErrorIs(t *testing.T) {
	_, err := ParseNetRequest([]byte(`{"type":"snug:net-request","v":2,"requestId":"r1"}`))
	if !errors.Is(err, errcode.UnsupportedVersion) || errors.Is(err, errcode.NetInvalidRequest) {
		t.Errorf("errors.Is(%v, …) does not follow the code", err)
	}
	if c, ok := errcode.CodeOf(err); !ok || c != errcode.UnsupportedVersion {
		t.Errorf("errcode.CodeOf(%v) = %s, %t", err, c, ok)
	}
	if got := err.Error(); !strings.HasPrefix(got, "parse snug:net-request: UNSUPPORTED_VERSION: ") {
		t.Errorf("Error() = %q", got)
	}
}
