package wire

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
)

// parseOK parses raw and fails the test on an error.
func parseOK(t *testing.T, raw string) Frame {
	t.Helper()
	f, err := Parse([]byte(raw))
	if err != nil {
		t.Fatalf("Parse(%.200s) = %v", raw, err)
	}
	return f
}

// TestAppAnnounceCaps: the announce strings never exceed their caps.
//
// conformance: P1-F2-03, P1-F2-04, P1-F2-05, P1-F2-06, P1-F2-07
func TestAppAnnounceCaps(t *testing.T) {
	base := map[string]any{"type": "snug:app-announce", "v": 1, "appId": "com.example.todo", "displayName": "Todo"}
	tests := []struct {
		field string
		cap   int
		unit  string
	}{
		{"appId", 128, "a"},
		{"displayName", 80, "d"},
		{"description", 400, "é"},
		{"iconEmoji", 8, "😀"},
		{"iconColor", 32, "c"},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			at := mustJSON(t, with(base, tc.field, strings.Repeat(tc.unit, tc.cap)))
			if _, err := Parse(at); err != nil {
				t.Errorf("Parse(%s of %d characters) = %v, want nil", tc.field, tc.cap, err)
			}
			over := mustJSON(t, with(base, tc.field, strings.Repeat(tc.unit, tc.cap+1)))
			_, err := Parse(over)
			wantCode(t, tc.field, err, errcode.HostError)
		})
	}
	f := parseOK(t, `{"type":"snug:app-announce","v":1,"appId":"a","displayName":"A"}`)
	if a := f.(AppAnnounce); a.Description != "" {
		t.Errorf("absent description parsed as %q", a.Description)
	}
	if err := (AppAnnounce{AppID: "a", DisplayName: strings.Repeat("x", 81)}).Validate(); err == nil {
		t.Error("Validate(81-character displayName) = nil")
	}
}

// TestHostReadyCapabilities: streaming, db and auth are required; net and
// openUrl are optional, and their absence reads as false.
//
// conformance: P1-F2-17, P1-F2-18, P1-R1-06
func TestHostReadyCapabilities(t *testing.T) {
	pre := `{"type":"snug:host-ready","v":1,"instanceId":"i","protocolVersions":[1],"capabilities":{"streaming":true,"db":false,"auth":true},"theme":"light"}`
	h := parseOK(t, pre).(HostReady)
	if h.Capabilities != (Capabilities{Streaming: true, Auth: true}) || !reflect.DeepEqual(h.ProtocolVersions, []int{1}) {
		t.Errorf("Parse(pre-v0.3 host-ready) = %+v", h)
	}
	for _, missing := range []string{"streaming", "db", "auth"} {
		raw := strings.Replace(pre, `"`+missing+`":`, `"x`+missing+`":`, 1)
		_, err := Parse([]byte(raw))
		wantCode(t, "without "+missing, err, errcode.HostError)
	}
	b, _ := Encode(HostReady{InstanceID: "i", ProtocolVersions: ProtocolVersions(), Capabilities: Capabilities{Streaming: true}, Theme: json.RawMessage(`{"mode":"dark"}`)})
	if strings.Contains(string(b), `"net"`) || strings.Contains(string(b), `"openUrl"`) || !strings.Contains(string(b), `"auth":false`) || !strings.Contains(string(b), `"protocolVersions":[1]`) {
		t.Errorf("Encode(host-ready without net/openUrl) = %s, want the flags absent and the three booleans present", b)
	}
	b, _ = Encode(HostReady{InstanceID: "i", ProtocolVersions: []int{1}, Capabilities: Capabilities{Net: true, OpenURL: true}, Theme: json.RawMessage(`"dark"`)})
	if !strings.Contains(string(b), `"net":true`) || !strings.Contains(string(b), `"openUrl":true`) {
		t.Errorf("Encode(host-ready with net/openUrl) = %s", b)
	}
	if err := (HostReady{InstanceID: "i", ProtocolVersions: []int{1}}).Validate(); err == nil {
		t.Error("Validate(host-ready without theme) = nil")
	}
}

