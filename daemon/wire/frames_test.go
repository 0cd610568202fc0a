package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
)

// sampleFrames returns one valid frame of each of the thirteen types.
func sampleFrames(t testing.TB) []Frame {
	t.Helper()
	hint, err := ConnectionEvent("hue")
	if err != nil {
		t.Fatal(err)
	}
	resize, err := Resize(320)
	if err != nil {
		t.Fatal(err)
	}
	return []Frame{
		AppAnnounce{AppID: "com.example.todo", DisplayName: "Todo", Description: "A list", IconEmoji: "📝", IconColor: "#fc0"},
		HostReady{InstanceID: "inst-1", ProtocolVersions: ProtocolVersions(), Capabilities: Capabilities{Streaming: true, DB: true, Auth: false, Net: true}, Theme: json.RawMessage(`"dark"`), Locale: "en"},
		AppMessage{RequestID: "r1", InstanceID: "inst-1", AppID: "com.example.todo", Action: "summarize", Payload: json.RawMessage(`{"n":1}`)},
		AppCancel{RequestID: "r1", InstanceID: "inst-1"},
		AppResponse{RequestID: "r1", OK: true, Data: json.RawMessage(`{"message":"done"}`)},
		DBRequest{RequestID: "r2", InstanceID: "inst-1", Op: DBKVSet, Key: "k", Value: json.RawMessage(`[1]`)},
		DBResponse{RequestID: "r2", Result: json.RawMessage(`null`)},
		NetRequest{RequestID: "r3", InstanceID: "inst-1", URL: "https://api.example.com/x", Method: "POST", Headers: map[string]string{"Content-Type": "application/json"}, Body: "{}", HasBody: true},
		NetResponse{RequestID: "r3", Status: 201, Headers: map[string]string{"etag": `"1"`}, Body: "{}"},
		OpenURLRequest{RequestID: "r4", InstanceID: "inst-1", URL: "https://example.com/help"},
		OpenURLResult{RequestID: "r4", Status: OpenURLDeclined, Reason: "the user said no"},
		hint,
		resize,
	}
}

// TestFrameTypes: exactly the thirteen types of §2, each parsed to its Go
// type, and each Go type encoding with its type and v: 1.
//
// conformance: P1-F2-01, P1-R1-01, P1-R2-03
func TestFrameTypes(t *testing.T) {
	want := []string{"snug:app-announce", "snug:host-ready", "snug:app-message", "snug:app-cancel", "snug:app-response", "snug:db-request", "snug:db-response", "snug:net-request", "snug:net-response", "snug:open-url-request", "snug:open-url-result", "snug:host-event", "snug:app-event"}
	if got := FrameTypes(); !slices.Equal(got, want) {
		t.Errorf("FrameTypes() = %v, want %v", got, want)
	}
	var seen []string
	for _, f := range sampleFrames(t) {
		seen = append(seen, f.FrameType())
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
		back, err := Parse(b)
		if err != nil {
			t.Fatalf("Parse(Encode(%T)) = %v", f, err)
		}
		if reflect.TypeOf(back) != reflect.TypeOf(f) {
			t.Errorf("Parse(Encode(%T)) = %T", f, back)
		}
		again, err := Encode(back)
		if err != nil || string(again) != string(b) {
			t.Errorf("Encode(Parse(Encode(%T))) = %s, %v, want %s", f, again, err, b)
		}
	}
	if !slices.Equal(seen, want) {
		t.Errorf("sample frame types = %v, want %v", seen, want)
	}
	if _, err := Encode(Ignored{Type: "snug:future"}); err == nil {
		t.Error("Encode(Ignored) = nil error, want a refusal: no non-spec type is minted")
	}
}

