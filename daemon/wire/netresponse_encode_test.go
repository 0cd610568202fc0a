package wire

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
)

// encodeCorpus is every string the equality test puts in every string
// field: the escapes encoding/json treats specially, and bodies up to the
// cap.
func encodeCorpus() []string {
	var all strings.Builder
	for c := range 0x80 {
		all.WriteByte(byte(c))
	}
	r := rand.New(rand.NewPCG(5, 6))
	randomBytes := make([]byte, 4096)
	for i := range randomBytes {
		randomBytes[i] = byte(r.Uint32())
	}
	big := strings.Repeat(`{"id":1,"name":"lamp <on> & \"off\"","path":"a\/b"},`, MaxNetResponseBody/52)
	return []string{
		"",
		"plain",
		all.String(),              // every ASCII byte, controls and 0x7f
		"<script>&amp;</script>",  // HTML characters: not escaped
		"line\u2028sep\u2029para", // U+2028/2029: escaped
		"\xff\xfe bad \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80", // invalid UTF-8, surrogate, out of range
		"caf\u00e9 \u65e5\u672c \U0001F600",                   // valid multibyte
		"trailing bad \xe2\x82",
		"\"\\\b\f\n\r\t\x00\x1f",
		string(randomBytes),
		big,
		big[:len(big)-1] + "\xff",
	}
}

// TestAppendNetResponseMatchesMarshalJSON: byte for byte the same as the
// encoding/json encoder, for responses and errors, over the corpus.
func TestAppendNetResponseMatchesMarshalJSON(t *testing.T) {
	corpus := encodeCorpus()
	var frames []NetResponse
	for i, s := range corpus {
		other := corpus[(i+3)%len(corpus)]
		if len(other) > 8192 {
			other = other[:8192]
		}
		frames = append(frames,
			NetResponse{RequestID: other, Status: 200, Body: s},
			NetResponse{RequestID: "r1", Status: 404, Headers: map[string]string{}, Body: s, URL: other},
			NetResponse{RequestID: "r2", Status: 599, Truncated: true, Body: s, URL: "https://api.example.com/x?q=<1>&r=2",
				Headers: map[string]string{"content-type": other, "x-ratelimit-remaining": "5", "etag": s[:min(len(s), 100)], "cache-control": "no-store", "link": "<https://a/b>; rel=\"next\""}},
			NetResponse{RequestID: s[:min(len(s), 200)], Error: &ErrorBody{Code: errcode.NetHostBlocked, Message: other}, URL: s[:min(len(s), 300)]},
			NetResponse{RequestID: "r3", Error: &ErrorBody{Code: errcode.ParseFailed, Message: "m", Retryable: true, RawExcerpt: s[:min(len(s), 500)], AttemptsRemaining: 2}},
			NetResponse{RequestID: "r4", Error: &ErrorBody{Code: errcode.Code(other[:min(len(other), 40)]), Message: s}},
		)
	}
	for i, f := range frames {
		want, err := f.MarshalJSON()
		if err != nil {
			t.Fatalf("frame %d: MarshalJSON = %v", i, err)
		}
		got := appendNetResponse(nil, f)
		if f.Error == nil {
			// The body held as bytes encodes the same, and the frame
			// does not alias them.
			held := f
			held.Body, held.body = "", []byte(f.Body)
			if h := appendNetResponse(nil, held); !bytes.Equal(h, want) {
				t.Errorf("frame %d: the body held as bytes encodes otherwise", i)
			}
		}
		if !bytes.Equal(got, want) {
			j := 0
			for j < min(len(got), len(want)) && got[j] == want[j] {
				j++
			}
			t.Errorf("frame %d differs at byte %d:\n got …%q\nwant …%q", i, j, got[max(0, j-20):min(len(got), j+40)], want[max(0, j-20):min(len(want), j+40)])
		}
		// Appending keeps what dst held.
		if got := appendNetResponse([]byte("prefix"), f); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("frame %d: appending to a prefix changed the output", i)
		}
	}
}

// FuzzAppendJSONString: any string encodes as encoding/json encodes it.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range encodeCorpus() {
		if len(s) < 8192 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := NetResponse{RequestID: "r", Status: 200, Body: s, Headers: map[string]string{s: s}, URL: s}
		want, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got := appendNetResponse(nil, r); !bytes.Equal(got, want) {
			t.Fatalf("appendNetResponse(%q) = %q, want %q", s, got, want)
		}
		r.Body, r.body = "", []byte(s)
		if got := appendNetResponse(nil, r); !bytes.Equal(got, want) {
			t.Fatalf("appendNetResponse(%q held as bytes) = %q, want %q", s, got, want)
		}
		if !utf8.Valid(want) {
			t.Fatalf("encoding/json wrote invalid UTF-8 for %q", s)
		}
	})
}

// BenchmarkAppendNetResponse compares the reflection-free encoder with
// MarshalJSON on a small answer and a 1 MiB one (JSON text, so some bytes
// are escaped).
func BenchmarkAppendNetResponse(b *testing.B) {
	headers := map[string]string{"content-type": "application/json", "content-length": "1048576", "etag": `"abc"`, "x-ratelimit-remaining": "99"}
	for _, tc := range []struct {
		name string
		body string
	}{
		{"small", `{"id":1,"name":"lamp","on":true}`},
		{"1MiB", strings.Repeat(`{"id":1,"name":"lamp \"x\"","path":"a/b"},`, MaxNetResponseBody/41)[:MaxNetResponseBody]},
	} {
		r := NetResponse{RequestID: "req-1", Status: 200, Headers: headers, Body: tc.body, URL: "https://api.example.com/v1/items"}
		b.Run(tc.name+"/append", func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = appendNetResponse(buf[:0], r)
			}
		})
		b.Run(tc.name+"/fresh", func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			b.ReportAllocs()
			for b.Loop() {
				_ = appendNetResponse(nil, r)
			}
		})
		b.Run(tc.name+"/MarshalJSON", func(b *testing.B) {
			b.SetBytes(int64(len(tc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