// TestAppMessage: requestId, instanceId, appId and action are required;
// action is at most 128 characters.
//
// conformance: P1-F2-10, P1-F2-11
func TestAppMessage(t *testing.T) {
	base := map[string]any{"type": "snug:app-message", "v": 1, "requestId": "r1", "instanceId": "i", "appId": "a", "action": "go", "payload": map[string]any{"x": []any{1}}, "state": "s", "responseSchema": map[string]any{"type": "object"}}
	m := parseOK(t, string(mustJSON(t, base))).(AppMessage)
	if string(m.Payload) != `{"x":[1]}` || string(m.State) != `"s"` || string(m.ResponseSchema) != `{"type":"object"}` {
		t.Errorf("Parse(app-message) = %+v", m)
	}
	for _, k := range []string{"requestId", "instanceId", "appId", "action"} {
		_, err := Parse(mustJSON(t, with(base, k, nil)))
		wantCode(t, "without "+k, err, errcode.HostError)
	}
	if _, err := Parse(mustJSON(t, with(base, "action", strings.Repeat("a", 128)))); err != nil {
		t.Errorf("Parse(128-character action) = %v", err)
	}
	_, err := Parse(mustJSON(t, with(base, "action", strings.Repeat("a", 129))))
	wantCode(t, "129-character action", err, errcode.HostError)
}

// TestAppResponseShapes: exactly one of the three shapes; the terminal
// frames are final and error; mode: 'delta' is never written.
//
// conformance: P1-F2-13, P1-R3-02, P1-R3-04
func TestAppResponseShapes(t *testing.T) {
	streaming := AppResponse{RequestID: "r1", OK: true, Streaming: true, Text: "Hel", Seq: 3}
	final := AppResponse{RequestID: "r1", OK: true, Data: json.RawMessage(`{"message":"Hello"}`)}
	failed := AppErrorResponse("r1", errcode.New(errcode.Superseded, "the app announced again"))
	for _, r := range []AppResponse{streaming, final, failed} {
		b, err := Encode(r)
		if err != nil {
			t.Fatalf("Encode(%+v) = %v", r, err)
		}
		if strings.Contains(string(b), `"mode"`) {
			t.Errorf("Encode(%+v) = %s writes mode", r, b)
		}
		back := parseOK(t, string(b)).(AppResponse)
		if !reflect.DeepEqual(back, r) {
			t.Errorf("Parse(Encode(r)) = %+v, want %+v", back, r)
		}
	}
	if streaming.Terminal() || !final.Terminal() || !failed.Terminal() {
		t.Error("Terminal() does not follow R3")
	}
	if failed.Error.Code != errcode.Superseded || failed.Error.Retryable {
		t.Errorf("AppErrorResponse(SUPERSEDED) = %+v", failed.Error)
	}
	if _, err := Encode(AppResponse{RequestID: "r1", OK: true, Streaming: true, Text: "a", Seq: maxSafeInteger}); err != nil {
		t.Errorf("Encode(streaming, seq 2^53-1) = %v, want nil", err)
	}
	bad := []AppResponse{
		{RequestID: "r1", OK: true, Streaming: true, Text: "a", Seq: maxSafeInteger + 1},
		{RequestID: "r1", OK: true, Streaming: true, Text: "a", Seq: -1},
		{RequestID: "r1", OK: true, Streaming: true, Text: "a", Data: json.RawMessage(`{}`)},
		{RequestID: "r1", OK: true, Text: "a", Data: json.RawMessage(`{}`)},
		{RequestID: "r1", OK: true},
		{RequestID: "r1", OK: true, Data: json.RawMessage(`[1]`)},
		{RequestID: "r1", OK: true, Data: json.RawMessage(`{}`), Error: &ErrorBody{Code: errcode.HostError, Message: "m"}},
		{RequestID: "r1"},
		{RequestID: "r1", Streaming: true, Error: &ErrorBody{Code: errcode.HostError, Message: "m"}},
		{RequestID: "r1", Error: &ErrorBody{Code: errcode.AuthRequired, Message: "m"}},
		{RequestID: "", OK: true, Data: json.RawMessage(`{}`)},
	}
	for _, r := range bad {
		if _, err := Encode(r); err == nil {
			t.Errorf("Encode(%+v) = nil error, want a refusal", r)
		}
	}
}

