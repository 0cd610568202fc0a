package wire

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/snug/snugd/daemon/errcode"
)

// TestFilterResponseHeaders: only the whitelist crosses, matched on the
// lowercased name; set-cookie never does.
//
// conformance: P1-NET3-13, P1-NET3-14
func TestFilterResponseHeaders(t *testing.T) {
	h := http.Header{}
	h.Add("Content-Type", "application/json")
	h.Add("Content-Length", "42")
	h.Add("Cache-Control", "no-store")
	h.Add("ETag", `"v1"`)
	h.Add("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
	h.Add("Retry-After", "30")
	h.Add("Link", "<https://api.example.com/p2>; rel=next")
	h.Add("Link", "<https://api.example.com/p9>; rel=last")
	h.Add("X-RateLimit-Remaining", "9")
	h.Add("X-Ratelimit-Reset", "60")
	h.Add("X-Foo", "bar")
	h.Add("Set-Cookie", "session=secret")
	h.Add("Set-Cookie2", "a=b")
	h.Add("WWW-Authenticate", "Bearer")
	h.Add("Authorization", "Bearer leaked")
	h.Add("Location", "https://elsewhere.example/")
	h.Add("X-Ratelimit", "no glob match without the dash")
	h["x-ratelimit-limit"] = []string{"100"} // a non-canonical key, as a helper transport might build
	h.Add("Cache-Control", "bad\r\nvalue")   // a value that cannot be a header is dropped

	got := FilterResponseHeaders(h)
	want := map[string]string{
		"content-type":          "application/json",
		"content-length":        "42",
		"cache-control":         "no-store",
		"etag":                  `"v1"`,
		"last-modified":         "Mon, 02 Jan 2006 15:04:05 GMT",
		"retry-after":           "30",
		"link":                  "<https://api.example.com/p2>; rel=next, <https://api.example.com/p9>; rel=last",
		"x-ratelimit-remaining": "9",
		"x-ratelimit-reset":     "60",
		"x-ratelimit-limit":     "100",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FilterResponseHeaders() = %v\nwant %v", got, want)
	}
	if _, ok := got["set-cookie"]; ok {
		t.Error("set-cookie crossed")
	}
	for _, name := range []string{"content-type", "content-length", "cache-control", "etag", "last-modified", "retry-after", "link", "x-ratelimit-*"} { // the whole whitelist
		probe := strings.ReplaceAll(name, "*", "used")
		if !AllowedResponseHeader(probe) || !AllowedResponseHeader(strings.ToUpper(probe)) {
			t.Errorf("AllowedResponseHeader(%q) = false, want true", probe)
		}
	}
	for _, name := range []string{"set-cookie", "Set-Cookie", "x-foo", "x-ratelimit", "content-typ", "content-types", "location", "authorization"} {
		if AllowedResponseHeader(name) {
			t.Errorf("AllowedResponseHeader(%q) = true, want false", name)
		}
	}
}

// TestNewNetResponseText: the builder filters, recomputes content-length
// (ruling R21), and refuses what may not pass.
//
// conformance: P1-NET3-11, P1-NET3-12, P1-NET3-13, P1-NET3-14
func TestNewNetResponseText(t *testing.T) {
	h := http.Header{"Content-Type": {"text/plain"}, "Content-Length": {"999"}, "Set-Cookie": {"s=1"}, "X-Debug": {"1"}}
	r, err := NewNetResponseText("r1", "snug-connection://hue/x", 200, h, ValidText("héllo"))
	if err != nil {
		t.Fatal(err)
	}
	want := NetResponse{RequestID: "r1", Status: 200, Headers: map[string]string{"content-type": "text/plain", "content-length": "6"}, Body: "héllo", URL: "snug-connection://hue/x"}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("NewNetResponseText() = %+v, want %+v", r, want)
	}
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	wantFrame := `{"type":"snug:net-response","v":1,"requestId":"r1","ok":true,"status":200,"headers":{"content-length":"6","content-type":"text/plain"},"body":"héllo","url":"snug-connection://hue/x"}`
	if string(b) != wantFrame {
		t.Errorf("Encode(r) = %s, want %s", b, wantFrame)
	}

	invalid, err := NewNetResponseText("r1", "", 200, nil, ValidText("a\xffb"))
	if err != nil || invalid.Body != "a\uFFFDb" || invalid.Headers == nil {
		t.Errorf("NewNetResponseText(invalid UTF-8) = %+v, %v, want the body as valid UTF-8 and empty headers", invalid, err)
	}

	for _, status := range []int{0, 99, 600, 999, -1} {
		_, err := NewNetResponseText("r1", "", status, nil, ValidText(""))
		if !errors.Is(err, errcode.NetFetchFailed) {
			t.Errorf("NewNetResponseText(status %d) = %v, want NET_FETCH_FAILED", status, err)
		}
	}
	for _, status := range []int{100, 204, 301, 404, 599} {
		if _, err := NewNetResponseText("r1", "", status, nil, ValidText("")); err != nil {
			t.Errorf("NewNetResponseText(status %d) = %v, want nil", status, err)
		}
	}
	_, err = NewNetResponseText("r1", "", 200, nil, ValidText(strings.Repeat("x", MaxNetResponseBody+1)))
	if !errors.Is(err, errcode.NetSizeExceeded) {
		t.Errorf("NewNetResponseText(1 MiB + 1 body) = %v, want NET_SIZE_EXCEEDED", err)
	}
	if _, err := NewNetResponseText("r1", "", 200, nil, ValidText(strings.Repeat("x", MaxNetResponseBody))); err != nil {
		t.Errorf("NewNetResponseText(1 MiB body) = %v, want nil", err)
	}
}

