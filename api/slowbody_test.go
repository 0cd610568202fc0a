package api

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStalledNetBodyIsARequestTimeout: POST /v1/net reads its body
// eagerly; a sender that stalls mid-body used to end in a 500 INTERNAL
// (and an error in the log). It is the sender's failure: 408
// REQUEST_TIMEOUT, and a body past the route's limit is 413. The server
// here is the API's own TCP handler with a short read timeout, so the
// test does not wait a minute.
func TestStalledNetBodyIsARequestTimeout(t *testing.T) {
	e := newEnv(t)
	tok := e.pair("desktop", "")
	// serve starts the API's TCP handler with readTimeout: short for the
	// stall, generous for the oversized body, whose 1 MiB must not run
	// into the deadline on a loaded machine (a 408 there would be right).
	serve := func(readTimeout time.Duration) (addr string, port int) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		srv := &http.Server{Handler: e.s.TCPHandler(port), ReadTimeout: readTimeout, WriteTimeout: 30 * time.Second}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return l.Addr().String(), port
	}
	stallAddr, stallPort := serve(300 * time.Millisecond)
	bigAddr, bigPort := serve(30 * time.Second)

	send := func(addr string, port int, head string, body func(net.Conn)) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/net HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n%s\r\n", port, tok, head)
		body(c)
		c.SetReadDeadline(time.Now().Add(40 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("read the answer: %v", err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&b)
		return resp.StatusCode, b.String()
	}

	// A stalled body: 10 of 5000 bytes, then nothing.
	status, body := send(stallAddr, stallPort, "Content-Length: 5000\r\n", func(c net.Conn) { c.Write([]byte(`{"appId":"`)) })
	if status != http.StatusRequestTimeout || errCode(body) != "REQUEST_TIMEOUT" {
		t.Errorf("stalled body = %d %s, want 408 REQUEST_TIMEOUT", status, body)
	}
	// A chunked body past the limit.
	status, body = send(bigAddr, bigPort, "Transfer-Encoding: chunked\r\n", func(c net.Conn) {
		chunk := strings.Repeat("a", 64<<10)
		for range netBody/len(chunk) + 2 {
			if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
				return // the server may stop reading once it refused
			}
		}
		fmt.Fprint(c, "0\r\n\r\n")
	})
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized chunked body = %d %s, want 413", status, body)
	}
	if strings.Contains(e.logs.String(), "level=ERROR") {
		t.Errorf("the log has an error for a sender's failure:\n%s", e.logs.String())
	}
}

// TestStalledBodyOnEveryRouteClass: a stalled body on a quick route (the
// server's own read deadline passes inside the handler's decoder, not in
// the chain) is 408 REQUEST_TIMEOUT too, and its message is the fixed
// sentence: the read error names both ends of the socket
// ("read tcp 127.0.0.1:…->127.0.0.1:…: i/o timeout"), which no answer
// may carry.
func TestStalledBodyOnEveryRouteClass(t *testing.T) {
	e := newEnv(t)
	tok := e.pair("desktop", "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: e.s.TCPHandler(port), ReadTimeout: 300 * time.Millisecond, WriteTimeout: 30 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	for _, tc := range []struct{ name, method, path, first string }{
		{"pair (bind)", "POST", "/v1/hosts/pair", `{"name":"`},
		{"proposal (bind)", "PUT", "/v1/apps/my-app/connections/mail", `{"requirement":`},
		{"directive (read whole)", "POST", "/v1/apps/my-app/directives", `{"v":1,`},
		{"standing (bind)", "POST", "/v1/standing", `{"appId":"`},
		{"net (long)", "POST", "/v1/net", `{"appId":"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n%s",
				tc.method, tc.path, port, tok, tc.first)
			c.SetReadDeadline(time.Now().Add(40 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("read the answer: %v", err)
			}
			defer resp.Body.Close()
			var b strings.Builder
			bufio.NewReader(resp.Body).WriteTo(&b)
			body := b.String()
			if resp.StatusCode != http.StatusRequestTimeout || errCode(body) != "REQUEST_TIMEOUT" {
				t.Errorf("stalled body = %d %s, want 408 REQUEST_TIMEOUT", resp.StatusCode, body)
			}
			for _, leak := range []string{"127.0.0.1", "tcp", "timeout", strconv.Itoa(port)} {
				if strings.Contains(body, leak) {
					t.Errorf("the answer names %q: %s", leak, body)
				}
			}
		})
	}
}
