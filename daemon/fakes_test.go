package daemon

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"
)

// fakeHelper is a LocalTransport that records requests and answers with a
// canned response (or err).
type fakeHelper struct {
	mu     sync.Mutex
	reqs   []LocalRequest
	status int
	header http.Header
	body   string
	err    error
}

func (h *fakeHelper) Do(ctx context.Context, req LocalRequest) (LocalResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = append(h.reqs, req)
	if h.err != nil {
		return LocalResponse{}, h.err
	}
	if h.status == 0 {
		return LocalResponse{}, errors.New("helper not linked")
	}
	return LocalResponse{Status: h.status, Header: h.header.Clone(), Body: []byte(h.body)}, nil
}

func (h *fakeHelper) requests() []LocalRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LocalRequest(nil), h.reqs...)
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
