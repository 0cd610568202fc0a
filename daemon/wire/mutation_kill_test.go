package wire

import (
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
)

// TestEscapeAfterANonASCIIRune: the run of non-ASCII runes the encoder
// copies as they are, after a first one, stops at each edge of UTF-8's
// ranges exactly where encoding/json does: a second byte just outside
// E0's, ED's, F0's and F4's ranges, U+2028 and U+2029 and their
// neighbours, a sequence cut by the end of the text, a continuation byte
// where a lead should be. Each case is also placed at every alignment
// and behind escapes that use up the room the fast loop has.
func TestEscapeAfterANonASCIIRune(t *testing.T) {
	edges := []string{
		"\xe0\x9f\x80", "\xe0\xa0\x80", "\xe0\x80\x80", "\xe0\xbf\xbf", "\xe0\xc0\x80",
		"\xed\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xed\x7f\x80",
		"\xe1\x7f\x80", "\xe1\x80\x80", "\xe1\xbf\xbf", "\xe1\xc0\x80", "\xe1\x80\x7f", "\xe1\x80\xc0",
		"\xe2\x80\xa7", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaa", "\xe2\x81\xa8",
		"\xc2\x80", "\xc1\xbf", "\xdf\xbf", "\xc2\x7f", "\xc2\xc0", "\x80", "\xbf",
		"\xf0\x8f\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
		"\xe1\x80", "\xe1", "\xc2", "\xf0\x90\x80",
	}
	firsts := []string{"ж", "日", "😀", "é"}
	for _, p := range firsts {
		for _, e := range edges {
			for pad := range 9 {
				for _, tail := range []string{"", "x", "ж", "日本", "\"", strings.Repeat("ж", 40)} {
					s := strings.Repeat("a", pad) + p + e + tail
					checkEscape(t, s)
					checkEscape(t, strings.Repeat("\x01", 20)+s+strings.Repeat("Съешь", 30))
				}
			}
		}
	}
}

// TestIDOfOneCharacter: a requestId of one character is a valid one: the
// error answer to a frame refused for another reason carries it back.
//
// conformance: P1-R1-04
func TestIDOfOneCharacter(t *testing.T) {
	for _, id := range []string{"a", "é"} {
		_, err := ParseNetRequest(mustJSON(t, netFrame(map[string]any{"requestId": id, "method": "BREW"})))
		pe := wantCode(t, "method BREW, requestId "+id, err, errcode.NetInvalidRequest)
		if pe.RequestID != id {
			t.Errorf("requestId %q: the error answers %q, want it recovered", id, pe.RequestID)
		}
	}
	_, err := ParseNetRequest(mustJSON(t, netFrame(map[string]any{"requestId": "", "method": "BREW"})))
	if pe := wantCode(t, "empty requestId", err, errcode.NetInvalidRequest); pe.RequestID != "" {
		t.Errorf("an empty requestId was recovered as %q", pe.RequestID)
	}
}

// TestLengthMessages: a field with a lower bound says its range; one with
// none says its upper bound only.
func TestLengthMessages(t *testing.T) {
	if got := checkLen("requestId", "", 1, 128); got != "requestId must be 1–128 characters" {
		t.Errorf("checkLen(requestId, \"\") = %q", got)
	}
	if got := checkLen("body", "abcd", 0, 3); got != "body must be at most 3 characters" {
		t.Errorf("checkLen(body, abcd) = %q", got)
	}
	if got := checkLen("body", "abc", 0, 3); got != "" {
		t.Errorf("checkLen(body, abc) = %q, want none", got)
	}
}

// TestRateLimitPrefixAlone: the x-ratelimit- prefix is whitelisted with
// whatever follows it, the empty rest included; one character short of
// it is not.
func TestRateLimitPrefixAlone(t *testing.T) {
	for name, want := range map[string]bool{"x-ratelimit-": true, "X-RateLimit-": true, "x-ratelimit-a": true, "x-ratelimit": false, "x-ratelimi": false} {
		if got := AllowedResponseHeader(name); got != want {
			t.Errorf("AllowedResponseHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestStatusBoundaries: a response status is 100–599, both ends included.
func TestStatusBoundaries(t *testing.T) {
	for status, ok := range map[int]bool{99: false, 100: true, 599: true, 600: false} {
		_, _, err := EncodeNetResponse(NetResponse{RequestID: "r1", Status: status})
		if (err == nil) != ok {
			t.Errorf("status %d: EncodeNetResponse error %v, want ok %v", status, err, ok)
		}
	}
}

// TestEncodeNetRequestAtItsSizeClass: a net request whose encoding is
// exactly its size class is encoded; one byte more is refused. (A body
// of control characters, six bytes each escaped, is how a request that
// passes its own limits can outgrow the frame.)
//
// conformance: P1-R6-03
func TestEncodeNetRequestAtItsSizeClass(t *testing.T) {
	base := NetRequest{RequestID: "r1", InstanceID: "i1", URL: "https://api.example.com/x", Method: "POST", HasBody: true}
	empty, err := Encode(base)
	if err != nil {
		t.Fatal(err)
	}
	one := base
	one.Body = "\x01"
	b1, err := Encode(one)
	if err != nil {
		t.Fatal(err)
	}
	per := len(b1) - len(empty) // the escape's bytes
	rest := FrameLimit(TypeNetRequest) - len(empty)
	// k escaped characters and m plain ones: per*k + m == rest, k+m within the body's limit.
	n := MaxNetRequestBody - (rest-MaxNetRequestBody)%(per-1)
	k := (rest - n) / (per - 1)
	body := strings.Repeat("\x01", k) + strings.Repeat("a", n-k)
	r := base
	r.Body = body
	b, err := Encode(r)
	if err != nil || len(b) != FrameLimit(TypeNetRequest) {
		t.Fatalf("a request of exactly the size class: %d bytes, %v; want %d bytes", len(b), err, FrameLimit(TypeNetRequest))
	}
	r.Body = "\x01" + body[:len(body)-1] // one plain byte becomes an escape: per-1 bytes more
	if _, err := Encode(r); err == nil {
		t.Fatal("a request over its size class was encoded")
	}
}