// TestDBRequestOps: op is one of the five; each op has what it needs.
//
// conformance: P1-F2-14
func TestDBRequestOps(t *testing.T) {
	head := `{"type":"snug:db-request","v":1,"requestId":"r1","instanceId":"i",`
	ok := []string{
		`"op":"exec","sql":"select ?","params":[1]}`,
		`"op":"export"}`,
		`"op":"import","data":"AAEC"}`,
		`"op":"kvGet","key":"k"}`,
		`"op":"kvSet","key":"k","value":false}`,
	}
	for _, tail := range ok {
		parseOK(t, head+tail)
	}
	bad := []string{
		`"op":"drop"}`, `"op":"EXEC","sql":"x"}`, `"op":""}`, `"op":1}`, `"sql":"x"}`,
		`"op":"exec"}`, `"op":"exec","sql":"x","params":"1"}`,
		`"op":"import"}`, `"op":"import","data":"%%%"}`,
		`"op":"kvGet"}`, `"op":"kvSet","key":"k"}`, `"op":"kvSet","value":1}`,
	}
	for _, tail := range bad {
		_, err := Parse([]byte(head + tail))
		wantCode(t, tail, err, errcode.HostError)
	}
	if got := DBOps(); !reflect.DeepEqual(got, []string{"exec", "export", "import", "kvGet", "kvSet"}) {
		t.Errorf("DBOps() = %v", got)
	}
}

// TestDBResponseShapes: a requestId, and an error without a result whose
// code a db-response may carry.
func TestDBResponseShapes(t *testing.T) {
	if _, err := Encode(DBResponse{RequestID: "r1", Result: json.RawMessage(`[1]`)}); err != nil {
		t.Errorf("Encode(result) = %v, want nil", err)
	}
	for _, r := range []DBResponse{
		{RequestID: "", Result: json.RawMessage(`[1]`)},
		{RequestID: "r1", Error: &ErrorBody{Code: errcode.HostError, Message: "m"}, Result: json.RawMessage(`[1]`)},
		{RequestID: "r1", Error: &ErrorBody{Code: errcode.AuthRequired, Message: "m"}},
	} {
		if _, err := Encode(r); err == nil {
			t.Errorf("Encode(%+v) = nil error, want a refusal", r)
		}
	}
}

// TestRecoveredRequestIDLength: a refused frame's requestId is recovered
// from one to MaxIDChars characters, and not past them.
func TestRecoveredRequestIDLength(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want bool
	}{{1, true}, {MaxIDChars, true}, {MaxIDChars + 1, false}} {
		id := strings.Repeat("é", tc.n)
		_, err := Parse([]byte(`{"v":2,"type":"snug:app-message","requestId":"` + id + `"}`))
		pe := parseErr(t, err)
		if got := pe.RequestID == id; got != tc.want {
			t.Errorf("Parse(requestId of %d characters): recovered %q, want recovered %t", tc.n, pe.RequestID, tc.want)
		}
	}
}

// TestArtifactCap: an import artifact is at most 5 MiB decoded.
//
// conformance: P1-R6-07, P1-R6-02
func TestArtifactCap(t *testing.T) {
	at := base64.StdEncoding.EncodeToString(make([]byte, MaxArtifactBytes))
	over := base64.StdEncoding.EncodeToString(make([]byte, MaxArtifactBytes+1))
	head := `{"type":"snug:db-request","v":1,"requestId":"r1","instanceId":"i","op":"import","data":"`
	if _, err := Parse([]byte(head + at + `"}`)); err != nil {
		t.Errorf("Parse(import of 5 MiB) = %v, want nil", err)
	}
	_, err := Parse([]byte(head + over + `"}`))
	pe := wantCode(t, "import of 5 MiB + 1", err, errcode.HostError)
	if _, ok := pe.Answer(); !ok {
		t.Error("Answer() = false, want a db-response error")
	}
	// 6,990,508 base64 characters without padding decode to 5 MiB + 1:
	// the schema's maxLength admits them; the decoded size does not.
	unpadded := strings.Repeat("A", 6990508)
	if p := artifactProblem(unpadded); p == "" {
		t.Error("artifactProblem(6,990,508 characters, 5 MiB + 1 decoded) = \"\", want a problem")
	}
	if p := artifactProblem(strings.Repeat("A", 6990512)); p == "" {
		t.Error("artifactProblem(6,990,512 characters) = \"\", want a problem")
	}
}

