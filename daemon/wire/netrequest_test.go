package wire

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
)

func TestParseNetRequestAccepts(t *testing.T) {
	tests := []struct {
		name string
		mods map[string]any
		want NetRequest
	}{
		{"get", nil, NetRequest{RequestID: "r1", InstanceID: "i1", URL: "https://api.example.com/v1/items", Method: "GET"}},
		{"post with headers and body", map[string]any{"method": "POST", "headers": map[string]any{"Content-Type": "application/json", "X-Request-Id": "42"}, "body": `{"a":1}`},
			NetRequest{RequestID: "r1", InstanceID: "i1", URL: "https://api.example.com/v1/items", Method: "POST", Headers: map[string]string{"Content-Type": "application/json", "X-Request-Id": "42"}, Body: `{"a":1}`, HasBody: true}},
		{"empty body on delete", map[string]any{"method": "DELETE", "body": ""},
			NetRequest{RequestID: "r1", InstanceID: "i1", URL: "https://api.example.com/v1/items", Method: "DELETE", HasBody: true}},
		{"empty headers read as none", map[string]any{"headers": map[string]any{}},
			NetRequest{RequestID: "r1", InstanceID: "i1", URL: "https://api.example.com/v1/items", Method: "GET"}},
		{"connection url", map[string]any{"url": "snug-connection://hue/lights/1"},
			NetRequest{RequestID: "r1", InstanceID: "i1", URL: "snug-connection://hue/lights/1", Method: "GET"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustJSON(t, netFrame(tc.mods))
			got, err := ParseNetRequest(raw)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseNetRequest(%s) = %+v, %v, want %+v", raw, got, err, tc.want)
			}
		})
	}
}

