package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/wire"
	"github.com/snug/snugd/daemon/wire/wiretest"
)

// poisonMarker is what every released read and frame buffer holds: the
// pools zero a buffer when it is handed back (transports' body pool,
// fetch's frame pool), so a string or slice that outlived its release
// shows a run of NUL bytes, which no JSON frame, extract, journal row or
// log line of snugd's ever holds raw.
const poisonMarker = 0

// kept is everything one request produced, as its caller holds it, and
// a copy of each taken at once, to compare after later requests.
type kept struct {
	frame, frameCopy []byte // the frame as the API wrote it out
	perr, perrCopy   string // the provider error extract
	code             errcode.Code
	journal, logs    string
	hints            []hints.Hint
}

// TestReleasedBuffersPoisoned: with every released read buffer and frame
// buffer zeroed as the pools do (and the next request reading into those
// buffers), nothing a request produced — its answer as the API writes
// it out, its provider error extract, its refusal, its journal row, its
// log lines, a hint — changes or shows the marker, and a later request
// of the same app is still scrubbed (the scrub cache and the vetted DNS
// answer are intact). An answer with nothing to scrub is encoded from
// the read buffer in place: the test fails when that buffer is released
// before the answer is encoded, or when a frame aliases it.
//
// conformance: P3-X14-40, P1-SEC-01
func TestReleasedBuffersPoisoned(t *testing.T) {
	r := newRig(t)
	const key = "sk_poison_Hq3Lm8Zr2Tv"
	v := apiKeyReq("ex", apiHost)
	v["request"] = map[string]any{"headerTemplate": map[string]any{"X-Key": "{{api_key}}"}}
	r.connect(t, "app1", v, map[string]string{"api_key": key})
	// Bodies above 128 KiB sent chunked (no length), so the transport
	// reads each into a pooled read buffer, and each answer is encoded
	// into a pooled frame buffer.
	pad := func(c string) string { return strings.Repeat(c, 200<<10) }
	r.up.handle(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/v1/fail":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"widget quota exceeded for key `+key+`"},"pad":"`+pad("e")+`"}`)
		case "/v1/clean": // nothing to scrub: the frame is encoded from the read buffer itself
			io.WriteString(w, pad("c"))
		case "/v1/big":
			w.Header().Set("Content-Length", strconv.Itoa(wire.MaxNetResponseBody+1))
			io.WriteString(w, strings.Repeat("g", wire.MaxNetResponseBody+1))
		default:
			io.WriteString(w, pad("b")+" key="+key)
		}
	})
	hs := r.d.Hints(t.Context())
	run := func(path string) kept {
		t.Helper()
		res := r.d.exec.Net(t.Context(), fetch.NetCall{AppID: "app1", Frame: frame("GET", "https://"+apiHost+path, nil), Delivery: fetch.DeliveryApp})
		if !res.Answer {
			t.Fatalf("%s: no answer", path)
		}
		// As api/executor.go does: the frame is written out, then released.
		var out bytes.Buffer
		out.Write(res.Frame)
		k := kept{frame: out.Bytes(), frameCopy: bytes.Clone(out.Bytes()), perr: res.ProviderError, perrCopy: strings.Clone(res.ProviderError), code: res.Code}
		res.Release()
		es, err := r.d.records.Journal(context.Background(), journal.JournalQuery{AppID: "app1", Kind: "requests"})
		if err != nil || len(es) == 0 {
			t.Fatalf("%s: Journal = %d entries, %v", path, len(es), err)
		}
		k.journal = fmt.Sprintf("%#v", es[0])
		k.logs = r.logs.String()
		for drained := false; !drained; {
			select {
			case h := <-hs:
				k.hints = append(k.hints, h)
			case <-time.After(50 * time.Millisecond):
				drained = true
			}
		}
		return k
	}
	a := run("/v1/fail")
	if a.code != "" || !strings.Contains(a.perr, "widget quota exceeded") || strings.Contains(a.perr, key) {
		t.Fatalf("the 400 answer: code %q, provider error %q", a.code, a.perr)
	}
	if resp, err := wiretest.ParseNetResponse(a.frame); err != nil || resp.Status != http.StatusBadRequest || !strings.Contains(resp.Body, "widget quota exceeded for key [scrubbed]") {
		t.Fatalf("the 400 answer's frame: %v, %.120q", err, resp.Body)
	}
	refused := run("/v1/big")
	if refused.code != errcode.NetSizeExceeded {
		t.Fatalf("the oversized answer: code %q, want %q", refused.code, errcode.NetSizeExceeded)
	}
	clean := run("/v1/clean")
	if resp, err := wiretest.ParseNetResponse(clean.frame); err != nil || resp.Body != pad("c") {
		t.Fatalf("the clean answer is not its upstream's (%v, %d bytes)", err, len(resp.Body))
	}
	// B: read into the buffers A and the clean answer released, and
	// released (poisoned) in turn.
	b := run("/v1/ok")
	if resp, err := wiretest.ParseNetResponse(b.frame); err != nil || resp.Body != pad("b")+" key=[scrubbed]" {
		t.Fatalf("the later answer is not its upstream's, scrubbed (%v, %d bytes)", err, len(resp.Body))
	}
	marker := strings.Repeat(string(rune(poisonMarker)), 4)
	for _, k := range []struct {
		name string
		k    kept
	}{{"the 400 answer", a}, {"the refusal", refused}, {"the clean answer", clean}} {
		if !bytes.Equal(k.k.frame, k.k.frameCopy) || bytes.Contains(k.k.frame, []byte(marker)) {
			t.Errorf("%s: the frame changed after later requests", k.name)
		}
		if k.k.perr != k.k.perrCopy || strings.Contains(k.k.perr, marker) {
			t.Errorf("%s: provider error %q, was %q", k.name, k.k.perr, k.k.perrCopy)
		}
		if !strings.HasPrefix(b.logs, k.k.logs) || strings.Contains(k.k.logs, marker) {
			t.Errorf("%s: the log lines changed or show the marker", k.name)
		}
		if strings.Contains(k.k.journal, marker) || strings.Contains(fmt.Sprint(k.k.hints), marker) {
			t.Errorf("%s: the journal row %s or a hint %v shows the marker", k.name, k.k.journal, k.k.hints)
		}
	}
	// The journal rows of A and of the refusal, read again after B.
	es, err := r.d.records.Journal(context.Background(), journal.JournalQuery{AppID: "app1", Kind: "requests"})
	if err != nil || len(es) != 4 {
		t.Fatalf("Journal = %d entries, %v; want 4", len(es), err)
	}
	if got := fmt.Sprintf("%#v", es[1]); got != clean.journal {
		t.Errorf("the clean answer's journal row changed:\n%s\nwas\n%s", got, clean.journal)
	}
	if got := fmt.Sprintf("%#v", es[2]); got != refused.journal {
		t.Errorf("the refusal's journal row changed:\n%s\nwas\n%s", got, refused.journal)
	}
	if got := fmt.Sprintf("%#v", es[3]); got != a.journal {
		t.Errorf("the 400 answer's journal row changed:\n%s\nwas\n%s", got, a.journal)
	}
	if strings.Contains(b.logs, marker) || strings.Contains(b.logs, key) {
		t.Error("the log shows the marker or the key")
	}
}
