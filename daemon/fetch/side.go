package fetch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/snug/snugd/lan"
	"github.com/snug/snugd/transports"
)

// Side is the one guarded way out for the daemon's side calls: OAuth's
// token, refresh and revocation POSTs, the token claim's probe and claim,
// and the LAN pairing exchange. A side call meets the gates a request
// meets where they apply: its host must be in the row's frozen ceiling,
// the public transport resolves it once and checks every answer (the SSRF
// guard), dials exactly the checked addresses, never follows a redirect,
// and reads the answer under a cap; each phase is bounded by the request
// timeout. No pairing family reads the executor's transports: they call
// Side.
//
// conformance: P3-C13-20, P3-C13-21, P3-C13-22
type Side struct {
	public  *transports.Public
	lan     *transports.LAN
	timeout time.Duration
	desktop bool
}

// Side returns the executor's side-call client. Safe for concurrent use.
func (e *Executor) Side() *Side {
	return &Side{public: e.Public, lan: e.Lan, timeout: e.RequestTimeout, desktop: e.Desktop}
}

// ErrOutsideCeiling is a side call to a host outside the row's frozen
// ceiling: nothing is resolved or dialed.
var ErrOutsideCeiling = errors.New("the endpoint's host is outside the connection's approved hosts")

// Timeout is the bound of each network phase of a side call.
func (s *Side) Timeout() time.Duration { return s.timeout }

// Desktop reports whether the desktop transport policy is in force: only
// then may a side call reach the local network.
func (s *Side) Desktop() bool { return s.desktop }

// Resolve looks host up once for a side call of a row with ceiling: host
// must be one of the ceiling's, and every answer passes the SSRF guard.
// The later Do calls dial only the addresses it returns.
func (s *Side) Resolve(ctx context.Context, ceiling []string, host string) (transports.Resolved, error) {
	if !slices.Contains(ceiling, host) {
		return transports.Resolved{}, ErrOutsideCeiling
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.public.Resolve(ctx, host)
}

// Do sends req to the resolved addresses and reads at most max bytes of
// the answer; it never follows a redirect. The caller bounds ctx.
func (s *Side) Do(ctx context.Context, req *http.Request, resolved transports.Resolved, max int64) (*transports.Response, error) {
	return s.public.Do(ctx, req, resolved, max)
}

// HTTPClient is an *http.Client whose every request is a side call of a
// row with ceiling, for a library that takes a client (daemon/oauth).
func (s *Side) HTTPClient(ceiling []string, max int64) *http.Client {
	return &http.Client{
		Transport:     sideTransport{side: s, ceiling: slices.Clone(ceiling), max: max},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// LANDial is the dial function lan/ uses for the pairing exchange: the
// LAN transport's injected one (tests), else nil (lan's own, which
// reaches only the address probed).
func (s *Side) LANDial() lan.DialFunc {
	if s.lan == nil || s.lan.Dial == nil {
		return nil
	}
	return lan.DialFunc(s.lan.Dial)
}

// sideTransport is HTTPClient's RoundTripper.
type sideTransport struct {
	side    *Side
	ceiling []string
	max     int64
}

func (t sideTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	closeBody := func() {
		if req.Body != nil {
			req.Body.Close()
		}
	}
	host, ok := RequestHost(req.URL)
	if !ok {
		closeBody()
		return nil, ErrOutsideCeiling
	}
	resolved, err := t.side.Resolve(req.Context(), t.ceiling, host)
	if err != nil {
		closeBody()
		return nil, err
	}
	resp, err := t.side.Do(req.Context(), req, resolved, t.max)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		Status: strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode), StatusCode: resp.StatusCode,
		Proto: resp.Proto, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(resp.Body)),
		ContentLength: int64(len(resp.Body)), Request: req,
	}, nil
}
