package daemon

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/linkdevice"
)

// fakeHelper is a LocalTransport that records requests and answers with a
// canned response (or err).
type fakeHelper struct {
	mu     sync.Mutex
	reqs   []fetch.LocalRequest
	status int
	header http.Header
	body   string
	err    error
}

func (h *fakeHelper) Do(ctx context.Context, req fetch.LocalRequest) (fetch.LocalResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = append(h.reqs, req)
	if h.err != nil {
		return fetch.LocalResponse{}, h.err
	}
	if h.status == 0 {
		return fetch.LocalResponse{}, errors.New("helper not linked")
	}
	return fetch.LocalResponse{Status: h.status, Header: h.header.Clone(), Body: []byte(h.body)}, nil
}

func (h *fakeHelper) requests() []fetch.LocalRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]fetch.LocalRequest(nil), h.reqs...)
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// deleteHost unpairs host id (the API's DELETE /v1/hosts/{id}).
func (d *Daemon) deleteHost(ctx context.Context, id string) error {
	_, err := d.hosts.Unpair(ctx, id)
	return err
}

// coreFiles lists the source files of the daemon's core packages, for the
// audits that read the source: the root and its parts.
func coreFiles() ([]string, error) {
	var files []string
	for _, dir := range []string{".", "grants", "fetch", "pairing", "journal", "hints"} {
		fs, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	return files, nil
}

// run runs d until the test ends (Close stops it too), as main runs it
// beside the API server.
func run(t testing.TB, d *Daemon) { testutil.RunUntilCleanup(t, d.Run) }

// localHelpers is a Helpers whose helpers are fakeHelpers by id: gate
// 6a's request reaches the fake as the supervisor adapter sends it to a
// real helper session.
type localHelpers struct {
	fakeHelpers
	by map[string]*fakeHelper
}

// helpersOf is localHelpers over by.
func helpersOf(by map[string]*fakeHelper) localHelpers {
	ids := make([]string, 0, len(by))
	for id := range by {
		ids = append(ids, id)
	}
	return localHelpers{fakeHelpers: fakeHelpers{ids: ids}, by: by}
}

func (l localHelpers) Do(ctx context.Context, k linkdevice.SessionKey, req linkdevice.Request) (linkdevice.Response, error) {
	h := l.by[k.HelperID]
	if h == nil {
		return linkdevice.Response{}, linkdevice.ErrNotLinked
	}
	resp, err := h.Do(ctx, fetch.LocalRequest{AppID: k.AppID, Slot: k.Slot, Method: req.Method, PathAndQuery: req.PathAndQuery,
		Header: req.Header, Body: string(req.Body), Token: req.Token.Reveal()})
	if err != nil {
		return linkdevice.Response{}, err
	}
	return linkdevice.Response{Status: resp.Status, Header: resp.Header, Body: resp.Body}, nil
}
