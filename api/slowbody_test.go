package api

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
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
