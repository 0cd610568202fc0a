package linkdevice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzClientLine feeds one line of helper output to a Client with calls
// in flight: it must end in nil or a *ProtocolError, never a panic, and a
// delivered notification must be within PROTOCOL.md's bounds.
func FuzzClientLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"state":"linked","label":"P","token":"` + strings.Repeat("A", 43) + `"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"unauthorized"}}`,
		`{"jsonrpc":"2.0","method":"link.qr","params":{"payload":"SNUGSIM1:00","expiresAt":"2026-12-01T10:00:20Z"}}`,
		`{"jsonrpc":"2.0","method":"link.status","params":{"state":"failed","reason":"phone offline"}}`,
		`{"jsonrpc":"2.0","id":99,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"x"}`,
		`{"jsonrpc":"2.0","id":1e400,"result":{}}`,
		`{"jsonrpc":"2.0","id":-1,"result":null}`,
		`[]`, `null`, `{"jsonrpc":"2.0","method":"link.qr","params":[]}`, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got []Notification
		c := NewClient(strings.NewReader(""), io.Discard, ClientOptions{Notify: func(n Notification) { got = append(got, n) }})
		c.refill = time.Now()
		for id := int64(1); id <= 3; id++ {
			c.pending[id] = make(chan rpcMessage, 1)
		}
		c.nextID = 3
		err := c.dispatch(line)
		var pe *ProtocolError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("dispatch = %v, want nil or a ProtocolError", err)
		}
		for _, n := range got {
			if n.Method == NotifyQR && CheckQRPayload(n.QR.Payload) != nil {
				t.Fatalf("delivered an out-of-bounds payload %q", n.QR.Payload)
			}
			if n.Method == NotifyLinkStatus && (!n.Status.State.valid() || checkLabel(n.Status.Label) != nil || hasControl(n.Status.Reason)) {
				t.Fatalf("delivered an out-of-bounds status %+v", n.Status)
			}
		}
	})
}

// FuzzServeInput feeds arbitrary input to the helper side: Serve must
// answer or stop, never panic, and write only JSON lines.
func FuzzServeInput(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersions":[1],"sessionDir":"/x"}}` + "\n",
		`{"jsonrpc":"2.0","method":"cancel","params":{"id":1}}` + "\n" + `{"jsonrpc":"2.0","id":"a","method":"verify","params":{"token":"x"}}`,
		"garbage\n\n\r\n",
		`{"jsonrpc":"2.0","id":{},"method":"shutdown"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		h := basicHandler(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			if _, err := ParseRequest(params); err != nil {
				return nil, err
			}
			return nil, nil
		})
		NewServer(bytes.NewReader(in), &syncWriter{w: &out}).Serve(context.Background(), h)
		for _, l := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
			if len(l) > 0 && l[0] != '{' {
				t.Fatalf("Serve wrote %q", l)
			}
		}
	})
}

// syncWriter serialises the Server's writes for a bytes.Buffer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// FuzzQRPayload: every payload CheckQRPayload admits encodes as a PNG and
// draws in the terminal with half blocks only; every other is refused.
func FuzzQRPayload(f *testing.F) {
	for _, s := range append(qrPayloads, "", "a\x1b[2J", "é", "0123456789", "HELLO WORLD", strings.Repeat("9", 512)) {
		f.Add(s, 80)
	}
	f.Fuzz(func(t *testing.T, p string, width int) {
		if CheckQRPayload(p) != nil {
			if _, err := QRPNG(p); err == nil {
				t.Fatalf("QRPNG(%q) encoded a refused payload", p)
			}
			return
		}
		if raw, err := QRPNG(p); err != nil || !bytes.HasPrefix(raw, []byte("\x89PNG")) {
			t.Fatalf("QRPNG(%q) = %v", p, err)
		}
		var buf bytes.Buffer
		err := RenderQR(&buf, p, width%300)
		var tn *TooNarrowError
		if err != nil && !errors.As(err, &tn) {
			t.Fatalf("RenderQR(%q) = %v", p, err)
		}
		for _, r := range buf.String() {
			if !strings.ContainsRune("█▀▄ \n", r) {
				t.Fatalf("drawing has %q", r)
			}
		}
	})
}

// FuzzSimAPI: the simulator's messaging API answers any path and body
// with a JSON status, never a panic, and sends only a path/body pair
// whose thread ids agree.
func FuzzSimAPI(f *testing.F) {
	f.Add("POST", "/v1/threads/t-bob/messages", []byte(`{"threadId":"t-bob","text":"hi"}`))
	f.Add("POST", "/v1/threads/t-bob/messages", []byte(`{"threadId":"t-alice","text":"hi"}`))
	f.Add("GET", "/v1/threads/%74-bob/messages?x=1", []byte(nil))
	f.Add("GET", "/v1/threads/%zz/messages", []byte(nil))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		s := &simulator{opt: SimOptions{SendLimit: 1000}, session: &simSession{Version: 1, Threads: seedThreads()}, dir: dir, log: slog.New(slog.DiscardHandler)}
		resp := s.serveAPI(Request{Method: method, PathAndQuery: path, Body: body})
		if resp.Status < 200 || resp.Status > 599 {
			t.Fatalf("status %d", resp.Status)
		}
		if resp.Status == 201 && !bytes.Contains(body, []byte("threadId")) {
			t.Fatalf("sent without a threadId: %q", body)
		}
	})
}