// TestParseNetRequestStrict: the key set is exactly {type, v, requestId,
// instanceId, url, method, headers, body}; keys are matched
// exactly, as JavaScript matches them.
//
// conformance: P1-NET3-01, P1-NET3-09
func TestParseNetRequestStrict(t *testing.T) {
	tests := []struct {
		name string
		raw  string
	}{
		{"extra key foo", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET","foo":1}`},
		{"appId seat", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET","appId":"com.victim"}`},
		{"null extra key", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET","credentials":null}`},
		{"key in another case", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","URL":"https://a.example/","method":"GET"}`},
		{"key with trailing space", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url ":"https://a.example/","url":"https://a.example/","method":"GET"}`},
		{"duplicate url", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","url":"https://evil.example/","method":"GET"}`},
		{"duplicate url through an escape", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","\u0075rl":"https://evil.example/","method":"GET"}`},
		{"duplicate method", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET","method":"POST","body":"x"}`},
		{"duplicate type", `{"type":"snug:net-request","type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET"}`},
		{"duplicate header key", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET","headers":{"X-A":"1","X-A":"2"}}`},
		{"wrong type", `{"type":"snug:app-message","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET"}`},
		{"type missing", `{"v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET"}`},
		{"not an object", `["snug:net-request"]`},
		{"trailing data", `{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET"} {}`},
		{"invalid utf-8", "{\"type\":\"snug:net-request\",\"v\":1,\"requestId\":\"r1\",\"instanceId\":\"i1\",\"url\":\"https://a.example/\xff\",\"method\":\"GET\"}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNetRequest([]byte(tc.raw))
			if err == nil {
				t.Fatalf("ParseNetRequest(%s) = %+v, nil, want NET_INVALID_REQUEST", tc.raw, got)
			}
			wantCode(t, tc.name, err, errcode.NetInvalidRequest)
		})
	}
}

// TestParseNetRequestLimits walks every length limit across its
// boundary.
//
// conformance: P1-NET3-02, P1-NET3-03, P1-NET3-04, P1-NET3-05, P1-NET3-06, P1-R6-05
func TestParseNetRequestLimits(t *testing.T) {
	base := "https://e.com/"
	tests := []struct {
		name string
		mods map[string]any
		ok   bool
	}{
		{"url 4096", map[string]any{"url": base + strings.Repeat("a", 4096-len(base))}, true},
		{"url 4097", map[string]any{"url": base + strings.Repeat("a", 4097-len(base))}, false},
		{"url empty", map[string]any{"url": ""}, false},
		{"url 4096 characters of 2 bytes", map[string]any{"url": base + strings.Repeat("é", 4096-len(base))}, true},
		{"method GET", map[string]any{"method": "GET"}, true},
		{"method HEAD", map[string]any{"method": "HEAD"}, true},
		{"method POST", map[string]any{"method": "POST"}, true},
		{"method PUT", map[string]any{"method": "PUT"}, true},
		{"method PATCH", map[string]any{"method": "PATCH"}, true},
		{"method DELETE", map[string]any{"method": "DELETE"}, true},
		{"method OPTIONS", map[string]any{"method": "OPTIONS"}, false},
		{"method TRACE", map[string]any{"method": "TRACE"}, false},
		{"method CONNECT", map[string]any{"method": "CONNECT"}, false},
		{"method lowercase get", map[string]any{"method": "get"}, false},
		{"method Delete", map[string]any{"method": "Delete"}, false},
		{"method with space", map[string]any{"method": "GET "}, false},
		{"header name empty", map[string]any{"headers": map[string]any{"": "v"}}, false},
		{"header name 128", map[string]any{"headers": map[string]any{strings.Repeat("h", 128): "v"}}, true},
		{"header name 129", map[string]any{"headers": map[string]any{strings.Repeat("h", 129): "v"}}, false},
		{"header value empty", map[string]any{"headers": map[string]any{"X-A": ""}}, true},
		{"header value 4096", map[string]any{"headers": map[string]any{"X-A": strings.Repeat("v", 4096)}}, true},
		{"header value 4097", map[string]any{"headers": map[string]any{"X-A": strings.Repeat("v", 4097)}}, false},
		{"header value 4096 characters of 3 bytes", map[string]any{"headers": map[string]any{"X-A": strings.Repeat("€", 4096)}}, true},
		{"header value 4097 characters of 3 bytes", map[string]any{"headers": map[string]any{"X-A": strings.Repeat("€", 4097)}}, false},
		{"body 262144 characters", map[string]any{"method": "POST", "body": strings.Repeat("a", 262144)}, true},
		{"body 262145 characters", map[string]any{"method": "POST", "body": strings.Repeat("a", 262145)}, false},
		{"body 262144 bytes of 2-byte characters", map[string]any{"method": "POST", "body": strings.Repeat("é", 131072)}, true},
		{"body 262146 bytes in 131073 characters", map[string]any{"method": "POST", "body": strings.Repeat("é", 131073)}, false},
		{"body 262147 bytes in 65537 characters", map[string]any{"method": "POST", "body": strings.Repeat("😀", 65536) + "abc"}, false},
		{"requestId 128", map[string]any{"requestId": strings.Repeat("r", 128)}, true},
		{"requestId 129", map[string]any{"requestId": strings.Repeat("r", 129)}, false},
		{"requestId empty", map[string]any{"requestId": ""}, false},
		{"requestId number", map[string]any{"requestId": 7}, false},
		{"instanceId 128", map[string]any{"instanceId": strings.Repeat("i", 128)}, true},
		{"instanceId 129", map[string]any{"instanceId": strings.Repeat("i", 129)}, false},
		{"instanceId missing", map[string]any{"instanceId": nil}, false},
		{"url missing", map[string]any{"url": nil}, false},
		{"method missing", map[string]any{"method": nil}, false},
		{"headers array", map[string]any{"headers": []any{}}, false},
		{"header value number", map[string]any{"headers": map[string]any{"X-A": 1}}, false},
		{"body number", map[string]any{"method": "POST", "body": 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustJSON(t, netFrame(tc.mods))
			got, err := ParseNetRequest(raw)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseNetRequest(%.120s…) = %+v, %v, want ok=%t", raw, got, err, tc.ok)
			}
			if err != nil {
				wantCode(t, tc.name, err, errcode.NetInvalidRequest)
			}
		})
	}
}

// TestParseNetRequestBodyOnGetOrHead: any body on GET or HEAD rejects the
// frame, the empty string included (a browser's fetch throws on it too).
//
// conformance: P1-NET3-07, P1-F2-02
func TestParseNetRequestBodyOnGetOrHead(t *testing.T) {
	for _, m := range []string{"GET", "HEAD"} {
		for _, body := range []string{"x", "", "{}"} {
			name := fmt.Sprintf("%s with body %q", m, body)
			_, err := ParseNetRequest(mustJSON(t, netFrame(map[string]any{"method": m, "body": body})))
			wantCode(t, name, err, errcode.NetInvalidRequest)
		}
	}
	r := NetRequest{RequestID: "r", InstanceID: "i", URL: "https://a.example/", Method: "HEAD", HasBody: true}
	if err := r.Validate(); !errors.Is(err, errcode.NetInvalidRequest) {
		t.Errorf("NetRequest{HEAD, HasBody}.Validate() = %v, want NET_INVALID_REQUEST", err)
	}
}

// TestParseNetRequestStripHeaders: a credential-shaped header makes the
// whole frame malformed (C1), compared after lowercasing and mapping '_'
// to '-', however the name is spelled in JSON.
//
// conformance: P1-NET3-08, P1-F2-02
func TestParseNetRequestStripHeaders(t *testing.T) {
	names := []string{
		"authorization", "Authorization", "AUTHORIZATION", "aUtHoRiZaTiOn",
		"cookie", "Cookie", "COOKIE",
		"set-cookie", "Set-Cookie", "SET-COOKIE", "set_cookie",
		"x-api-key", "X-Api-Key", "X-API-KEY", "X_Api_Key", "x_api_key", "X-Api_Key",
		"proxy-authorization", "Proxy-Authorization", "PROXY_AUTHORIZATION",
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			raw := mustJSON(t, netFrame(map[string]any{"headers": map[string]any{"Accept": "*/*", name: "Bearer sk-live-123"}}))
			_, err := ParseNetRequest(raw)
			pe := wantCode(t, name, err, errcode.NetInvalidRequest)
			if strings.Contains(pe.Message, "sk-live-123") || strings.Contains(pe.Error(), "sk-live-123") {
				t.Errorf("error %q carries the header value", pe.Error())
			}
		})
	}
	escaped := []string{
		`{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET","headers":{"Authoriz\u0061tion":"Bearer x"}}`,
		`{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET","headers":{"\u0043ookie":"a=b"}}`,
	}
	for _, raw := range escaped {
		if _, err := ParseNetRequest([]byte(raw)); !errors.Is(err, errcode.NetInvalidRequest) {
			t.Errorf("ParseNetRequest(%s) = %v, want NET_INVALID_REQUEST", raw, err)
		}
	}
}

// TestParseNetRequestHeaderRules: the rest of the net-request header rules,
// and the names that look like a STRIP name but are not one.
//
// conformance: P1-F2-02
func TestParseNetRequestHeaderRules(t *testing.T) {
	tests := []struct {
		name    string
		headers map[string]any
		ok      bool
	}{
		{"host", map[string]any{"Host": "evil.example"}, false},
		{"content-length", map[string]any{"Content-Length": "5"}, false},
		{"content_length", map[string]any{"Content_Length": "5"}, false},
		{"transfer-encoding", map[string]any{"Transfer-Encoding": "chunked"}, false},
		{"connection", map[string]any{"Connection": "close"}, false},
		{"te", map[string]any{"TE": "trailers"}, false},
		{"trailer", map[string]any{"Trailer": "X"}, false},
		{"upgrade", map[string]any{"Upgrade": "websocket"}, false},
		{"keep-alive", map[string]any{"Keep-Alive": "timeout=5"}, false},
		{"proxy-connection", map[string]any{"Proxy-Connection": "keep-alive"}, false},
		{"proxy-anything", map[string]any{"proxy-x": "1"}, false},
		{"proxy- alone", map[string]any{"Proxy-": "1"}, false},
		{"duplicate by case", map[string]any{"X-A": "1", "x-a": "2"}, false},
		{"duplicate by underscore", map[string]any{"X-A": "1", "X_A": "2"}, false},
		{"space in name", map[string]any{"X A": "1"}, false},
		{"colon in name", map[string]any{"X-A:": "1"}, false},
		{"trailing space in a STRIP name", map[string]any{"Authorization ": "x"}, false},
		{"non-ASCII lookalike", map[string]any{"Authorızation": "x"}, false},
		{"CRLF in value", map[string]any{"X-A": "a\r\nAuthorization: Bearer x"}, false},
		{"LF in value", map[string]any{"X-A": "a\nb"}, false},
		{"CR in value", map[string]any{"X-A": "a\rb"}, false},
		{"NUL in value", map[string]any{"X-A": "a\x00b"}, false},
		{"tab in value", map[string]any{"X-A": "a\tb"}, true},
		{"non-ASCII value", map[string]any{"X-A": "grüße"}, true},
		{"authorization-like names pass", map[string]any{"X-Authorization-Hint": "1", "Cookie-Policy": "strict", "X-Api-Key-Id": "7", "Proxied": "no"}, true},
		{"all tchar", map[string]any{"!#$%&'*+-.^_`|~09AZaz": "1"}, true},
		{"many headers", manyHeaders(100), true},
		{"many headers with a late duplicate", with(manyHeaders(100), "x-h-000", "dup"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := mustJSON(t, netFrame(map[string]any{"headers": tc.headers}))
			got, err := ParseNetRequest(raw)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseNetRequest(headers %v) = %+v, %v, want ok=%t", tc.headers, got, err, tc.ok)
			}
			if err != nil {
				wantCode(t, tc.name, err, errcode.NetInvalidRequest)
			}
		})
	}
}

func manyHeaders(n int) map[string]any {
	h := map[string]any{}
	for i := range n {
		h[fmt.Sprintf("X-H-%03d", i)] = "v"
	}
	return h
}

// TestNetRequestURLInvalidUTF8: a URL the daemon builds is held to the
// same rules as one an app sends; a byte that is not UTF-8 is refused
// like a control character (an app's frame cannot carry one at all).
func TestNetRequestURLInvalidUTF8(t *testing.T) {
	for _, u := range []string{"https://api.example.com/\x80", "https://api.example.com/\xff", "https://api.example.com/\xc3"} {
		r := NetRequest{RequestID: "r1", InstanceID: "i1", URL: u, Method: "GET"}
		if _, err := Encode(r); err == nil {
			t.Errorf("Encode(url %q) = nil error, want a refusal", u)
		}
	}
}

// TestParseNetRequestURL: the net-request URL rules. The scheme is not judged
// here, but the URL must parse.
//
// conformance: P1-F2-02
func TestParseNetRequestURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://api.example.com/x?y=1#z", true},
		{"http://192.168.1.20/api", true},
		{"snug-connection://hue/lights", true},
		{"SNUG-CONNECTION://hue/x", true},
		{"ftp://files.example.com/x", true},
		{"https://[2001:db8::1]:8443/x", true},
		{"https://api.example.com:443/", true},
		{"https://api.example.com:65535/", true},
		{"https://api.example.com:9/", true},
		{"https://api.example.com:8090/", true},
		{"https://bücher.example/", true},
		{"https://api.example.com/%20", true},
		{"https://user:pw@api.example.com/", false},
		{"https://user@api.example.com/", false},
		{"https://@api.example.com/", false},
		{"https://:@api.example.com/", false},
		{`https://api.example.com\@evil.example/`, false},
		{"https://api%2Eexample.com/", false},
		{"https://h%C3%BCst.example/", false},
		{"https://[fe80::1%25eth0]/", false},
		{`https://api.example.com\evil/`, false},
		{"https://api.example.com/a b", false},
		{" https://api.example.com/", false},
		{"https://api.example.com/\t", false},
		{"https://api.exa\nmple.com/", false},
		{"https://api.example.com/\x00", false},
		{"https://api.example.com/\x7f", false},
		{"https://api.example.com/\u0085", false},
		{"https://api.example.com/\u00a0", false},
		{"https://api.example.com/\u202egnp.exe", false},
		{"https://api.example.com/\u200b", false},
		{"https:///x", false},
		{"https:api.example.com", false},
		{"/relative", false},
		{"//api.example.com/x", false},
		{"api.example.com/x", false},
		{"https://:443/", false},
		{"https://api.example.com:0/", false},
		{"https://api.example.com:0443/", false},
		{"https://api.example.com:/", false},
		{"https://api.example.com:65536/", false},
		{"https://api.example.com:99999/", false},
		{"https://api.example.com:+443/", false},
		{"https://[::1/", false},
		{"https://api.example.com/%zz", false},
		{"://x", false},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			raw := mustJSON(t, netFrame(map[string]any{"url": tc.url}))
			got, err := ParseNetRequest(raw)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseNetRequest(url %q) = %+v, %v, want ok=%t", tc.url, got, err, tc.ok)
			}
			if err != nil {
				pe := wantCode(t, tc.url, err, errcode.NetInvalidRequest)
				if strings.Contains(pe.Message, "pw@") || strings.Contains(pe.Message, "example") {
					t.Errorf("message %q echoes the URL", pe.Message)
				}
			}
		})
	}
}

