package transporttest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/transports"
)

// Harness adapts one transport to the suite.
type Harness struct {
	// Start serves h on a loopback server the transport under test can
	// reach and returns how to reach it. It registers its own cleanup on t.
	// Each call starts a fresh server and, if the transport keeps state, a
	// fresh transport.
	Start func(t *testing.T, h http.Handler) Target
}

// Target is one upstream, as the transport under test addresses it.
type Target struct {
	// URL is the scheme and authority requests are addressed to (no path),
	// e.g. "https://api.example.com" or "https://192.168.1.20".
	URL string
	// Do sends req through the transport under test, reading the body under
	// limit bytes. It does the whole journey a request makes (for Public:
	// Resolve, then Do).
	Do func(ctx context.Context, req *http.Request, limit int64) (*transports.Response, error)
}

// hangGuard bounds how long the suite waits for an upstream handler to see a
// client go away. It guards against a hang; it is not a timing assertion.
const hangGuard = 30 * time.Second

// Run runs the whole suite against h. It must not run in parallel with other
// tests (it sets proxy environment variables).
func Run(t *testing.T, h Harness) {
	t.Run("redirect-not-followed", func(t *testing.T) { testRedirect(t, h) })
	t.Run("status-pass-through", func(t *testing.T) { testStatus(t, h) })
	t.Run("body-cap", func(t *testing.T) { testBodyCap(t, h) })
	t.Run("endless-body", func(t *testing.T) { testEndlessBody(t, h) })
	t.Run("proxy-env-ignored", func(t *testing.T) { testProxyEnv(t, h) })
	t.Run("cancellation", func(t *testing.T) { testCancel(t, h) })
	t.Run("error-text", func(t *testing.T) { testErrorText(t, h) })
	t.Run("request-exact", func(t *testing.T) { testRequestExact(t, h) })
	t.Run("response-headers", func(t *testing.T) { testResponseHeaders(t, h) })
}

func newRequest(t *testing.T, method, url string, body []byte) *http.Request {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatalf("http.NewRequest(%q, %q) = %v", method, url, err)
	}
	return req
}

// testRedirect: every 3xx, 304 included and both ends of the class,
// comes back as the answer; the Location is never requested (gate 9).
func testRedirect(t *testing.T, h Harness) {
	for _, code := range []int{300, 301, 302, 303, 304, 307, 308, 399} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			var hits, landed atomic.Int32
			tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/landed" {
					landed.Add(1)
					io.WriteString(w, "followed")
					return
				}
				hits.Add(1)
				w.Header().Set("Location", "/landed")
				w.WriteHeader(code)
				if code != http.StatusNotModified {
					io.WriteString(w, "moved")
				}
			}))
			resp, err := tg.Do(t.Context(), newRequest(t, "GET", tg.URL+"/start", nil), transports.MaxBodyBytes)
			if err != nil {
				t.Fatalf("Do(GET /start answered %d) = %v, want the %d response", code, err, code)
			}
			if resp.StatusCode != code {
				t.Errorf("Do(GET /start).StatusCode = %d, want %d", resp.StatusCode, code)
			}
			if got := resp.Header.Get("Location"); got != "/landed" {
				t.Errorf("Do(GET /start) Location = %q, want %q passed through", got, "/landed")
			}
			if resp.Body != nil {
				t.Errorf("Do(GET /start).Body = %q, want nil for a %d", resp.Body, code)
			}
			if hits.Load() != 1 || landed.Load() != 0 {
				t.Errorf("upstream saw %d request(s) to /start and %d to /landed, want 1 and 0", hits.Load(), landed.Load())
			}
		})
	}
}

// testStatus: error statuses are answers, not transport errors.
func testStatus(t *testing.T, h Harness) {
	for _, code := range []int{200, 201, 204, 400, 404, 429, 500, 503} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			body := "status " + http.StatusText(code)
			if code == http.StatusNoContent {
				body = ""
			}
			tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(code)
				io.WriteString(w, body)
			}))
			resp, err := tg.Do(t.Context(), newRequest(t, "GET", tg.URL+"/", nil), transports.MaxBodyBytes)
			if err != nil {
				t.Fatalf("Do(GET answered %d) = %v, want a response", code, err)
			}
			if resp.StatusCode != code || string(resp.Body) != body {
				t.Errorf("Do(GET) = %d %q, want %d %q", resp.StatusCode, resp.Body, code, body)
			}
		})
	}
}

