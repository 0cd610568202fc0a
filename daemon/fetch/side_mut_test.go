package fetch

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// closeSpy is a request body that records its Close.
type closeSpy struct {
	io.Reader
	closed int
}

func (c *closeSpy) Close() error { c.closed++; return nil }

// TestSideClientClosesARefusedRequestsBody: a side call the client refuses
// before sending (a host it cannot read, a host outside the row's
// ceiling) closes the request's body, as an http.RoundTripper must; a
// request without a body is refused the same way.
func TestSideClientClosesARefusedRequestsBody(t *testing.T) {
	s := &Side{timeout: time.Second}
	rt := s.HTTPClient([]string{"token.example.com"}, 1024).Transport
	for _, u := range []string{"https://other.example.com/token", "https://bad_host!/token"} {
		body := &closeSpy{Reader: strings.NewReader("grant_type=x")}
		req, err := http.NewRequest("POST", u, body)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.RoundTrip(req); err == nil {
			t.Fatalf("RoundTrip(%s) = nil error", u)
		} else if !errors.Is(err, ErrOutsideCeiling) {
			t.Errorf("RoundTrip(%s) = %v, want ErrOutsideCeiling", u, err)
		}
		if body.closed != 1 {
			t.Errorf("RoundTrip(%s) closed the body %d times, want once", u, body.closed)
		}
		req, _ = http.NewRequest("GET", u, nil)
		if _, err := rt.RoundTrip(req); !errors.Is(err, ErrOutsideCeiling) {
			t.Errorf("RoundTrip(%s without a body) = %v, want ErrOutsideCeiling", u, err)
		}
	}
}
