package transports

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDialBackstop: the default dialer's Control hook refuses a refused
// address at the socket, before connect(2), even when nothing upstream of it
// checked; a real dial to a loopback listener is refused and the listener
// never sees a connection.
//
// conformance: P3-X14-16, P3-X14-17, P3-X14-18
func TestDialBackstop(t *testing.T) {
	cases := []struct {
		address string
		want    string
	}{
		{"127.0.0.1:443", reasonLoopback},
		{"[::1]:443", reasonLoopback},
		{"[::ffff:127.0.0.1]:443", reasonLoopback},
		{"10.0.0.1:80", reasonRFC1918},
		{"169.254.169.254:80", reasonMetadata},
		{"[fd00:ec2::254]:80", reasonMetadata},
		{"100.64.0.1:443", reasonCGNAT},
		{"[fe80::1%eth0]:443", reasonZone},
		{"not-an-address:443", reasonMalformed},
		{"192.0.2.1:443", ""},
		{"[2001:db8::1]:443", ""},
	}
	for _, tc := range cases {
		err := publicControl("tcp", tc.address, nil)
		var b *BlockedError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("publicControl(%q) = %v, want nil", tc.address, err)
		case tc.want != "" && (!errors.As(err, &b) || b.Reason != tc.want):
			t.Errorf("publicControl(%q) = %v, want reason %q", tc.address, err, tc.want)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	d := &net.Dialer{Timeout: 5 * time.Second, Control: publicControl}
	c, err := d.DialContext(t.Context(), "tcp", ln.Addr().String())
	if err == nil {
		c.Close()
		t.Fatalf("dial %s through the backstop succeeded, want a refusal", ln.Addr())
	}
	var b *BlockedError
	if !errors.As(err, &b) || b.Reason != reasonLoopback {
		t.Errorf("dial %s through the backstop = %v, want reason loopback", ln.Addr(), err)
	}
	ln.(*net.TCPListener).SetDeadline(time.Now())
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Errorf("listener accepted a connection the backstop refused")
	}
}

// TestLANDialBackstop: the LAN dialer's Control hook admits the RFC-1918
// class only.
func TestLANDialBackstop(t *testing.T) {
	for address, ok := range map[string]bool{
		"192.168.1.20:443":        true,
		"10.0.0.5:80":             true,
		"127.0.0.1:443":           false,
		"8.8.8.8:443":             false,
		"169.254.169.254:80":      false,
		"[::ffff:192.168.1.20]:1": false,
		"[fd00::1]:443":           false,
	} {
		if err := lanControl("tcp", address, nil); (err == nil) != ok {
			t.Errorf("lanControl(%q) = %v, want admitted %v", address, err, ok)
		}
	}
}

// countingDial records dials and never connects.
type countingDial struct {
	mu    sync.Mutex
	dials []string
}

func (c *countingDial) dial(ctx context.Context, network, address string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dials = append(c.dials, address)
	return nil, errors.New("counting dialer never connects")
}

// TestDoForgedResolved: a Resolved that did not come from Resolve (only
// code inside this package can build one) still cannot reach a refused
// address: the transport's dialer re-checks every address before dialing.
//
// conformance: P3-X14-16, P3-X14-17
func TestDoForgedResolved(t *testing.T) {
	for _, addr := range []string{"127.0.0.1", "10.0.0.5", "169.254.169.254", "::1"} {
		t.Run(addr, func(t *testing.T) {
			cd := &countingDial{}
			p := &Public{Dial: cd.dial}
			defer p.CloseIdleConnections()
			forged := newResolved("api.example.com", netip.Addr{}, []netip.Addr{netip.MustParseAddr(addr)})
			req, _ := http.NewRequest("GET", "https://api.example.com/", nil)
			_, err := p.Do(t.Context(), req, forged, 0)
			if reasonOf(err) == "" {
				t.Errorf("Do(forged Resolved with %s) = %v, want a *BlockedError", addr, err)
			}
			if len(cd.dials) != 0 {
				t.Errorf("Do(forged Resolved with %s) dialed %q, want nothing", addr, cd.dials)
			}
		})
	}
}

func reasonOf(err error) string {
	var b *BlockedError
	if errors.As(err, &b) {
		return b.Reason
	}
	return ""
}

// chunkReader returns its data in fixed-size reads, the last one together
// with io.EOF.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	k := min(len(p), c.n, len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	if len(c.data) == 0 {
		return k, io.EOF
	}
	return k, nil
}