// testBodyCap: exactly the limit is delivered whole; one byte more is
// ErrBodyTooLarge, with or without a declared length.
func testBodyCap(t *testing.T, h Harness) {
	const limit = transports.MaxBodyBytes
	payload := make([]byte, limit+1)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	cases := []struct {
		name    string
		size    int
		chunked bool
		wantErr bool
	}{
		{"exact-declared", limit, false, false},
		{"exact-chunked", limit, true, false},
		{"over-declared", limit + 1, false, true},
		{"over-chunked", limit + 1, true, true},
		{"empty", 0, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.chunked {
					// Flush the head first so no length is declared.
					w.WriteHeader(http.StatusOK)
					w.(http.Flusher).Flush()
				}
				w.Write(payload[:tc.size])
			}))
			resp, err := tg.Do(t.Context(), newRequest(t, "GET", tg.URL+"/big", nil), limit)
			if tc.wantErr {
				if !errors.Is(err, transports.ErrBodyTooLarge) {
					t.Fatalf("Do(GET %d-byte body, limit %d) = %v, want ErrBodyTooLarge", tc.size, limit, err)
				}
				if resp != nil {
					t.Errorf("Do(GET %d-byte body) returned a response beside the error, want none (no silent truncation)", tc.size)
				}
				return
			}
			if err != nil {
				t.Fatalf("Do(GET %d-byte body, limit %d) = %v, want the body", tc.size, limit, err)
			}
			if !bytes.Equal(resp.Body, payload[:tc.size]) {
				t.Errorf("Do(GET %d-byte body) delivered %d bytes, want the %d sent, byte for byte", tc.size, len(resp.Body), tc.size)
			}
		})
	}
}

// testEndlessBody: an upstream that never stops is cut off at the cap, the
// transport stops reading (the upstream sees its writes fail), and memory
// stays bounded (capped while reading, not after buffering).
func testEndlessBody(t *testing.T, h Harness) {
	const (
		limit   = transports.MaxBodyBytes
		ceiling = 256 << 20 // the handler gives up here if the client never stops
	)
	var written atomic.Int64
	done := make(chan struct{})
	tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		chunk := bytes.Repeat([]byte("endless "), 4<<10)
		for written.Load() < ceiling {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := tg.Do(t.Context(), newRequest(t, "GET", tg.URL+"/endless", nil), limit)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, transports.ErrBodyTooLarge) {
		t.Fatalf("Do(GET endless body) = %v, want ErrBodyTooLarge", err)
	}
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatalf("upstream still writing after %v: the transport kept reading past the cap", hangGuard)
	}
	if w := written.Load(); w >= ceiling {
		t.Errorf("upstream wrote %d bytes before its writes failed, want far fewer than %d", w, ceiling)
	}
	// Allocation by the whole process while the request ran, server side
	// included. Buffering the stream would cost hundreds of MiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("Do(GET endless body) allocated %d bytes, want a bound near the %d-byte cap", alloc, limit)
	}
}

// childEnv marks a test process the suite started to rerun one subtest.
const childEnv = "SNUGD_TRANSPORTTEST_CHILD"

// testProxyEnv: HTTPS_PROXY, HTTP_PROXY and ALL_PROXY point at a recorder;
// nothing reaches it and the request goes direct.
//
// net/http reads the proxy variables once per process, so a transport using
// http.ProxyFromEnvironment would pass here if anything in this process had
// asked before the variables were set. The check therefore also runs in a
// fresh process (this test binary, rerunning only this subtest) where it is
// the first to ask.
func testProxyEnv(t *testing.T, h Harness) {
	if os.Getenv(childEnv) == "" {
		rerunInChild(t)
	}
	var proxied atomic.Int32
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		http.Error(w, "proxy", http.StatusBadGateway)
	}))
	t.Cleanup(recorder.Close)
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(k, recorder.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "direct")
	}))
	resp, err := tg.Do(t.Context(), newRequest(t, "GET", tg.URL+"/", nil), transports.MaxBodyBytes)
	if err != nil {
		t.Fatalf("Do(GET) with proxy variables set = %v, want a direct answer", err)
	}
	if string(resp.Body) != "direct" {
		t.Errorf("Do(GET) with proxy variables set = %q, want %q from the upstream", resp.Body, "direct")
	}
	if n := proxied.Load(); n != 0 {
		t.Errorf("proxy recorder saw %d request(s), want 0", n)
	}
}

