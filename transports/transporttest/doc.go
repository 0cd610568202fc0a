// Package transporttest is the conformance suite every snugd transport
// passes (STYLE.md: "Every transport passes the shared suite"). A transport's
// own test adapts it with a Harness and calls Run; the suite starts real
// upstream servers on loopback, drives requests through the transport, and
// checks the obligations every transport shares (gates 9 and 10, the
// response size cap): redirects come back and are never followed, the
// body is capped while it is read, proxy settings are ignored, cancellation
// is honoured, error texts stay free of the URL's query and header values,
// requests go out byte-exact, and response headers come back untouched.
//
// Imports: the standard library and the transports package only. It is
// imported by tests only.
package transporttest
