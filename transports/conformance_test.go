package transports_test

import (
	"testing"

	"github.com/snug/snugd/transports/transporttest"
)

// TestPublicConformance runs the shared transport suite against Public, over
// HTTP/2 and HTTP/1.1 upstreams reached at a documentation-range address.
//
// conformance: P3-X14-37, P3-X14-38, P3-X14-39, P1-R6-06
func TestPublicConformance(t *testing.T) {
	t.Run("h2", func(t *testing.T) { transporttest.Run(t, publicHarness(true)) })
	t.Run("h1", func(t *testing.T) { transporttest.Run(t, publicHarness(false)) })
}

// TestLANConformance runs the shared transport suite against LAN: https with
// a matching pin (HTTP/2 and HTTP/1.1) and plain http.
//
// conformance: P3-X14-37, P3-X14-38, P3-X14-39, P1-R6-06, P3-C12.11-14
func TestLANConformance(t *testing.T) {
	t.Run("https-h2", func(t *testing.T) { transporttest.Run(t, lanHTTPSHarness(true)) })
	t.Run("https-h1", func(t *testing.T) { transporttest.Run(t, lanHTTPSHarness(false)) })
	t.Run("http", func(t *testing.T) { transporttest.Run(t, lanHTTPHarness()) })
}