// TestReadCapped checks the body cap at its edges, with honest, lying and
// missing length hints.
//
// conformance: P3-X14-39, P1-R6-06
func TestReadCapped(t *testing.T) {
	const limit = 1000
	data := bytes.Repeat([]byte("0123456789"), 101) // 1010 bytes
	cases := []struct {
		name    string
		size    int
		hint    int64
		chunk   int
		wantErr bool
	}{
		{"empty", 0, -1, 7, false},
		{"exact-no-hint", limit, -1, 7, false},
		{"exact-hint", limit, limit, 1 << 20, false},
		{"exact-small-reads", limit, -1, 1, false},
		{"over-by-one", limit + 1, -1, 7, true},
		{"over-by-one-hint", limit + 1, limit + 1, 1 << 20, true},
		{"over-lying-small-hint", limit + 1, 10, 3, true},
		{"under-lying-big-hint", 10, 1 << 40, 3, false},
		{"over-many", 1010, -1, 64, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readCapped(&chunkReader{data: data[:tc.size], n: tc.chunk}, limit, tc.hint)
			if tc.wantErr {
				if !errors.Is(err, ErrBodyTooLarge) || got != nil {
					t.Errorf("readCapped(%d bytes, limit %d) = %d bytes, %v; want nil, ErrBodyTooLarge", tc.size, limit, len(got), err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, data[:tc.size]) {
				t.Errorf("readCapped(%d bytes, limit %d) = %d bytes, %v; want all of them", tc.size, limit, len(got), err)
			}
			if int64(cap(got)) > limit+1 {
				t.Errorf("readCapped(%d bytes) kept a %d-byte buffer, want at most limit+1", tc.size, cap(got))
			}
		})
	}
	// A reader that never ends is read no further than limit+1 bytes.
	endless := &countingReader{}
	if _, err := readCapped(endless, limit, -1); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("readCapped(endless) = %v, want ErrBodyTooLarge", err)
	}
	if endless.n > limit+1 {
		t.Errorf("readCapped(endless) read %d bytes, want at most %d", endless.n, limit+1)
	}
}

type countingReader struct{ n int }

func (c *countingReader) Read(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}

// TestPoolEvicts: the pool holds at most poolSize transports and drops the
// least recently used.
func TestPoolEvicts(t *testing.T) {
	var p pool
	made := map[string]*http.Transport{}
	mk := func(k string) func() *http.Transport {
		return func() *http.Transport { rt := &http.Transport{}; made[k] = rt; return rt }
	}
	for i := range poolSize {
		p.get(string(rune('A'+i)), mk(string(rune('A'+i))))
	}
	p.get("A", mk("A")) // touch A: B is now the oldest
	p.get("new", mk("new"))
	if n := p.len(); n != poolSize {
		t.Fatalf("pool holds %d transports, want %d", n, poolSize)
	}
	if got := p.get("A", mk("A2")); got != made["A"] {
		t.Errorf("pool rebuilt A, want it kept as recently used")
	}
	p.get("B", mk("B2"))
	if made["B2"] == nil {
		t.Errorf("pool kept B, want it evicted as least recently used")
	}
}

// TestErrorTexts: the fixed texts, lowercase, no final period, nothing
// variable.
func TestErrorTexts(t *testing.T) {
	errs := []error{
		ErrBodyTooLarge, ErrNoAddress, ErrScheme, ErrRequestRefused, ErrPinRequired, ErrPinMismatch,
		&BlockedError{Reason: reasonLoopback},
		&FetchError{Op: "request", Err: errors.New(`Get "https://api.example.com/?key=secret": EOF`)},
	}
	for _, err := range errs {
		s := err.Error()
		if s == "" || strings.ToLower(s) != s || strings.HasSuffix(s, ".") {
			t.Errorf("error text %q: want lowercase, no final period", s)
		}
		if strings.Contains(s, "secret") || strings.Contains(s, "https://") {
			t.Errorf("error text %q carries its cause", s)
		}
	}
}

// rtFunc adapts a function to http.RoundTripper.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// cancelingBody cancels the request's context, then ends cleanly: what
// net/http's HTTP/1.1 transport can do when the context is canceled
// mid-body.
type cancelingBody struct {
	cancel context.CancelFunc
	done   bool
}

func (b *cancelingBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	b.done = true
	b.cancel()
	return copy(p, "partial"), io.EOF
}

func (b *cancelingBody) Close() error { return nil }

// TestCanceledBodyNotDelivered: a body that ends "cleanly" after the context
// was canceled may be truncated and is never delivered.
func TestCanceledBodyNotDelivered(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rt := rtFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", Header: http.Header{}, Body: &cancelingBody{cancel: cancel}, ContentLength: -1}, nil
	})
	req, _ := http.NewRequest("GET", "https://api.example.com/", nil)
	resp, err := roundTrip(ctx, rt, req, 0)
	if resp != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("roundTrip(body ends after cancel) = %v, %v; want nil, context.Canceled", resp, err)
	}
}