// TestParseNetRequestVersion: v other than 1 is UNSUPPORTED_VERSION, and
// the version is judged before the shape (a v2 frame may have new keys).
//
// conformance: P1-R1-03
func TestParseNetRequestVersion(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		code errcode.Code
	}{
		{"v 2", mustJSON(t, netFrame(map[string]any{"v": 2})), errcode.UnsupportedVersion},
		{"v 0", mustJSON(t, netFrame(map[string]any{"v": 0})), errcode.UnsupportedVersion},
		{"v missing", mustJSON(t, netFrame(map[string]any{"v": nil})), errcode.UnsupportedVersion},
		{"v string", mustJSON(t, netFrame(map[string]any{"v": "1"})), errcode.UnsupportedVersion},
		{"v 1.5", mustJSON(t, netFrame(map[string]any{"v": 1.5})), errcode.UnsupportedVersion},
		{"v 2 with a new key", mustJSON(t, netFrame(map[string]any{"v": 2, "priority": "high"})), errcode.UnsupportedVersion},
		{"v twice, 1 then 2", []byte(`{"type":"snug:net-request","v":1,"v":2,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET"}`), errcode.UnsupportedVersion},
		{"v 1 with a new key", mustJSON(t, netFrame(map[string]any{"priority": "high"})), errcode.NetInvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNetRequest(tc.raw)
			pe := wantCode(t, tc.name, err, tc.code)
			if pe.RequestID != "r1" {
				t.Errorf("RequestID = %q, want %q", pe.RequestID, "r1")
			}
		})
	}
	for _, v := range []string{"1", "1.0", "1e0", "10e-1", "0.1e1"} {
		raw := `{"type":"snug:net-request","v":` + v + `,"requestId":"r1","instanceId":"i1","url":"https://a.example/","method":"GET"}`
		if _, err := ParseNetRequest([]byte(raw)); err != nil {
			t.Errorf("ParseNetRequest(v %s) = %v, want nil (numerically 1, as JSON.parse reads it)", v, err)
		}
	}
}

