package linkdevice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// peer is the helper end of a Client under test, driven by hand.
type peer struct {
	c     *Client
	lines *lineReader // what the client sent
	out   *io.PipeWriter
	runs  chan error
	notes chan Notification
}

func newPeer(t *testing.T) *peer {
	t.Helper()
	toClientR, toClientW := io.Pipe()
	fromClientR, fromClientW := io.Pipe()
	p := &peer{lines: newLineReader(fromClientR, MaxLine), out: toClientW, runs: make(chan error, 1), notes: make(chan Notification, 64)}
	p.c = NewClient(toClientR, fromClientW, ClientOptions{Notify: func(n Notification) { p.notes <- n }})
	go func() { p.runs <- p.c.Run(context.Background()) }()
	t.Cleanup(func() {
		toClientW.Close()
		fromClientR.Close()
		p.c.Close()
	})
	return p
}

// next reads the next message the client sent.
func (p *peer) next(t *testing.T) rpcMessage {
	t.Helper()
	line, err := p.lines.next()
	if err != nil {
		t.Fatalf("read from client: %v", err)
	}
	var m rpcMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("client sent %q: %v", line, err)
	}
	return m
}

func (p *peer) send(line string) { io.WriteString(p.out, line+"\n") }

func TestClientServerRoundTrip(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var notifier *Server
	h := basicHandler(func(ctx context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case MethodVerify:
			tok, err := ParseToken(params)
			if err != nil {
				return nil, err
			}
			if tok != testToken {
				return nil, &RPCError{CodeUnauthorized, "unauthorized"}
			}
			return VerifyResult(Verification{Alive: true, Label: "Pixel"}), nil
		case MethodRequest:
			req, err := ParseRequest(params)
			if err != nil {
				return nil, err
			}
			body := fmt.Sprintf("%s %s %s %s", req.Method, req.PathAndQuery, req.Header.Get("X-Test"), req.Body)
			return ResponseResult(Response{Status: 201, Header: map[string][]string{"content-type": {"text/plain"}}, Body: []byte(body)}), nil
		case MethodLinkStart:
			notifier.Notify(NotifyQR, QR{Payload: "P1", ExpiresAt: time.Date(2026, 12, 1, 10, 0, 20, 0, time.UTC)})
			notifier.Notify(NotifyLinkStatus, LinkStatus{State: LinkQR})
			return PollResult(Poll{State: LinkQR}), nil
		}
		return linkHandler(ctx, method, params)
	})
	notifier = NewServer(inR, outW)
	served := make(chan error, 1)
	go func() { served <- notifier.Serve(context.Background(), h) }()
	notes := make(chan Notification, 8)
	c := NewClient(outR, inW, ClientOptions{Notify: func(n Notification) { notes <- n }})
	go c.Run(context.Background())
	ctx := t.Context()

	if info, err := c.Initialize(ctx, "/tmp/s"); err != nil || info.ProtocolVersion != 1 || info.Name != "fake" {
		t.Fatalf("Initialize = %+v, %v", info, err)
	}
	var wg sync.WaitGroup
	for i := range 12 { // concurrent calls, matched by id
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/v1/x/%d", i)
			resp, err := c.Do(ctx, Request{Method: "POST", PathAndQuery: path, Header: map[string][]string{"X-Test": {"h"}}, Body: []byte("b"), Token: testToken})
			if err != nil || resp.Status != 201 || string(resp.Body) != "POST "+path+" h b" || resp.Header.Get("Content-Type") != "text/plain" {
				t.Errorf("Do(%s) = %+v, %v", path, resp, err)
			}
		}()
	}
	wg.Wait()
	if v, err := c.Verify(ctx, testToken); err != nil || !v.Alive || v.Label != "Pixel" {
		t.Errorf("Verify = %+v, %v", v, err)
	}
	if _, err := c.Verify(ctx, Token{strings.Repeat("B", 43)}); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("Verify(wrong token) = %v, want ErrUnauthorized", err)
	}
	if err := c.StartLink(ctx); err != nil {
		t.Fatal(err)
	}
	if n := <-notes; n.Method != NotifyQR || n.QR.Payload != "P1" || !n.QR.ExpiresAt.Equal(time.Date(2026, 12, 1, 10, 0, 20, 0, time.UTC)) {
		t.Errorf("notification = %+v", n)
	}
	if n := <-notes; n.Method != NotifyLinkStatus || n.Status.State != LinkQR {
		t.Errorf("notification = %+v", n)
	}
	if err := c.call(ctx, "no.such", struct{}{}, nil); !isCode(err, CodeMethodNotFound) {
		t.Errorf("unknown method = %v, want -32601", err)
	}
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil after shutdown", err)
	}
}

