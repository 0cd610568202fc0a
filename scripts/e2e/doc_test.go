//go:build e2e

// Package e2e is snugd's end-to-end harness: the real snugd binary, built
// from ./cmd/snugd with no test switch, against TLS upstreams that live in
// network namespaces of their own on documentation-range and private
// addresses (ruling R8). scripts/e2e.sh runs it as root:
//
//	go test -tags e2e -count=1 ./scripts/e2e/
//
// The build tag keeps it out of go test ./..., which runs without root.
//
// What it sets up, all torn down on exit, failure included:
//
//   - a test CA and leaf certificates made in Go; snugd trusts the CA
//     through SSL_CERT_FILE, the system roots' own override;
//   - netns snugd-e2e-pub: a veth with 198.51.100.1/24 on the root side and
//     198.51.100.10/24 inside, where the "public" upstream listens on 443;
//   - netns snugd-e2e-priv: 10.77.0.1/24 and 10.77.0.10/24, where the
//     private upstream counts every TCP connection it accepts;
//   - the upstreams are this test binary re-executed inside the namespace
//     (TestUpstreamHelper), reporting what they saw as event lines on
//     stdout;
//   - snugd run under unshare -m with a bind-mounted /etc/hosts mapping
//     api.e2e.test and private.e2e.test to the two upstreams.
package e2e