// TestParseNetRequestRecoversRequestID: a refused frame carries the
// requestId only when it was a plausible string id, and only then may it
// be answered.
//
// conformance: P1-R1-04, P1-R1-05
func TestParseNetRequestRecoversRequestID(t *testing.T) {
	bad := map[string]any{"foo": 1}
	tests := []struct {
		name string
		raw  []byte
		want string
	}{
		{"string id", mustJSON(t, netFrame(with(bad, "requestId", "abc"))), "abc"},
		{"128 characters", mustJSON(t, netFrame(with(bad, "requestId", strings.Repeat("r", 128)))), strings.Repeat("r", 128)},
		{"unicode id", mustJSON(t, netFrame(with(bad, "requestId", "ид-1"))), "ид-1"},
		{"version failure", mustJSON(t, netFrame(map[string]any{"v": 3, "requestId": "abc"})), "abc"},
		{"no id", mustJSON(t, with(netFrame(bad), "requestId", nil)), ""},
		{"numeric id", mustJSON(t, netFrame(with(bad, "requestId", 42))), ""},
		{"null id", []byte(`{"type":"snug:net-request","v":1,"requestId":null,"instanceId":"i1","url":"https://a.example/","method":"GET"}`), ""},
		{"empty id", mustJSON(t, netFrame(with(bad, "requestId", ""))), ""},
		{"129 characters", mustJSON(t, netFrame(with(bad, "requestId", strings.Repeat("r", 129)))), ""},
		{"two ids that disagree", []byte(`{"type":"snug:net-request","v":1,"requestId":"a","requestId":"b","instanceId":"i1","url":"https://a.example/","method":"GET"}`), ""},
		{"not JSON", []byte(`{"requestId":"abc",`), ""},
		{"nested id only", []byte(`{"type":"snug:net-request","v":1,"headers":{"requestId":"abc"},"instanceId":"i1","url":"https://a.example/","method":"GET"}`), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNetRequest(tc.raw)
			pe := parseErr(t, err)
			if pe.RequestID != tc.want {
				t.Errorf("RequestID = %q, want %q", pe.RequestID, tc.want)
			}
			answer, ok := pe.Answer()
			if ok != (tc.want != "") {
				t.Fatalf("Answer() ok = %t, want %t", ok, tc.want != "")
			}
			if !ok {
				return
			}
			resp, isNet := answer.(NetResponse)
			if !isNet || resp.RequestID != tc.want || resp.Error == nil || resp.Error.Code != pe.Code || resp.Error.Retryable {
				t.Errorf("Answer() = %+v, want a non-retryable %s net-response for %q", answer, pe.Code, tc.want)
			}
			if _, err := Encode(answer); err != nil {
				t.Errorf("Encode(Answer()) = %v", err)
			}
		})
	}
}