// TestValidText: a Text is valid UTF-8 whoever made it (each run of
// invalid bytes one U+FFFD, a valid string not copied, the zero Text
// empty).
func TestValidText(t *testing.T) {
	for in, want := range map[string]string{"": "", "héllo": "héllo", "a\xffb": "a\uFFFDb", "\xff\xfe\xfd": "\uFFFD", "x\xe2\x82": "x\uFFFD", "\xed\xa0\x80": "\uFFFD"} {
		if got := ValidText(in).String(); got != want {
			t.Errorf("ValidText(%q) = %q, want %q", in, got, want)
		}
	}
	if (Text{}).String() != "" {
		t.Errorf("the zero Text is not empty")
	}
	long := strings.Repeat("0123456789abcdef", 4096)
	if got := ValidText(long).String(); unsafe.StringData(got) != unsafe.StringData(long) {
		t.Errorf("ValidText copied a valid string")
	}
}

// TestEncodeOversizedNetResponse: an answer over the net class becomes a
// terminal NET_SIZE_EXCEEDED for the same request, never a silent drop.
//
// conformance: P1-R6-04, P1-R6-03
func TestEncodeOversizedNetResponse(t *testing.T) {
	// 1 MiB of quotes escapes to 2 MiB of JSON.
	r, err := NewNetResponseText("r9", "https://api.example.com/x", 200, nil, ValidText(strings.Repeat(`"`, MaxNetResponseBody)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeMap(t, b)
	e, _ := got["error"].(map[string]any)
	if _, hasBody := got["body"]; got["requestId"] != "r9" || got["ok"] != false || e["code"] != string(errcode.NetSizeExceeded) || hasBody {
		t.Errorf("Encode(oversized) = %s, want the NET_SIZE_EXCEEDED answer to r9", b)
	}
	// EncodeNetResponse says so, with the same bytes; a frame that fits is
	// not replaced, even one whose requestId spells "ok":false.
	b2, replaced, err := EncodeNetResponse(r)
	if err != nil || !replaced || string(b2) != string(b) {
		t.Errorf("EncodeNetResponse(oversized) = %s, %t, %v; want Encode's bytes, replaced", b2, replaced, err)
	}
	small, _ := NewNetResponseText(`"ok":false`, "", 200, nil, ValidText(""))
	if b, replaced, err := EncodeNetResponse(small); err != nil || replaced || !strings.Contains(string(b), `"status":200`) {
		t.Errorf("EncodeNetResponse(small) = %s, %t, %v; want it as it is", b, replaced, err)
	}
	// HTML characters are not escaped: a body of '<' stays the size it is.
	r, _ = NewNetResponseText("r9", "", 200, nil, ValidText(strings.Repeat("<", MaxNetResponseBody)))
	b, _ = Encode(r)
	if len(b) > MaxNetFrameBytes || strings.Contains(string(b), `\u003c`) {
		t.Errorf("Encode(1 MiB of '<') is %d bytes (escaped: %t), want it to fit unescaped", len(b), strings.Contains(string(b), `\u003c`))
	}
}

// TestNetErrorResponse: error envelopes always carry code, message and
// retryable; reserved and unknown codes are never emitted; the wrapped
// cause never reaches the app.
//
// conformance: P1-NET3-12, P1-R5-02, P1-R5-03
func TestNetErrorResponse(t *testing.T) {
	cause := errors.New("dial 10.0.0.5:443: token sk-secret rejected")
	tests := []struct {
		name      string
		err       error
		code      errcode.Code
		msg       string
		retryable bool
	}{
		{"coded error", errcode.Wrap(errcode.NetFetchFailed, "the upstream could not be reached", cause), errcode.NetFetchFailed, "the upstream could not be reached", true},
		{"bare code", errcode.NetHostBlocked, errcode.NetHostBlocked, "approved connections exist but none has the host in its ceiling", false},
		{"reserved code", errcode.New(errcode.NetScrubbedHeaderStripped, "stripped"), errcode.HostError, "stripped", true},
		{"bare reserved code", errcode.AuthRequired, errcode.HostError, "the host failed for a reason of its own; also how unknown codes render", true},
		{"unknown code", errcode.New("NET_SOMETHING", "x"), errcode.HostError, "x", true},
		{"no code", cause, errcode.HostError, "the host failed for a reason of its own; also how unknown codes render", true},
		{"parse error", &ParseError{Code: errcode.NetInvalidRequest, Message: "method must be one of …", RequestID: "r1"}, errcode.NetInvalidRequest, "method must be one of …", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NetErrorResponse("r1", "https://api.example.com/x", tc.err)
			if r.Error.Code != tc.code || r.Error.Message != tc.msg || r.Error.Retryable != tc.retryable {
				t.Errorf("NetErrorResponse(%v).Error = %+v, want {%s %q %t}", tc.err, *r.Error, tc.code, tc.msg, tc.retryable)
			}
			b, err := Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "sk-secret") || strings.Contains(string(b), "10.0.0.5") {
				t.Errorf("encoded error %s leaks the cause", b)
			}
			e := decodeMap(t, b)["error"].(map[string]any)
			for _, k := range []string{"code", "message", "retryable"} {
				if _, ok := e[k]; !ok {
					t.Errorf("encoded error %s lacks %s", b, k)
				}
			}
			if !errcode.Emittable(errcode.Code(e["code"].(string))) {
				t.Errorf("encoded error code %v is not emittable", e["code"])
			}
		})
	}
	reserved := NetResponse{RequestID: "r1", Error: &ErrorBody{Code: errcode.ConsentRequired, Message: "m"}}
	if _, err := Encode(reserved); err == nil {
		t.Error("Encode(net-response with CONSENT_REQUIRED) = nil error, want a refusal (reserved codes are never emitted)")
	}
}

