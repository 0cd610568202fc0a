package wire

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/snug/snugd/internal/benchdata"
)

// BenchmarkParseNetRequest measures the parser every app request goes
// through.
func BenchmarkParseNetRequest(b *testing.B) {
	typical := []byte(`{"type":"snug:net-request","v":1,"requestId":"req-01HZX3K9","instanceId":"inst-7f3a","url":"https://api.example.com/v1/items?limit=20&cursor=abc","method":"POST","headers":{"Content-Type":"application/json","Accept":"application/json","X-Request-Id":"7d1c"},"body":"{\"name\":\"milk\",\"qty\":2,\"note\":\"semi-skimmed\"}"}`)
	get := []byte(`{"type":"snug:net-request","v":1,"requestId":"r1","instanceId":"i1","url":"https://api.example.com/v1/me","method":"GET"}`)
	big := mustJSON(b, netFrame(map[string]any{"method": "PUT", "headers": map[string]any{"Content-Type": "text/plain"}, "body": strings.Repeat("lorem ipsum ", MaxNetRequestBody/12)}))
	for _, bc := range []struct {
		name string
		raw  []byte
	}{{"get", get}, {"typical", typical}, {"body-256KiB", big}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseNetRequest(bc.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodeNetResponse measures building and encoding an answer:
// a 2 KiB JSON body, a 1 MiB one (the net body cap) and 1 MiB that
// needs no escape.
func BenchmarkEncodeNetResponse(b *testing.B) {
	h := http.Header{"Content-Type": {"application/json"}, "Content-Length": {"2048"}, "Set-Cookie": {"s=1"}, "X-Ratelimit-Remaining": {"99"}, "Server": {"nginx"}}
	item := `{"id":1,"name":"item"},`
	for _, bc := range []struct {
		name string
		body string
	}{
		{"2KiB", strings.Repeat(item, 90)},
		{"1MiB", strings.Repeat(item, MaxNetResponseBody/len(item))},
		{"1MiB-plain", strings.Repeat("0123456789abcdef", MaxNetResponseBody/16)}, // scripts/bench's /big
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				r, err := NewNetResponseText("req-01HZX3K9", "https://api.example.com/v1/items", 200, h, ValidText(bc.body))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Encode(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// escapeBenchCases are 1 MiB that needs no escape, 1 MiB of JSON text
// with a quote every few bytes (an array of small objects, as an API
// answers), 1 MiB with one every 17 bytes (as dense as a 1 MiB body's
// escapes can be and fit the net frame size class), and 1 MiB of mostly
// non-ASCII text.
func escapeBenchCases() []struct{ name, s string } {
	return []struct{ name, s string }{
		{"plain", strings.Repeat("0123456789abcdef", MaxNetResponseBody/16)},
		{"json", strings.Repeat(`{"id":1,"name":"item"},`, MaxNetResponseBody/23)},
		{"json-sparse", string(benchdata.Readings(MaxNetResponseBody))}, // scripts/bench's /big
		{"utf8", strings.Repeat(`{"名前":"日本語のテキスト","city":"Zürich"},`, MaxNetResponseBody/60)},
	}
}

// BenchmarkAppendJSONString is the encoder's escape alone, into a reused
// buffer, over escapeBenchCases: of a body held as bytes (an answer's,
// escapeASCII and the word loop) and of a string field (the word loop).
func BenchmarkAppendJSONString(b *testing.B) {
	for _, bc := range escapeBenchCases() {
		b.Run(bc.name, func(b *testing.B) {
			src := []byte(bc.s)
			dst := make([]byte, 0, 2*len(bc.s))
			b.SetBytes(int64(len(bc.s)))
			for b.Loop() {
				dst = appendJSONBytes(dst[:0], src)
			}
		})
		b.Run(bc.name+"/string", func(b *testing.B) {
			dst := make([]byte, 0, 2*len(bc.s))
			b.SetBytes(int64(len(bc.s)))
			for b.Loop() {
				dst = appendJSONString(dst[:0], bc.s)
			}
		})
	}
}

// escapeClasses are the input classes the escape is held to against
// encoding/json: ASCII prose, dense JSON (a quote every few bytes), mostly
// CJK text, mostly Cyrillic text, a mix (JSON with CJK and Latin-1
// values), and Latin-1 text read as UTF-8 (invalid: every accented byte
// becomes \ufffd).
var escapeClasses = []struct{ name, unit string }{
	{"ascii", "The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs. "},
	{"json", `{"id":1,"name":"item","tags":["a","b"]},`},
	{"cjk", "日本語のテキストです。東京都の天気は晴れ、気温は二十度でした。"},
	{"cyrillic", "Съешь же ещё этих мягких французских булок, да выпей чаю. "},
	{"mixed", `{"名前":"日本語のテキスト","city":"Zürich","note":"ok"},`},
	{"invalid", "caf\xe9 na\xefve r\xe9sum\xe9 \xe0 la cr\xe8me br\xfbl\xe9e, "},
}

// escapeInput is n bytes of class unit, repeated.
func escapeInput(unit string, n int) string {
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

// BenchmarkEscapeVsEncodingJSON is the escape and encoding/json (an
// Encoder with HTML escaping off, into a reused buffer) on every
// escapeClasses class at 1 KiB, 64 KiB and 1 MiB.
func BenchmarkEscapeVsEncodingJSON(b *testing.B) {
	for _, class := range escapeClasses {
		for _, size := range []struct {
			name string
			n    int
		}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}} {
			s := escapeInput(class.unit, size.n)
			b.Run(class.name+"/"+size.name+"/snugd", func(b *testing.B) {
				src := []byte(s) // as an answer's body is held
				dst := make([]byte, 0, 2*len(s)+16)
				b.SetBytes(int64(len(s)))
				for b.Loop() {
					dst = appendJSONBytes(dst[:0], src)
				}
			})
			b.Run(class.name+"/"+size.name+"/encoding-json", func(b *testing.B) {
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				b.SetBytes(int64(len(s)))
				for b.Loop() {
					buf.Reset()
					if err := enc.Encode(s); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