// TestParseNetRequestFrameSize: the net size class, measured on the bytes
// as received.
//
// conformance: P1-R6-03
func TestParseNetRequestFrameSize(t *testing.T) {
	exact := netFrameOfSize(t, MaxNetFrameBytes)
	if _, err := ParseNetRequest(exact); err != nil {
		t.Errorf("ParseNetRequest(%d bytes) = %v, want nil", len(exact), err)
	}
	over := netFrameOfSize(t, MaxNetFrameBytes+1)
	_, err := ParseNetRequest(over)
	pe := wantCode(t, "1,114,113 bytes", err, errcode.NetInvalidRequest)
	if pe.RequestID != "r1" {
		t.Errorf("oversized frame: RequestID = %q, want %q (recovered)", pe.RequestID, "r1")
	}
	padded := append([]byte(" "), exact...)
	if _, err := ParseNetRequest(padded); err == nil {
		t.Error("ParseNetRequest(valid frame + 1 byte of whitespace over the class) = nil, want an error: size is measured as received")
	}
	if MaxNetFrameBytes != 1_114_112 {
		t.Errorf("MaxNetFrameBytes = %d, want 1,114,112", MaxNetFrameBytes)
	}
}

// netFrameOfSize builds a valid net-request of exactly n bytes, padded
// with distinct headers (a strict frame has no other room).
func netFrameOfSize(t testing.TB, n int) []byte {
	t.Helper()
	h := map[string]any{}
	// Most of the room in one go: each full header is exactly this long.
	full := len(`"X-Pad-0000":"",`) + MaxHeaderValueChars
	bulk := (n - 2*full) / full
	for i := range bulk {
		h[fmt.Sprintf("X-Pad-%04d", i)] = strings.Repeat("p", MaxHeaderValueChars)
	}
	f := mustJSON(t, netFrame(map[string]any{"headers": h}))
	for i := bulk; len(f) < n; i++ {
		name := fmt.Sprintf("X-Pad-%04d", i)
		overhead := len(`,"":""`) + len(name)
		h[name] = strings.Repeat("p", max(0, min(MaxHeaderValueChars, n-len(f)-overhead)))
		f = mustJSON(t, netFrame(map[string]any{"headers": h}))
		if i > bulk && len(f) < n && n-len(f) < len(`,"X-Pad-0000":""`) {
			// Too little room for one more header: shorten this one.
			h[name] = h[name].(string)[:len(h[name].(string))-len(`,"X-Pad-0000":""`)]
			f = mustJSON(t, netFrame(map[string]any{"headers": h}))
		}
	}
	if len(f) != n {
		t.Fatalf("netFrameOfSize(%d) built %d bytes", n, len(f))
	}
	return f
}