// TestParseIgnoresUnknownTypes: a valid v and an unknown snug:* type is
// silently ignored, neither an error nor answered.
//
// conformance: P1-R2-01
func TestParseIgnoresUnknownTypes(t *testing.T) {
	for _, raw := range []string{
		`{"v":1,"type":"snug:future"}`,
		`{"v":1,"type":"snug:future","requestId":"r1","anything":[1,2,{"x":null}]}`,
		`{"type":"snug:app-telepathy","v":1.0}`,
	} {
		f, err := Parse([]byte(raw))
		ig, ok := f.(Ignored)
		if err != nil || !ok || !strings.HasPrefix(ig.Type, "snug:") {
			t.Errorf("Parse(%s) = %#v, %v, want Ignored", raw, f, err)
		}
	}
	// The version still counts: an unknown type of another version is an
	// unsupported version, answered only if a requestId was recovered.
	_, err := Parse([]byte(`{"v":2,"type":"snug:future","requestId":"r7"}`))
	pe := wantCode(t, "v2 future", err, errcode.UnsupportedVersion)
	if _, ok := pe.Answer(); ok {
		t.Error("Answer() for an unknown type = true, want false: there is no frame to answer it with")
	}
	// Not a snug frame at all: refused, never answered.
	for _, raw := range []string{`{"v":1,"type":"other","requestId":"r1"}`, `{"v":1,"requestId":"r1"}`, `{"v":1,"type":5,"requestId":"r1"}`, `{"v":1,"type":"snug:a","type":"snug:b"}`, `null`, `[]`, `"snug:app-message"`, ``} {
		_, err := Parse([]byte(raw))
		pe := parseErr(t, err)
		if pe.RequestID != "" {
			t.Errorf("Parse(%s): RequestID = %q, want none", raw, pe.RequestID)
		}
	}
}

// TestParseToleratesUnknownFields: unknown fields on the tolerant frames
// are ignored; only the strict pair rejects them.
//
// conformance: P1-R2-02
func TestParseToleratesUnknownFields(t *testing.T) {
	for _, f := range sampleFrames(t) {
		b, _ := Encode(f)
		extra := []byte(strings.Replace(string(b), `{`, `{"futureField":{"nested":[1]},`, 1))
		_, err := Parse(extra)
		strict := f.FrameType() == TypeNetRequest || f.FrameType() == TypeOpenURLRequest
		if strict != (err != nil) {
			t.Errorf("Parse(%s with an unknown field) = %v, want rejected=%t", f.FrameType(), err, strict)
		}
	}
	raw := `{"type":"snug:db-request","v":1,"requestId":"r1","instanceId":"i","op":"kvGet","key":"k","priority":"high"}`
	f, err := Parse([]byte(raw))
	if err != nil || f.(DBRequest).Key != "k" {
		t.Errorf("Parse(db-request with extra field) = %+v, %v, want it processed", f, err)
	}
}

// TestSizeClasses: 256 KiB by default, 8 MiB for db frames, the net class
// for net frames, measured on the bytes received.
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
	frames := map[string]string{
		TypeHostReady:   `{"type":"snug:host-ready","v":1,"instanceId":"i","protocolVersions":[1],"capabilities":{"streaming":true,"db":true,"auth":true},"theme":"dark","pad":"%s"}`,
		TypeAppMessage:  `{"type":"snug:app-message","v":1,"requestId":"r1","instanceId":"i","appId":"a","action":"x","payload":"%s"}`,
		TypeHostEvent:   `{"type":"snug:host-event","v":1,"event":"connection-event","data":{"slot":"hue","pad":"%s"}}`,
		TypeDBRequest:   `{"type":"snug:db-request","v":1,"requestId":"r1","instanceId":"i","op":"export","pad":"%s"}`,
		TypeDBResponse:  `{"type":"snug:db-response","v":1,"requestId":"r1","ok":true,"result":"%s"}`,
		TypeNetResponse: `{"type":"snug:net-response","v":1,"requestId":"r1","ok":true,"status":200,"headers":{},"body":"%s"}`,
	}
	for typ, tmpl := range frames {
		limit := FrameLimit(typ)
		pad := limit - len(tmpl) + 2
		exact := []byte(strings.Replace(tmpl, "%s", strings.Repeat("p", pad), 1))
		over := []byte(strings.Replace(tmpl, "%s", strings.Repeat("p", pad+1), 1))
		if len(exact) != limit {
			t.Fatalf("%s: built %d bytes, want %d", typ, len(exact), limit)
		}
		if _, err := Parse(exact); err != nil {
			t.Errorf("Parse(%s of %d bytes) = %v, want nil", typ, len(exact), err)
		}
		_, err := Parse(over)
		pe := parseErr(t, err)
		if pe.Type != typ {
			t.Errorf("Parse(%s of %d bytes): Type = %q", typ, len(over), pe.Type)
		}
		// The host-event has no requestId: an oversized one is dropped
		// silently (R7).
		if _, answer := pe.Answer(); answer != (typ == TypeAppMessage || typ == TypeDBRequest) {
			t.Errorf("Parse(%s of %d bytes): Answer() ok = %t", typ, len(over), answer)
		}
	}
	if got := ThreadConflictBackoff(); !slices.Equal(got, []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond}) {
		t.Errorf("ThreadConflictBackoff() = %v", got)
	}
	if _, err := Parse(make([]byte, MaxDBFrameBytes+1)); err == nil {
		t.Error("Parse(8 MiB + 1 of anything) = nil error")
	}
	huge := []byte(`{"type":"snug:db-request","v":1,"requestId":"r1","pad":"` + strings.Repeat("p", maxScanBytes) + `"}`)
	_, err := Parse(huge)
	if pe := parseErr(t, err); pe.RequestID != "" {
		t.Errorf("Parse(frame over %d bytes): RequestID = %q, want none: such a frame is not scanned", maxScanBytes, pe.RequestID)
	}
}