// testCancel: a context that ends before, during the wait for the head, or
// during the body ends the request with the context's error.
func testCancel(t *testing.T, h Harness) {
	t.Run("before", func(t *testing.T) {
		var hits atomic.Int32
		tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := tg.Do(ctx, newRequest(t, "GET", tg.URL+"/", nil), transports.MaxBodyBytes)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Do(canceled ctx) = %v, want context.Canceled", err)
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("upstream saw %d request(s) on a canceled context, want 0", n)
		}
	})
	for _, stage := range []string{"head", "body"} {
		t.Run(stage, func(t *testing.T) {
			entered := make(chan struct{})
			release := make(chan struct{})
			tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if stage == "body" {
					w.WriteHeader(http.StatusOK)
					io.WriteString(w, "partial")
					w.(http.Flusher).Flush()
				}
				close(entered)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			// Registered after Start, so it runs before the server's own
			// cleanup, which waits for this handler.
			t.Cleanup(func() { close(release) })
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := tg.Do(ctx, newRequest(t, "GET", tg.URL+"/slow", nil), transports.MaxBodyBytes)
				errc <- err
			}()
			select {
			case <-entered:
			case <-time.After(hangGuard):
				t.Fatal("upstream never saw the request")
			}
			cancel()
			select {
			case err := <-errc:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Do(ctx canceled while waiting for the %s) = %v, want context.Canceled", stage, err)
				}
			case <-time.After(hangGuard):
				t.Fatalf("Do did not return after its context was canceled while waiting for the %s", stage)
			}
		})
	}
}

// testErrorText: whatever goes wrong, the error text carries neither the
// URL, nor its query, nor a header value.
func testErrorText(t *testing.T, h Harness) {
	const (
		querySecret  = "QSECRETq7w3"
		headerSecret = "HSECRETz9k1"
		pathSecret   = "PSECRETm4x8"
	)
	tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("mode") {
		case "abort":
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "half a bo")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		case "big":
			w.Write(make([]byte, 2<<10))
		case "hang":
			<-r.Context().Done()
		}
	}))
	build := func(mode string) *http.Request {
		req := newRequest(t, "GET", tg.URL+"/"+pathSecret+"?mode="+mode+"&api_key="+querySecret, nil)
		req.Header.Set("X-Api-Token", headerSecret)
		return req
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	deadline, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel2()
	badHeader := build("ok")
	badHeader.Header["X-Broken"] = []string{"value\r\nX-Injected: " + headerSecret}
	cases := []struct {
		name  string
		ctx   context.Context
		req   *http.Request
		limit int64
	}{
		{"aborted-body", t.Context(), build("abort"), transports.MaxBodyBytes},
		{"too-large", t.Context(), build("big"), 1 << 10},
		{"canceled", canceled, build("ok"), transports.MaxBodyBytes},
		{"deadline", deadline, build("hang"), transports.MaxBodyBytes},
		{"invalid-header", t.Context(), badHeader, transports.MaxBodyBytes},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.req.URL.String()
			_, err := tg.Do(tc.ctx, tc.req, tc.limit)
			if err == nil {
				t.Fatalf("Do(%s) = nil error, want a failure", tc.name)
			}
			text := err.Error()
			for _, leak := range []string{url, querySecret, headerSecret, pathSecret, "api_key", "mode="} {
				if strings.Contains(text, leak) {
					t.Errorf("Do(%s) error %q contains %q", tc.name, text, leak)
				}
			}
		})
	}
}