// TestCredentialHeader is gate 7's predicate.
//
// conformance: P1-NET3-08
func TestCredentialHeader(t *testing.T) {
	yes := []string{"authorization", "Authorization", "COOKIE", "Set-Cookie", "set_cookie", "X-API-KEY", "X_Api_Key", "Proxy-Authorization", "proxy_authorization"}
	no := []string{"", "auth", "authorization ", " cookie", "cookies", "x-api-keys", "x-apikey", "xapi-key", "proxy-authenticate", "www-authenticate", "Authorızation", "cookie\x00"}
	for _, n := range yes {
		if !CredentialHeader(n) {
			t.Errorf("CredentialHeader(%q) = false, want true", n)
		}
	}
	for _, n := range no {
		if CredentialHeader(n) {
			t.Errorf("CredentialHeader(%q) = true, want false", n)
		}
	}
	for _, n := range []string{"authorization", "cookie", "set-cookie", "x-api-key", "proxy-authorization"} { // STRIP_HEADERS
		if !CredentialHeader(n) {
			t.Errorf("CredentialHeader(%q) = false, want true: it is one of STRIP_HEADERS", n)
		}
	}
	var sink bool
	if got := testing.AllocsPerRun(100, func() { sink = CredentialHeader("Proxy-Authorization") }); got != 0 || !sink {
		t.Errorf("CredentialHeader allocates %v times, want 0", got)
	}
}