// TestParseErrorAnswers: which frame answers a refused frame.
//
// conformance: P1-R1-04, P1-R1-05
func TestParseErrorAnswers(t *testing.T) {
	tests := []struct {
		raw  string
		want Frame
	}{
		{`{"type":"snug:app-message","v":1,"requestId":"r1","instanceId":"i","appId":"a","action":""}`,
			AppResponse{RequestID: "r1", Error: &ErrorBody{Code: errcode.HostError, Message: "action must be 1–128 characters"}}},
		{`{"type":"snug:app-message","v":9,"requestId":"r1"}`,
			AppResponse{RequestID: "r1", Error: &ErrorBody{Code: errcode.UnsupportedVersion, Message: "v must be 1"}}},
		{`{"type":"snug:db-request","v":1,"requestId":"r1","instanceId":"i","op":"drop"}`,
			DBResponse{RequestID: "r1", Error: &ErrorBody{Code: errcode.HostError, Message: "op must be one of exec, export, import, kvGet, kvSet"}}},
		{`{"type":"snug:open-url-request","v":1,"requestId":"r1","instanceId":"i","url":"http://example.com/"}`,
			OpenURLResult{RequestID: "r1", Status: OpenURLRefused, Reason: "url must be https"}},
		{`{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i","url":"https://a.example/","method":"GET","body":""}`,
			NetResponse{RequestID: "r1", Error: &ErrorBody{Code: errcode.NetInvalidRequest, Message: "a GET request carries no body"}}},
	}
	for _, tc := range tests {
		_, err := Parse([]byte(tc.raw))
		pe := parseErr(t, err)
		got, ok := pe.Answer()
		if !ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%s).Answer() = %#v, %t, want %#v", tc.raw, got, ok, tc.want)
			continue
		}
		if _, err := Encode(got); err != nil {
			t.Errorf("Encode(answer to %s) = %v", tc.raw, err)
		}
	}
	// Frames that are answers themselves are never answered, and neither is
	// a refused cancel: its request already has a terminal frame coming.
	for _, raw := range []string{
		`{"type":"snug:app-cancel","v":1,"requestId":"r1"}`,
		`{"type":"snug:app-response","v":1,"requestId":"r1","ok":true}`,
		`{"type":"snug:net-response","v":1,"requestId":"r1","ok":true}`,
		`{"type":"snug:open-url-result","v":1,"requestId":"r1","status":"x"}`,
	} {
		_, err := Parse([]byte(raw))
		pe := parseErr(t, err)
		if pe.RequestID != "r1" {
			t.Errorf("Parse(%s): RequestID = %q, want r1", raw, pe.RequestID)
		}
		if f, ok := pe.Answer(); ok {
			t.Errorf("Parse(%s).Answer() = %#v, want none", raw, f)
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
