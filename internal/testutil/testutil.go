package testutil

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
)

// Epoch is the time a Clock starts at unless told otherwise.
var Epoch = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// Clock is a clock the test moves. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time; pass c.Now where a func() time.Time goes.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// LogBuffer collects log output. It is safe for concurrent writers.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Logger returns a logger that writes text records of every level to l.
func (l *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// WantCode fails the test unless err carries code want.
func WantCode(t testing.TB, err error, want errcode.Code) {
	t.Helper()
	if got, _ := errcode.CodeOf(err); got != want {
		t.Fatalf("error = %v (code %q), want code %q", err, got, want)
	}
}

// NoNetwork refuses every lookup and dial: a test that injects it reaches
// nothing beyond what it serves itself.
type NoNetwork struct{}

// LookupNetIP refuses.
func (NoNetwork) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errors.New("test: no DNS")
}

// Dial refuses.
func (NoNetwork) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("test: no dialling")
}

// Resolver answers lookups from a script and records every name it is
// asked for (a trailing dot trimmed). Each Script call for a host adds one
// answer: the host's i-th lookup gets its i-th answer, and the last one
// repeats. A host the script does not name gets Default. It is safe for
// concurrent use once the script is written.
type Resolver struct {
	// Default answers a host the script does not name; nil is an empty,
	// successful lookup.
	Default []netip.Addr

	mu      sync.Mutex
	answers map[string][][]netip.Addr
	count   map[string]int
	err     error
	asked   []string
	queries []string // as asked, trailing dot kept
}

// Script adds the next answer for host: addrs in netip form, none for an
// empty, successful lookup.
func (r *Resolver) Script(host string, addrs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answers == nil {
		r.answers = map[string][][]netip.Addr{}
	}
	var set []netip.Addr
	for _, a := range addrs {
		set = append(set, netip.MustParseAddr(a))
	}
	r.answers[host] = append(r.answers[host], set)
}

// Fail makes every lookup fail with err (nil restores the script).
func (r *Resolver) Fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// LookupNetIP answers host from the script.
func (r *Resolver) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(host, ".")
	r.asked = append(r.asked, name)
	r.queries = append(r.queries, host)
	if r.err != nil {
		return nil, r.err
	}
	script, ok := r.answers[name]
	if !ok {
		return slices.Clone(r.Default), nil
	}
	if r.count == nil {
		r.count = map[string]int{}
	}
	n := r.count[name]
	r.count[name]++
	return slices.Clone(script[min(n, len(script)-1)]), nil
}

// Asked returns every name looked up so far, in order.
func (r *Resolver) Asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

// Queries returns every name looked up so far exactly as it was asked
// (an absolute name keeps its trailing dot), in order.
func (r *Resolver) Queries() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.queries)
}

// Lookups reports how many lookups were made so far, without copying
// the names (a fuzz target asks it once per input).
func (r *Resolver) Lookups() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.asked)
}

// Dialer maps addresses to loopback listeners and records every dial. An
// address it does not know goes to Default, or, without one, fails to dial
// and nothing leaves the machine: that is how a test proves no packet went
// to a refused address. It is safe for concurrent use.
type Dialer struct {
	// Default is the loopback address ("127.0.0.1:port") an unrouted
	// address connects to; "" fails the dial.
	Default string

	mu     sync.Mutex
	routes map[string]string // "192.0.2.10:443" → "127.0.0.1:port"
	ports  map[string]string // "80" → "127.0.0.1:port"
	refuse map[string]bool   // addresses whose dial fails on purpose
	dials  []string
}

// Refuse makes every dial of address fail, with an error that names no
// address, as a host that is down would.
func (d *Dialer) Refuse(address string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.refuse == nil {
		d.refuse = map[string]bool{}
	}
	d.refuse[address] = true
}

// Route sends dials of from ("ip:port") to the loopback address to.
func (d *Dialer) Route(from, to string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.routes == nil {
		d.routes = map[string]string{}
	}
	d.routes[from] = to
}

// RoutePort sends dials of any address on port (one Route does not name)
// to the loopback address to: a plain-HTTP listener beside a TLS one.
func (d *Dialer) RoutePort(port, to string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ports == nil {
		d.ports = map[string]string{}
	}
	d.ports[port] = to
}

// Dial fails a refused address, else connects to address's route, then
// its port's route, then Default, or fails without a packet sent.
func (d *Dialer) Dial(ctx context.Context, _, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dials = append(d.dials, address)
	if d.refuse[address] {
		d.mu.Unlock()
		return nil, errors.New("test dialer: refused on purpose")
	}
	to, ok := d.routes[address]
	if !ok {
		if _, port, err := net.SplitHostPort(address); err == nil {
			to, ok = d.ports[port]
		}
	}
	d.mu.Unlock()
	if !ok && d.Default != "" {
		to, ok = d.Default, true
	}
	if !ok {
		return nil, fmt.Errorf("test dialer: no route to %s", address)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", to)
}

// Dials returns every address dialled so far, in order.
func (d *Dialer) Dials() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dials)
}

// ChallengeOf is a host pairing challenge for verifier:
// BASE64URL(SHA256(verifier)), as in PKCE S256.
func ChallengeOf(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// RunUntilCleanup runs run(ctx) in a goroutine until the test ends, then
// cancels ctx and waits for run to return: a service the test owns, as
// main runs the daemon beside the API server.
func RunUntilCleanup(t testing.TB, run func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