// TestOpenURLRequest: strict, https, 1–2048, parses, no userinfo, no
// target or features seat.
//
// conformance: P1-OU4-01, P1-OU4-02, P1-OU4-03, P1-OU4-04, P1-OU4-05, P1-OU4-06
func TestOpenURLRequest(t *testing.T) {
	frame := func(url string, extra string) string {
		u, _ := json.Marshal(url)
		return `{"type":"snug:open-url-request","v":1,"requestId":"r1","instanceId":"i","url":` + string(u) + extra + `}`
	}
	good := []string{"https://example.com/", "HTTPS://example.com/a?b#c", "https://example.com:8443/x", "https://e.com/" + strings.Repeat("a", 2048-len("https://e.com/"))}
	for _, u := range good {
		r, err := ParseOpenURLRequest([]byte(frame(u, "")))
		if err != nil || r.URL != u {
			t.Errorf("ParseOpenURLRequest(%.60q) = %+v, %v", u, r, err)
		}
	}
	bad := []struct{ name, raw string }{
		{"extra key", frame("https://example.com/", `,"foo":1`)},
		{"target", frame("https://example.com/", `,"target":"_blank"`)},
		{"features", frame("https://example.com/", `,"features":"popup,width=1"`)},
		{"navigation", frame("https://example.com/", `,"navigate":true`)},
		{"2049 characters", frame("https://e.com/"+strings.Repeat("a", 2049-len("https://e.com/")), "")},
		{"empty", frame("", "")},
		{"not a url", frame("not a url", "")},
		{"broken", frame("https://[::1/", "")},
		{"http", frame("http://example.com/", "")},
		{"javascript", frame("javascript:alert(1)", "")},
		{"data", frame("data:text/html,<script>x</script>", "")},
		{"file", frame("file:///etc/passwd", "")},
		{"user and password", frame("https://user:pw@host.example/", "")},
		{"user", frame("https://paypal.com@evil.example/", "")},
		{"empty userinfo", frame("https://@example.com/", "")},
		{"backslash userinfo", frame(`https://example.com\@evil.example/`, "")},
		{"bidi", frame("https://example.com/\u202eexe.pdf", "")},
		{"duplicate url", `{"type":"snug:open-url-request","v":1,"requestId":"r1","instanceId":"i","url":"https://example.com/","url":"https://evil.example/"}`},
	}
	for _, tc := range bad {
		_, err := ParseOpenURLRequest([]byte(tc.raw))
		pe := wantCode(t, tc.name, err, errcode.HostError)
		a, ok := pe.Answer()
		if r, isResult := a.(OpenURLResult); !ok || !isResult || r.Status != OpenURLRefused {
			t.Errorf("%s: Answer() = %#v, %t, want an open-url-result refused", tc.name, a, ok)
		}
	}
	_, err := ParseOpenURLRequest([]byte(`{"type":"snug:open-url-request","v":2,"requestId":"r1"}`))
	wantCode(t, "v2", err, errcode.UnsupportedVersion)
}

// TestOpenURLResult: status from the enum, reason at most 300.
//
// conformance: P1-OU4-11
func TestOpenURLResult(t *testing.T) {
	for _, s := range []string{OpenURLOpened, OpenURLDeclined, OpenURLRefused} {
		if err := (OpenURLResult{RequestID: "r", Status: s, Reason: strings.Repeat("r", 300)}).Validate(); err != nil {
			t.Errorf("Validate(status %s) = %v", s, err)
		}
	}
	if err := (OpenURLResult{RequestID: "r", Status: "closed"}).Validate(); err == nil {
		t.Error("Validate(status closed) = nil")
	}
	if err := (OpenURLResult{RequestID: "r", Status: OpenURLRefused, Reason: strings.Repeat("r", 301)}).Validate(); err == nil {
		t.Error("Validate(301-character reason) = nil")
	}
	long := &ParseError{Code: errcode.HostError, Type: TypeOpenURLRequest, RequestID: "r", Message: strings.Repeat("m", 400)}
	a, _ := long.Answer()
	if err := a.(OpenURLResult).Validate(); err != nil {
		t.Errorf("Answer() with a long message: %v, want the reason capped", err)
	}
}
