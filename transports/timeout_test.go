package transports_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/transports"
)

// TestDialTimeout: each checked address gets DialTimeout, then the next one
// is tried; the request fails after the last. Fake time, no sleeping.
func TestDialTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var dials []string
		hang := func(ctx context.Context, network, address string) (net.Conn, error) {
			mu.Lock()
			dials = append(dials, address)
			mu.Unlock()
			<-ctx.Done()
			return nil, ctx.Err()
		}
		p := &transports.Public{
			Resolver:    &testutil.Resolver{Default: []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")}},
			Dial:        hang,
			DialTimeout: 3 * time.Second,
		}
		defer p.CloseIdleConnections()
		start := time.Now()
		_, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
		var fe *transports.FetchError
		if !errors.As(err, &fe) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("fetch(every dial hangs) = %v, want a *FetchError caused by the dial deadline", err)
		}
		if took := time.Since(start); took != 6*time.Second {
			t.Errorf("fetch(every dial hangs) took %v, want 2 × 3s", took)
		}
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"192.0.2.1:443", "192.0.2.2:443"}; !slices.Equal(dials, want) {
			t.Errorf("dials = %q, want %q", dials, want)
		}
	})
}

// TestResponseHeaderTimeout: an upstream that takes the request and never
// answers is given up after ResponseHeaderTimeout. The upstream is a TLS
// server on an in-memory pipe, so the clock is fake.
func TestResponseHeaderTimeout(t *testing.T) {
	ip := netip.MustParseAddr("192.0.2.10")
	cert, roots := ipCert(t, ip)
	synctest.Test(t, func(t *testing.T) {
		served := make(chan struct{})
		dial := func(ctx context.Context, network, address string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer close(served)
				defer server.Close()
				tc := tls.Server(server, pipeTLS(cert))
				if tc.Handshake() != nil {
					return
				}
				io.Copy(io.Discard, tc) // take the request, never answer
			}()
			return client, nil
		}
		p := &transports.Public{Dial: dial, RootCAs: roots, ResponseHeaderTimeout: 7 * time.Second}
		defer p.CloseIdleConnections()
		start := time.Now()
		_, err := fetch(t.Context(), p, newRequest(t, "GET", "https://192.0.2.10/"), 0)
		var fe *transports.FetchError
		if !errors.As(err, &fe) {
			t.Errorf("fetch(silent upstream) = %v, want a *FetchError", err)
		}
		if took := time.Since(start); took != 7*time.Second {
			t.Errorf("fetch(silent upstream) took %v, want the 7s header timeout", took)
		}
		<-served
	})
}

// TestCallerDeadline: the caller's context bounds the whole exchange, the
// body included.
func TestCallerDeadline(t *testing.T) {
	ip := netip.MustParseAddr("192.0.2.10")
	cert, roots := ipCert(t, ip)
	synctest.Test(t, func(t *testing.T) {
		served := make(chan struct{})
		entered := make(chan struct{})
		dial := func(ctx context.Context, network, address string) (net.Conn, error) {
			client, server := net.Pipe()
			go func() {
				defer close(served)
				defer server.Close()
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					close(entered)
					w.Header().Set("Content-Length", "100")
					io.WriteString(w, "first half")
					w.(http.Flusher).Flush()
					<-r.Context().Done() // the rest never comes
				})}
				tc := tls.Server(server, pipeTLS(cert))
				srv.Serve(&oneConnListener{conn: tc})
			}()
			return client, nil
		}
		p := &transports.Public{Dial: dial, RootCAs: roots}
		defer p.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := fetch(ctx, p, newRequest(t, "GET", "https://192.0.2.10/"), 0)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("fetch(body stalls) = %v, want context.DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("fetch(body stalls) took %v, want the caller's 5s", took)
		}
		select {
		case <-entered:
		default:
			t.Errorf("the upstream handler never ran: the deadline hit before the body")
		}
		p.CloseIdleConnections()
		<-served
	})
}

// oneConnListener serves one connection, then reports closed once that
// connection is done.
type oneConnListener struct {
	conn net.Conn
	done chan struct{}
	used bool
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if l.done == nil {
		l.done = make(chan struct{})
	}
	if !l.used {
		l.used = true
		return &notifyConn{Conn: l.conn, done: l.done}, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }

type notifyConn struct {
	net.Conn
	done   chan struct{}
	closed bool
}

func (c *notifyConn) Close() error {
	if !c.closed {
		c.closed = true
		close(c.done)
	}
	return c.Conn.Close()
}

// pipeTLS is a server configuration that works over net.Pipe, whose writes
// block until read: in TLS 1.3 the client writes its compatibility
// ChangeCipherSpec while the server is still writing its first flight, and a
// TLS 1.2 server would write its session ticket while the client writes its
// Finished; either way both ends wait forever.
func pipeTLS(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: tls.VersionTLS12, SessionTicketsDisabled: true}
}