func isCode(err error, code int) bool {
	var re *RPCError
	return errors.As(err, &re) && re.Code == code
}

// Whatever a helper writes, the session ends with a ProtocolError (a fixed
// reason), calls in flight fail, and nothing panics.
func TestClientHostileOutput(t *testing.T) {
	tok := strings.Repeat("Z", 43)
	for _, tc := range []struct {
		name, line, reason string
	}{
		{"garbage", "hello world", "a line is not a JSON-RPC message"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"result":{}}]`, "a line is not a JSON-RPC message"},
		{"no version", `{"id":1,"result":{}}`, "a message lacks jsonrpc 2.0"},
		{"unknown id", `{"jsonrpc":"2.0","id":999,"result":{}}`, "an answer's id was never sent"},
		{"string id", `{"jsonrpc":"2.0","id":"1","result":{}}`, "an answer's id was never sent"},
		{"both result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, "an answer must carry exactly one of result and error"},
		{"a request", `{"jsonrpc":"2.0","id":1,"method":"shell","params":{}}`, "the helper sent a request"},
		{"neither", `{"jsonrpc":"2.0"}`, "a message is neither an answer nor a notification"},
		{"qr control chars", `{"jsonrpc":"2.0","method":"link.qr","params":{"payload":"\u001b[2J","expiresAt":"2026-12-01T10:00:00Z"}}`, "link.qr params are out of bounds"},
		{"qr bad time", `{"jsonrpc":"2.0","method":"link.qr","params":{"payload":"P","expiresAt":"soon"}}`, "link.qr params are out of bounds"},
		{"qr too long", `{"jsonrpc":"2.0","method":"link.qr","params":{"payload":"` + strings.Repeat("A", 513) + `","expiresAt":"2026-12-01T10:00:00Z"}}`, "link.qr params are out of bounds"},
		{"status unknown state", `{"jsonrpc":"2.0","method":"link.status","params":{"state":"pwned"}}`, "link.status params are out of bounds"},
		{"status bidi label", `{"jsonrpc":"2.0","method":"link.status","params":{"state":"linked","label":"a\u202eb"}}`, "link.status params are out of bounds"},
		{"status label with invisible characters", `{"jsonrpc":"2.0","method":"link.status","params":{"state":"linked","label":"Pixel\u200b\ufeff\u2028 8"}}`, "link.status params are out of bounds"},
		{"status label with a hangul filler", `{"jsonrpc":"2.0","method":"link.status","params":{"state":"linked","label":"Pixel 8\u3164"}}`, "link.status params are out of bounds"},
		{"poll label with invisible characters", `{"jsonrpc":"2.0","id":1,"result":{"state":"linked","label":"Pixel\u200b\ufeff\u2028 8"}}`, "a link.poll answer is out of bounds"},
		{"poll label not NFC", `{"jsonrpc":"2.0","id":1,"result":{"state":"linked","label":"Pixe\u0301"}}`, "a link.poll answer is out of bounds"},
		{"token before link", `{"jsonrpc":"2.0","id":1,"result":{"state":"qr","qr":{"payload":"P","expiresAt":"2026-12-01T10:00:00Z"},"token":"` + tok + `"}}`, "a link.poll answer carries a token before the link"},
		{"short token", `{"jsonrpc":"2.0","id":1,"result":{"state":"linked","token":"abc"}}`, "a link.poll answer's token is out of bounds"},
		{"result not an object", `{"jsonrpc":"2.0","id":1,"result":"linked"}`, "an answer's result is malformed"},
		{"oversized line", `{"jsonrpc":"2.0","id":1,"result":{"label":"` + strings.Repeat("A", MaxLine) + `"}}`, "a line exceeds the size limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPeer(t)
			polled := make(chan error, 1)
			go func() { _, err := p.c.PollLink(t.Context()); polled <- err }()
			p.next(t) // the poll is on the wire
			go p.send(tc.line)
			err := <-p.runs
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Reason != tc.reason {
				t.Errorf("Run = %v, want protocol error %q", err, tc.reason)
			}
			if err := <-polled; !errors.Is(err, ErrSessionClosed) {
				t.Errorf("PollLink = %v, want ErrSessionClosed", err)
			}
			if strings.Contains(err.Error(), "pwned") || strings.Contains(fmt.Sprint(err), tok) {
				t.Errorf("error %q repeats helper bytes", err)
			}
		})
	}
}

// An answer to a call its caller abandoned is ignored, and the helper is
// told to cancel it.
func TestClientAbandonedCall(t *testing.T) {
	p := newPeer(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, err := p.c.PollLink(ctx); done <- err }()
	m := p.next(t)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("PollLink = %v, want context.Canceled", err)
	}
	if c := p.next(t); c.Method != MethodCancel || !bytes.Contains(c.Params, []byte(`"id":`+string(*m.ID))) {
		t.Errorf("after cancel the client sent %+v, want cancel of id %s", c, *m.ID)
	}
	p.send(`{"jsonrpc":"2.0","id":` + string(*m.ID) + `,"result":{"state":"idle"}}`)
	go func() { _, err := p.c.PollLink(t.Context()); done <- err }()
	m2 := p.next(t)
	p.send(`{"jsonrpc":"2.0","id":` + string(*m2.ID) + `,"result":{"state":"idle"}}`)
	if err := <-done; err != nil {
		t.Errorf("PollLink after an abandoned answer = %v, want nil", err)
	}
}

// A flood of notifications ends the session; a burst within the limit
// does not.
func TestClientNotificationFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPeer(t)
		note := `{"jsonrpc":"2.0","method":"link.status","params":{"state":"qr"}}`
		for range floodBurst {
			p.send(note)
			<-p.notes
		}
		time.Sleep(time.Second) // refills floodRate
		for range floodRate {
			p.send(note)
			<-p.notes
		}
		go func() {
			for range 1000 {
				if _, err := io.WriteString(p.out, note+"\n"); err != nil {
					return
				}
			}
		}()
		var pe *ProtocolError
		if err := <-p.runs; !errors.As(err, &pe) || pe.Reason != "the helper flooded notifications" {
			t.Errorf("Run = %v, want the flood violation", err)
		}
		p.out.Close()
	})
}

// A body over gate 10's cap is refused without ending the session.
func TestClientResponseTooLarge(t *testing.T) {
	p := newPeer(t)
	done := make(chan error, 1)
	go func() {
		_, err := p.c.Do(t.Context(), Request{Method: "GET", PathAndQuery: "/", Token: testToken})
		done <- err
	}()
	m := p.next(t)
	body, _ := json.Marshal(make([]byte, MaxResponseBody+1))
	p.send(`{"jsonrpc":"2.0","id":` + string(*m.ID) + `,"result":{"status":200,"headers":{},"body":` + string(body) + `}}`)
	if err := <-done; !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("Do = %v, want ErrResponseTooLarge", err)
	}
	if p.c.Err() != nil {
		t.Errorf("session ended: %v", p.c.Err())
	}
}

// Requests outside PROTOCOL.md's bounds never reach the helper.
func TestClientRefusesBadRequests(t *testing.T) {
	p := newPeer(t)
	for _, req := range []Request{
		{Method: "get", PathAndQuery: "/", Token: testToken},
		{Method: "GET", PathAndQuery: "x", Token: testToken},
		{Method: "GET", PathAndQuery: "//evil", Token: testToken},
		{Method: "GET", PathAndQuery: "/a b", Token: testToken},
		{Method: "GET", PathAndQuery: "/", Token: testToken, Header: map[string][]string{"Bad Name": {"v"}}},
		{Method: "GET", PathAndQuery: "/", Token: testToken, Header: map[string][]string{"X": {"a\r\nb"}}},
		{Method: "POST", PathAndQuery: "/", Token: testToken, Body: make([]byte, MaxRequestBody+1)},
		{Method: "GET", PathAndQuery: "/"},
	} {
		if _, err := p.c.Do(t.Context(), req); !errors.Is(err, ErrOutOfBounds) {
			t.Errorf("Do(%+v) = %v, want ErrOutOfBounds", req.PathAndQuery, err)
		}
	}
}

func TestTokenRedacted(t *testing.T) {
	tok, err := NewToken(strings.Repeat("s", 43))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "token", tok)
	js, _ := json.Marshal(struct{ T Token }{tok})
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %s %#v %q", tok, tok, tok, tok), buf.String(), string(js)} {
		if strings.Contains(s, "sss") {
			t.Errorf("token printed as %q", s)
		}
	}
	if tok.Reveal() != strings.Repeat("s", 43) {
		t.Error("Reveal lost the token")
	}
	for _, bad := range []string{"", strings.Repeat("a", 42), strings.Repeat("a", 257), strings.Repeat("a", 42) + "=", strings.Repeat("a", 42) + " "} {
		if _, err := NewToken(bad); err == nil {
			t.Errorf("NewToken(%q) = nil, want an error", bad)
		}
	}
}

func TestLineReader(t *testing.T) {
	in := "a\r\n\n" + strings.Repeat("b", 10) + "\n" + strings.Repeat("c", 11) + "\nlast"
	l := newLineReader(strings.NewReader(in), 10)
	for _, want := range []string{"a", strings.Repeat("b", 10)} {
		got, err := l.next()
		if err != nil || string(got) != want {
			t.Fatalf("next = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := l.next(); !errors.Is(err, errLineTooLong) {
		t.Errorf("next(11 bytes) = %v, want errLineTooLong", err)
	}
}

// TestClientLineAtTheLimit: a request line of exactly MaxLine bytes is
// sent; one byte more is refused before anything is written.
func TestClientLineAtTheLimit(t *testing.T) {
	p := newPeer(t)
	head := `{"jsonrpc":"2.0","id":1,"method":"x.big","params":"`
	pad := MaxLine - len(head) - len(`"}`)
	done := make(chan error, 1)
	go func() { done <- p.c.call(t.Context(), "x.big", strings.Repeat("A", pad), nil) }()
	sent := make(chan int, 1)
	go func() {
		line, err := p.lines.next()
		if err != nil {
			line = nil
		}
		sent <- len(line)
	}()
	select {
	case err := <-done:
		t.Fatalf("call(line of MaxLine bytes) = %v before anything was sent, want it sent", err)
	case n := <-sent:
		if n != MaxLine {
			t.Fatalf("client sent a %d-byte line, want %d", n, MaxLine)
		}
	}
	p.send(`{"jsonrpc":"2.0","id":1,"result":null}`)
	if err := <-done; err != nil {
		t.Fatalf("call(line of MaxLine bytes) = %v, want sent and answered", err)
	}
	err := p.c.call(t.Context(), "x.big", strings.Repeat("A", pad+1), nil)
	if err == nil || !strings.Contains(err.Error(), "exceeds the line limit") {
		t.Fatalf("call(line of MaxLine+1 bytes) = %v, want the line limit", err)
	}
}

// TestLineReaderAtTheLimit: a line of exactly the limit is read, with or
// without "\r\n"; one byte more is too long.
func TestLineReaderAtTheLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" for errLineTooLong
	}{
		{"abcd\n", "abcd"}, {"abcd\r\n", "abcd"}, {"abcd", "abcd"},
		{"abcde\n", ""}, {"abcd\r\r\n", ""}, {"abcde", ""},
	} {
		l := newLineReader(strings.NewReader(tc.in), 4)
		got, err := l.next()
		if tc.want == "" {
			if !errors.Is(err, errLineTooLong) {
				t.Errorf("next(%q) = %q, %v; want errLineTooLong", tc.in, got, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("next(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