// TestNetResponseShapes: a net-response is exactly one of its two
// shapes, with a status in 100–599 and only whitelisted, lowercase
// header names.
//
// conformance: P1-NET3-11, P1-NET3-12
func TestNetResponseShapes(t *testing.T) {
	for _, r := range []NetResponse{
		{RequestID: "r1", Status: 200, Headers: map[string]string{}},
		{RequestID: "r1", Error: &ErrorBody{Code: errcode.HostError, Message: "m", Retryable: true}},
	} {
		if err := r.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", r, err)
		}
	}
	bad := []NetResponse{
		{RequestID: "r1", Status: 600, Headers: map[string]string{}},
		{RequestID: "r1", Status: 99, Headers: map[string]string{}},
		{RequestID: "r1", Status: 200, Headers: map[string]string{"set-cookie": "a"}},
		{RequestID: "r1", Status: 200, Body: "x", Error: &ErrorBody{Code: errcode.HostError, Message: "m"}},
		{RequestID: "r1", Status: 200, Error: &ErrorBody{Code: errcode.HostError, Message: "m", Retryable: true}},
		{RequestID: "r1", Status: 200, Headers: map[string]string{"Content-Type": "x"}},
		{RequestID: "", Status: 200},
	}
	for _, r := range bad {
		if err := r.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", r)
		}
		if _, err := Encode(r); err == nil {
			t.Errorf("Encode(%+v) = nil error, want the validation error", r)
		}
	}
}

// TestFrameAtItsSizeClass: a frame of exactly its size class is sent as
// it is, one byte more is refused (or, for a net response, replaced).
//
// conformance: P1-R6-04
func TestFrameAtItsSizeClass(t *testing.T) {
	limit := FrameLimit(TypeNetResponse)
	empty, _, err := EncodeNetResponse(mustNetResponse(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	// Quotes escape to two bytes each: k of them and the rest plain bytes.
	k := limit - len(empty) - MaxNetResponseBody
	for _, tc := range []struct {
		quotes   int
		replaced bool
	}{{k, false}, {k + 1, true}} {
		body := strings.Repeat(`"`, tc.quotes) + strings.Repeat("a", MaxNetResponseBody-tc.quotes)
		b, replaced, err := EncodeNetResponse(mustNetResponse(t, body))
		if err != nil || replaced != tc.replaced || !replaced && len(b) != limit+tc.quotes-k {
			t.Errorf("EncodeNetResponse(%d quotes) = %d bytes, replaced %t, %v; want replaced %t at %d bytes", tc.quotes, len(b), replaced, err, tc.replaced, limit)
		}
	}
}

func mustNetResponse(t *testing.T, body string) NetResponse {
	t.Helper()
	r, err := NewNetResponseText("r9", "https://api.example.com/x", 200, nil, ValidText(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNetResponseWithURLStillChecked: a url does not excuse the rest: an
// error answer naming its URL may carry no status, and an over-long url
// is refused.
func TestNetResponseWithURLStillChecked(t *testing.T) {
	for _, r := range []NetResponse{
		{RequestID: "r1", URL: "https://api.example.com/x", Status: 200, Error: &ErrorBody{Code: errcode.NetFetchFailed, Message: "m"}},
		{RequestID: "r1", URL: "https://api.example.com/" + strings.Repeat("x", MaxNetURLChars), Status: 200},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("Validate(%.80v) = nil, want a refusal", r)
		}
	}
}
