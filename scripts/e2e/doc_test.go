//go:build e2e

// Package e2e is snugd's end-to-end harness: the real snugd binary, built
// from ./cmd/snugd with no test switch, against TLS upstreams on
// documentation-range and private addresses, everything in
// network namespaces the harness creates. scripts/e2e.sh runs it as root:
//
//	go test -tags e2e -count=1 ./scripts/e2e/
//
// The build tag keeps it out of go test ./..., which runs without root.
//
// What it sets up, all torn down on exit, failure included, and nothing of
// it in the machine's own namespace (no link, no address, no route: the
// test compares them before and after setup):
//
//   - a test CA and leaf certificates made in Go; snugd trusts the CA
//     through SSL_CERT_FILE, the system roots' own override;
//   - netns snugd-e2e-cli: snugd, snugd ctl and the test's own client
//     calls (the test process dials from inside it, see inNetns);
//   - netns snugd-e2e-pub: a veth pair created from the client namespace,
//     198.51.100.1/24 there and 198.51.100.10/24 inside, where the
//     "public" upstream listens on 443;
//   - netns snugd-e2e-priv: 10.77.0.1/24 and 10.77.0.10/24, where the
//     private upstream counts every TCP connection it accepts;
//   - the upstreams are this test binary re-executed inside their
//     namespace (TestUpstreamHelper), reporting what they saw as event
//     lines on stdout;
//   - snugd run in the client namespace under unshare -m with a
//     bind-mounted /etc/hosts mapping api.e2e.test and private.e2e.test
//     to the two upstreams, on the default port 4747 (free there).
//
// Writing a new end-to-end test (a new file in this package):
//
//	h := setUpHarness(t)          // root check, machine lock, CA, namespaces, both upstreams
//	bin := buildSnugd(t, h.dir)   // the shipped binary
//	s := startSnugd(t, h, bin)    // snugd run in snugd-e2e-cli; waits for /v1/health
//	token := s.pairHost(t, "Me")  // a paired desktop host's token (approved via snugd ctl)
//
//	st, raw, err := s.call(t, "PUT", "/v1/apps/APP/connections/SLOT", token, body, &out) // any API call, from the client namespace
//	r := s.mustNet(t, token, "req-1", "GET", "https://api.e2e.test/x", "")              // one snug:net-request frame (app e2e-app)
//	code, stdout, stderr := s.ctl(t, stdin, "apps", "--json")                          // the real snugd ctl, in the client namespace
//
//	mark := h.pub.mark(); reqs := h.pub.awaitRequests(mark, 1) // what the public upstream received
//	h.priv.count("accept")                                     // connections the private upstream accepted
//
// An upstream answers by path (upstreamHandler); a new behaviour is a new
// path there. Another upstream is another upstreamConfig.Role started with
// startUpstream(t, pubNS(), cfg, h.dir) on a new address or port in an
// existing namespace, or a new netns value passed to setUpNetwork (names
// snugd-e2e-*, links se2e-*, at most 15 bytes). A test with a server of
// its own passes its namespace to setUpHarness(t, ns), starts the server
// with startHelper (any helper test that reports event lines, like
// oauth_test.go's TestOAuthOPHelper in snugd-e2e-op), and appends its names to
// h.hosts before startSnugd. To dial from where snugd
// is, use cliDial; to run a command there, inCli. Failure messages print
// frames with netResponse.String (the error's code and message).
package e2e
