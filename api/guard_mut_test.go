package api

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestPreflightOfAnUnknownPath: an OPTIONS with an Origin to a path no
// route serves is answered as any request to it is, 404, even from a
// paired origin: only a path some route serves has a preflight.
func TestPreflightOfAnUnknownPath(t *testing.T) {
	e := newEnv(t)
	e.pair("web", webOrigin)
	h := map[string]string{"Origin": webOrigin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}
	resp, body := e.do(req{method: "OPTIONS", path: "/v1/no-such-route", header: h})
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight of an unknown path = %d %v %s, want 404 without CORS headers", resp.StatusCode, resp.Header, body)
	}
}

// TestPlainTextRefusesAControlCharacterAtTheStart: an identifier whose
// first byte is a control character is refused as one in the middle is;
// the index of the first one is 0, which is still a find.
func TestPlainTextRefusesAControlCharacterAtTheStart(t *testing.T) {
	for _, v := range []string{"\x01abc", "ab\x1bc", "abc\x7f", "\u0085x"} {
		if plainText(v) {
			t.Errorf("plainText(%q) = true, want false", v)
		}
	}
	for _, v := range []string{"abc", "ä-b_c.1", ""} {
		if !plainText(v) {
			t.Errorf("plainText(%q) = false, want true", v)
		}
	}
}

// TestRetryAfterRoundsUp: Retry-After is the wait in whole seconds,
// rounded up, so a client that waits what it says is never early.
func TestRetryAfterRoundsUp(t *testing.T) {
	for _, c := range []struct {
		wait time.Duration
		want string
	}{
		{0, "0"},
		{time.Nanosecond, "1"},
		{time.Second, "1"},
		{time.Second + time.Nanosecond, "2"},
		{1500 * time.Millisecond, "2"},
		{2 * time.Second, "2"},
		{90 * time.Second, "90"},
	} {
		w := httptest.NewRecorder()
		a := rateLimitedMsg(w, c.wait, "m")
		if got := w.Header().Get("Retry-After"); got != c.want {
			t.Errorf("wait %v: Retry-After = %q, want %q", c.wait, got, c.want)
		}
		if a.status != http.StatusTooManyRequests {
			t.Errorf("wait %v: status %d, want 429", c.wait, a.status)
		}
	}
}

// deadlineWriter is a ResponseWriter whose connection deadlines are
// recorded, as http.ResponseController finds them; failRead makes the
// read deadline fail as a closed connection's does.
type deadlineWriter struct {
	*httptest.ResponseRecorder
	read, write []time.Time
	failRead    error
}

func (d *deadlineWriter) SetReadDeadline(t time.Time) error {
	d.read = append(d.read, t)
	return d.failRead
}

func (d *deadlineWriter) SetWriteDeadline(t time.Time) error {
	d.write = append(d.write, t)
	return nil
}

// TestDeadlinesPerRouteClass: each class of route sets both deadlines it
// is meant to (a long route's read deadline lifted after its body is
// read, its write deadline longTimeout on; a stream's both lifted; a bulk
// route's both bulkTimeout on), and a deadline that cannot be set fails
// the request rather than leaving the connection on the server's.
func TestDeadlinesPerRouteClass(t *testing.T) {
	ch := &listenerChain{s: &Server{log: slog.New(slog.DiscardHandler)}}
	near := func(got time.Time, d time.Duration) bool {
		want := time.Now().Add(d)
		return !got.IsZero() && got.After(want.Add(-time.Minute)) && !got.After(want)
	}
	for _, c := range []struct {
		class       class
		read, write func(time.Time) bool
	}{
		{quick, nil, func(t time.Time) bool { return near(t, quickTimeout) }},
		{long, time.Time.IsZero, func(t time.Time) bool { return near(t, longTimeout) }},
		{stream, time.Time.IsZero, time.Time.IsZero},
		{bulk, func(t time.Time) bool { return near(t, bulkTimeout) }, func(t time.Time) bool { return near(t, bulkTimeout) }},
	} {
		w := &deadlineWriter{ResponseRecorder: httptest.NewRecorder()}
		r := httptest.NewRequest("POST", "/v1/net", strings.NewReader(`{"a":1}`))
		if a, ok := ch.deadlines(w, r, &route{class: c.class}); !ok {
			t.Fatalf("class %d: deadlines refused: %+v", c.class, a)
		}
		if c.read == nil && len(w.read) != 0 || c.read != nil && (len(w.read) != 1 || !c.read(w.read[0])) {
			t.Errorf("class %d: read deadlines %v", c.class, w.read)
		}
		if len(w.write) != 1 || !c.write(w.write[0]) {
			t.Errorf("class %d: write deadlines %v", c.class, w.write)
		}
		if c.class == long {
			if b, _ := io.ReadAll(r.Body); string(b) != `{"a":1}` {
				t.Errorf("long: body after deadlines = %q", b)
			}
		}
	}
	for _, cl := range []class{long, stream, bulk} {
		w := &deadlineWriter{ResponseRecorder: httptest.NewRecorder(), failRead: errors.New("use of closed connection")}
		r := httptest.NewRequest("POST", "/v1/net", strings.NewReader(`{}`))
		if _, ok := ch.deadlines(w, r, &route{class: cl}); ok {
			t.Errorf("class %d: a read deadline that failed was let through", cl)
		}
		if len(w.write) != 0 {
			t.Errorf("class %d: write deadline set after the read deadline failed", cl)
		}
	}
	// A writer without deadlines (an HTTP/2 stream test double, say) is
	// not an error: http.ErrNotSupported is expected there.
	r := httptest.NewRequest("GET", "/v1/events", nil)
	if a, ok := ch.deadlines(httptest.NewRecorder(), r, &route{class: stream}); !ok {
		t.Errorf("a writer without deadlines was refused: %+v", a)
	}
}
