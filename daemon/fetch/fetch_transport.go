package fetch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/wire"
	"github.com/snug/snugd/linkdevice"
	"github.com/snug/snugd/transports"
)

// The transports a request departs by (gate 9). Each request's is chosen
// once, where the spec places the choice: gate 5 for the network (the
// public transport with gate 5's checked addresses, or the LAN transport
// with the row's pin), gate 6a for a local helper. A new transport (the
// LAN-paired device's, a helper's) is a new type here and one choice in
// gate 5 or 6a.

// A transport sends f's request as gates 7 and 8 prepared it (f.header,
// f.sendURL, f.token) and returns the answer, its body capped at 1 MiB.
type transport interface {
	send(ctx context.Context, f *Fetch) (*upstream, *errcode.Error)
	// needsState reports whether gate 8 must read the slot's credential
	// slice even when the row injects nothing: the LAN pin, the helper
	// token.
	needsState() bool
}

// publicTransport dials only the addresses gate 5 checked.
type publicTransport struct {
	t        *transports.Public
	resolved transports.Resolved
}

func (p publicTransport) needsState() bool { return false }

func (p publicTransport) send(ctx context.Context, f *Fetch) (*upstream, *errcode.Error) {
	req, err := httpRequest(ctx, f)
	if err != nil {
		return nil, err
	}
	resp, derr := p.t.Do(ctx, req, p.resolved, wire.MaxNetResponseBody)
	if derr != nil {
		return nil, transportError(derr)
	}
	return &upstream{status: resp.StatusCode, header: resp.Header, body: resp.Body, release: resp.Release}, nil
}

// lanTransport dials the RFC-1918 literal with the row's pin (§12.11).
type lanTransport struct{ t *transports.LAN }

func (l lanTransport) needsState() bool { return true }

func (l lanTransport) send(ctx context.Context, f *Fetch) (*upstream, *errcode.Error) {
	req, err := httpRequest(ctx, f)
	if err != nil {
		return nil, err
	}
	resp, derr := l.t.Do(ctx, req, f.pin, wire.MaxNetResponseBody)
	if derr != nil {
		f.PinBad = errors.Is(derr, transports.ErrPinMismatch) // never retried; daemon/pairing marks the row
		return nil, transportError(derr)
	}
	return &upstream{status: resp.StatusCode, header: resp.Header, body: resp.Body, release: resp.Release}, nil
}

// httpRequest builds the network request from what gates 7 and 8 made.
func httpRequest(ctx context.Context, f *Fetch) (*http.Request, *errcode.Error) {
	var body io.Reader
	if f.Req.HasBody || f.Req.Body != "" {
		body = strings.NewReader(f.Req.Body)
	}
	// The URL gates 4 and 8 checked is the one sent: a copy of the
	// struct, not its string form parsed again (which cost a String and
	// a Parse per request).
	req, err := http.NewRequestWithContext(ctx, f.Req.Method, "", body)
	if err != nil {
		return nil, refuse(errcode.NetInvalidRequest, "the request could not be built")
	}
	u := *f.SendURL
	req.URL, req.Host = &u, u.Host
	req.Header = f.Header
	return req, nil
}

// helperTransport sends to a registered local helper: the path
// and query, the stripped and injected headers, the body and the helper
// token. The helper's error is logged scrubbed, never shown.
type helperTransport struct {
	id  string
	t   LocalTransport
	log *slog.Logger
}

func (h helperTransport) needsState() bool { return true }

func (h helperTransport) send(ctx context.Context, f *Fetch) (*upstream, *errcode.Error) {
	resp, err := h.t.Do(ctx, LocalRequest{
		AppID:        f.Call.AppID,
		Slot:         f.Grant.Slot,
		Method:       f.Req.Method,
		PathAndQuery: f.SendURL.RequestURI(),
		Header:       f.Header,
		Body:         f.Req.Body,
		Token:        f.token,
	})
	if err != nil {
		h.log.Warn("local helper failed", "helper", h.id, "err", f.scrub.Apply(err.Error()))
		return nil, LocalRefusal(err)
	}
	if len(resp.Body) > wire.MaxNetResponseBody {
		return nil, refuse(errcode.NetSizeExceeded, "the response body exceeds 1048576 bytes")
	}
	return &upstream{status: resp.Status, header: resp.Header, body: resp.Body}, nil
}

// localRefusal maps a local helper's failure to the request's refusal
// (gate 9). Nothing falls back to the network.
func LocalRefusal(err error) *errcode.Error {
	switch {
	case errors.Is(err, linkdevice.ErrResponseTooLarge):
		return refuse(errcode.NetSizeExceeded, "the response body exceeds 1048576 bytes")
	case errors.Is(err, linkdevice.ErrUnauthorized), errors.Is(err, linkdevice.ErrNotLinked):
		return refuse(errcode.NetAuthFailed, "the local helper refused the connection's device session: link the device again")
	case errors.Is(err, linkdevice.ErrOutOfBounds):
		return refuse(errcode.NetInvalidRequest, "the request is outside what a local helper accepts")
	}
	return refuse(errcode.NetFetchFailed, "the local helper did not answer")
}