// testRequestExact: method, path and query, header values (repeated ones
// included) and the body reach the upstream byte for byte.
func testRequestExact(t *testing.T, h Harness) {
	type seen struct {
		method, uri string
		header      http.Header
		body        []byte
		length      int64
	}
	body := make([]byte, 256<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range body {
		body[i] = byte(rng.Uint32())
	}
	const uri = "/v1/a%2Fb/c;d/%E2%9C%93?x=1&y=%20+%2B&z=%E2%9C%93&empty=&dup=1&dup=2&raw=a/b?c"
	cases := []struct {
		method string
		body   []byte
	}{
		{"GET", nil},
		{"DELETE", nil},
		{"POST", body},
		{"PUT", []byte(`{"a":"ü","b":[1,2]}`)},
		{"PATCH", []byte{0, 1, 2, 0xff, '\r', '\n'}},
	}
	for _, tc := range cases {
		t.Run(tc.method, func(t *testing.T) {
			got := make(chan seen, 1)
			tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- seen{r.Method, r.RequestURI, r.Header.Clone(), b, r.ContentLength}
			}))
			req := newRequest(t, tc.method, tg.URL+uri, tc.body)
			req.Header.Set("Content-Type", "application/json; charset=utf-8")
			req.Header.Set("X-Spaced", "a  b\tc  d")
			req.Header.Set("X-Case", "MiXeD-Case-Value")
			req.Header.Add("X-Multi", "one")
			req.Header.Add("X-Multi", "two, three")
			req.Header.Set("Authorization", "Bearer tok.en/with+odd=chars")
			resp, err := tg.Do(t.Context(), req, transports.MaxBodyBytes)
			if err != nil {
				t.Fatalf("Do(%s %s) = %v, want a response", tc.method, uri, err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("Do(%s %s).StatusCode = %d, want 200", tc.method, uri, resp.StatusCode)
			}
			s := <-got
			if s.method != tc.method {
				t.Errorf("upstream method = %q, want %q", s.method, tc.method)
			}
			if s.uri != uri {
				t.Errorf("upstream request URI = %q, want %q byte for byte", s.uri, uri)
			}
			for _, k := range []string{"Content-Type", "X-Spaced", "X-Case", "X-Multi", "Authorization"} {
				if !slices.Equal(s.header.Values(k), req.Header.Values(k)) {
					t.Errorf("upstream header %s = %q, want %q", k, s.header.Values(k), req.Header.Values(k))
				}
			}
			if ae := s.header.Values("Accept-Encoding"); len(ae) != 0 {
				t.Errorf("upstream saw Accept-Encoding %q the caller never set", ae)
			}
			if !bytes.Equal(s.body, tc.body) {
				t.Errorf("upstream body = %d bytes, want the %d sent, byte for byte", len(s.body), len(tc.body))
			}
			if tc.body != nil && s.length != int64(len(tc.body)) {
				t.Errorf("upstream Content-Length = %d, want %d", s.length, len(tc.body))
			}
		})
	}
}

// testResponseHeaders: every response header comes back as sent, repeated
// and sensitive ones included; filtering is the caller's job.
func testResponseHeaders(t *testing.T, h Harness) {
	var once sync.Once
	sent := http.Header{}
	tg := h.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			sent.Add("Set-Cookie", "a=1; Path=/; HttpOnly")
			sent.Add("Set-Cookie", "b=2; Secure")
			sent.Set("X-Custom", "value with  spaces, and \"quotes\"")
			sent.Set("Cache-Control", "no-store")
			sent.Set("Content-Type", "application/json")
			sent.Set("Www-Authenticate", `Bearer realm="api"`)
		})
		for k, v := range sent {
			w.Header()[k] = v
		}
		io.WriteString(w, "{}")
	}))
	resp, err := tg.Do(t.Context(), newRequest(t, "GET", tg.URL+"/", nil), transports.MaxBodyBytes)
	if err != nil {
		t.Fatalf("Do(GET) = %v, want a response", err)
	}
	for k, want := range sent {
		if got := resp.Header.Values(k); !slices.Equal(got, want) {
			t.Errorf("response header %s = %q, want %q", k, got, want)
		}
	}
}

// rerunInChild runs the current (sub)test alone in a new process of this
// test binary and fails t if it does not pass there.
func rerunInChild(t *testing.T) {
	t.Helper()
	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+regexp.QuoteMeta(part)+"$")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+strings.Join(pattern, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("rerun of %s in a fresh process failed: %v\n%s", t.Name(), err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("rerun of %s in a fresh process did not run it:\n%s", t.Name(), out)
	}
}
