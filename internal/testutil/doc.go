// Package testutil holds the helpers the tests of api, daemon and
// transports share, so each is written once: a clock the test moves, a log
// buffer safe for concurrent writers, an error-code check, and a scripted
// resolver and a recording dialer that keep every test on loopback.
//
// Only _test.go files import it; production code never does (the import
// rule test in cmd/snugd says so). It imports daemon/errcode and the
// standard library only, so every package's tests can use it.
package testutil
