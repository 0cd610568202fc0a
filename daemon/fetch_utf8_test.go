package daemon

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/scrub"
)

// TestAnswerUTF8: gate 10 validates an upstream body once, before the
// scrub, and the frame never carries invalid UTF-8: a body with invalid
// bytes (around an echoed credential, and alone) arrives with each run of
// them as U+FFFD and the echo scrubbed, a valid one as it was, short and
// long enough for the scrub's one-pass matcher, and content-length
// matches what is delivered.
//
// conformance: P3-X14-40, P1-SEC-01
func TestAnswerUTF8(t *testing.T) {
	pad := strings.Repeat(`{"id":1,"name":"caf\u00e9"},`, 40<<10/27)
	for _, tc := range []struct{ name, raw string }{
		{"valid", `{"ok":"caf` + "\u00e9" + `"}`},
		{"valid-long", pad},
		{"invalid", "a\xffb\xc3\x28c\xed\xa0\x80d\xe2\x82"},
		{"invalid-long", pad + "\xff\xfe" + pad},
		{"invalid-echo", "\xff" + secretKey + "\xfe\xfd!" + secretKey[:5] + "\xc3"},
		{"invalid-echo-long", pad + "\xe2\x82" + secretKey + "\xff" + pad + secretKey + "\xf0"},
		{"valid-echo-long", pad + secretKey + pad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
			r.up.handle(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(tc.raw)))
				io.WriteString(w, tc.raw)
			})
			res, resp := r.net(t, "app1", frame("GET", "https://api.example.com/v1", nil))
			if res.Code != "" {
				t.Fatalf("Net = %q", res.Code)
			}
			if !utf8.Valid(res.Frame) {
				t.Fatalf("frame is not valid UTF-8")
			}
			want := strings.ReplaceAll(strings.ToValidUTF8(tc.raw, "\uFFFD"), secretKey, scrub.Mark)
			if resp.Body != want {
				t.Errorf("body = %.80q…, want %.80q…", resp.Body, want)
			}
			if got := resp.Headers["content-length"]; got != strconv.Itoa(len(want)) {
				t.Errorf("content-length = %q, want %d", got, len(want))
			}
		})
	}
}