// TestNetRequestValidate: a request built in Go meets the same rules.
func TestNetRequestValidate(t *testing.T) {
	ok := NetRequest{RequestID: "r", InstanceID: "i", URL: "https://a.example/", Method: "POST", Headers: map[string]string{"X-A": "1"}, Body: "x", HasBody: true}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate() = %v, want nil", err)
	}
	bad := []NetRequest{
		{RequestID: "r", InstanceID: "i", URL: "https://a.example/", Method: "GET", Headers: map[string]string{"Authorization": "x"}},
		{RequestID: "r", InstanceID: "i", URL: "https://a.example/", Method: "GET", Headers: map[string]string{"X-A": "1", "x-a": "2"}},
		{RequestID: "r", InstanceID: "i", URL: "https://u@a.example/", Method: "GET"},
		{RequestID: "", InstanceID: "i", URL: "https://a.example/", Method: "GET"},
		{RequestID: "r", InstanceID: "i", URL: "https://a.example/", Method: "OPTIONS"},
		{RequestID: "r", InstanceID: "i", URL: "https://a.example/", Method: "POST", Body: strings.Repeat("b", MaxNetRequestBody+1), HasBody: true},
	}
	for _, r := range bad {
		if err := r.Validate(); !errors.Is(err, errcode.NetInvalidRequest) {
			t.Errorf("%+v.Validate() = %v, want NET_INVALID_REQUEST", r, err)
		}
		if _, err := Encode(r); err == nil {
			t.Errorf("Encode(%+v) = nil error, want the validation error", r)
		}
	}
}

// TestSplitAuthority: host and port as Go's URL parser splits them, a
// bracketed IPv6 host kept whole, a ':' with nothing after it still a
// port.
func TestSplitAuthority(t *testing.T) {
	for _, tc := range []struct {
		a, host, port string
		hasPort       bool
	}{
		{"[::1]:8443", "[::1]", "8443", true},
		{"[::1]", "[::1]", "", false},
		{"[::1]x", "[::1]", "", false},
		{"[::1", "[::1", "", false},
		{"[::1]:", "[::1]", "", true},
		{"a.example:443", "a.example", "443", true},
		{"a.example:", "a.example", "", true},
		{":443", "", "443", true},
		{"a.example", "a.example", "", false},
	} {
		host, port, hasPort := splitAuthority(tc.a)
		if host != tc.host || port != tc.port || hasPort != tc.hasPort {
			t.Errorf("splitAuthority(%q) = %q, %q, %t; want %q, %q, %t", tc.a, host, port, hasPort, tc.host, tc.port, tc.hasPort)
		}
	}
}

// TestOversizeRecoversRequestIDWithinBound: an oversized frame of up to
// maxScanBytes is scanned for its requestId; a longer one is not.
func TestOversizeRecoversRequestIDWithinBound(t *testing.T) {
	frame := func(n int) []byte {
		head := `{"type":"snug:net-request","v":1,"requestId":"r1","pad":"`
		return []byte(head + strings.Repeat("a", n-len(head)-2) + `"}`)
	}
	for _, tc := range []struct {
		n    int
		want string
	}{{maxScanBytes, "r1"}, {maxScanBytes + 1, ""}} {
		raw := frame(tc.n)
		if pe := oversizeRaw(TypeNetRequest, raw); len(raw) != tc.n || pe.RequestID != tc.want {
			t.Errorf("oversizeRaw(%d bytes): RequestID = %q, want %q", len(raw), pe.RequestID, tc.want)
		}
	}
}
