package transports_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/transports"
)

// recordingDialer records every address it is asked to dial and connects
// none: no packet leaves for any of them.
type recordingDialer struct {
	mu    sync.Mutex
	dials []string
}

var errNoConnect = errors.New("test dialer connects nothing")

func (d *recordingDialer) Dial(_ context.Context, _, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials = append(d.dials, address)
	return nil, errNoConnect
}

func (d *recordingDialer) Dials() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dials)
}

// ttlResolver answers every name with addr and reports ttl.
type ttlResolver struct {
	addr netip.Addr
	ttl  time.Duration

	mu    sync.Mutex
	asked int
}

func (r *ttlResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	panic("a TTLResolver is asked through LookupNetIPTTL")
}

func (r *ttlResolver) LookupNetIPTTL(_ context.Context, _, _ string) ([]netip.Addr, time.Duration, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked++
	return []netip.Addr{r.addr}, r.ttl, nil
}

func (r *ttlResolver) Asked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked
}

// TestAnswersReuseTheVettedAddress: a name that re-resolves to a private
// address within the window is still dialled only at the public address
// vetted at its first lookup, the resolver is not asked again, and once
// the window ends the fresh lookup refuses it, before any dial; a refusal
// is not kept, so the next request looks up again. Fake time: the dialer
// records every address it is asked for and connects none.
//
// conformance: P3-X14-16, P3-X14-17
func TestAnswersReuseTheVettedAddress(t *testing.T) {
	for _, private := range []string{"127.0.0.1", "10.0.0.5", "169.254.169.254", "::1", "fd00::1"} {
		t.Run(private, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res := &testutil.Resolver{}
				res.Script(upstreamHost, "192.0.2.10")
				res.Script(upstreamHost, private)
				d := &recordingDialer{}
				p := &transports.Public{Resolver: res, Dial: d.Dial, Answers: &transports.Answers{}}
				defer p.CloseIdleConnections()
				get := func() error {
					_, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
					return err
				}

				if err := get(); !errors.Is(err, errNoConnect) {
					t.Fatalf("first fetch = %v, want the dial to the vetted address to fail", err)
				}
				time.Sleep(transports.AnswerWindow - time.Millisecond)
				if err := get(); !errors.Is(err, errNoConnect) {
					t.Fatalf("fetch within the window = %v, want the vetted address dialled", err)
				}
				if n := res.Lookups(); n != 1 {
					t.Errorf("lookups within the window = %d, want 1", n)
				}
				time.Sleep(time.Millisecond)
				if err := get(); reasonOf(err) == "" {
					t.Fatalf("fetch after the window = %v, want the fresh private answer refused", err)
				}
				if err := get(); reasonOf(err) == "" {
					t.Fatalf("fetch after a refusal = %v, want refused again", err)
				}
				if n := res.Lookups(); n != 3 {
					t.Errorf("lookups = %d, want 3 (a refusal is never kept)", n)
				}
				if dials := d.Dials(); len(dials) != 2 || dials[0] != "192.0.2.10:443" || dials[1] != "192.0.2.10:443" {
					t.Errorf("dials = %q, want the vetted 192.0.2.10:443 twice and nothing else", dials)
				}
			})
		})
	}
}

// TestAnswersOverTLS: with a real TLS upstream, requests within the window
// share one lookup and go to the vetted address, and a Public without
// Answers looks the name up for every request.
func TestAnswersOverTLS(t *testing.T) {
	srv, roots := tlsUpstream(t, okHandler(nil), true)
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprint("answers=", keep), func(t *testing.T) {
			p, res, d := publicTo(t, srv, roots, "192.0.2.10")
			if keep {
				p.Answers = &transports.Answers{}
			}
			for i := range 3 {
				resp, err := fetch(t.Context(), p, newRequest(t, "GET", "https://"+upstreamHost+"/"), 0)
				if err != nil {
					t.Fatalf("fetch %d = %v", i, err)
				}
				if want := netip.MustParseAddrPort("192.0.2.10:443"); resp.RemoteAddr != want {
					t.Errorf("fetch %d went to %v, want %v", i, resp.RemoteAddr, want)
				}
			}
			want := 3
			if keep {
				want = 1
			}
			if n := res.Lookups(); n != want {
				t.Errorf("lookups = %d, want %d", n, want)
			}
			for _, a := range d.Dials() {
				if a != "192.0.2.10:443" {
					t.Errorf("dialled %s, want only 192.0.2.10:443", a)
				}
			}
		})
	}
}

// TestAnswersRefusalNotKept: a lookup that is refused (one private answer
// among public ones), empty or failed keeps nothing, and it drops an
// answer kept before it, so the name is looked up again on the next
// request; a literal is never looked up.
func TestAnswersRefusalNotKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := &testutil.Resolver{}
		res.Script(upstreamHost, "192.0.2.10", "10.0.0.1")
		res.Script(upstreamHost)
		res.Script(upstreamHost, "192.0.2.11")
		res.Script(upstreamHost, "127.0.0.1")
		res.Script(upstreamHost, "192.0.2.12")
		p := &transports.Public{Resolver: res, Answers: &transports.Answers{}}
		ctx := t.Context()
		if _, err := p.Resolve(ctx, upstreamHost); reasonOf(err) == "" {
			t.Fatalf("mixed answer = %v, want refused", err)
		}
		if _, err := p.Resolve(ctx, upstreamHost); !errors.Is(err, transports.ErrNoAddress) {
			t.Fatalf("empty answer = %v, want ErrNoAddress", err)
		}
		r, err := p.Resolve(ctx, upstreamHost)
		if err != nil || !slices.Equal(r.Addrs(), []netip.Addr{netip.MustParseAddr("192.0.2.11")}) {
			t.Fatalf("public answer = %v, %v; want 192.0.2.11", r.Addrs(), err)
		}
		if r, err := p.Resolve(ctx, "API.example.com"); err != nil || !slices.Equal(r.Addrs(), []netip.Addr{netip.MustParseAddr("192.0.2.11")}) {
			t.Fatalf("kept answer = %v, %v; want 192.0.2.11 again", r.Addrs(), err)
		}
		if n := res.Lookups(); n != 3 {
			t.Fatalf("lookups = %d, want 3", n)
		}
		time.Sleep(transports.AnswerWindow)
		if _, err := p.Resolve(ctx, upstreamHost); reasonOf(err) != "loopback" {
			t.Fatalf("after the window = %v, want loopback refused", err)
		}
		if r, err := p.Resolve(ctx, upstreamHost); err != nil || r.Addrs()[0] != netip.MustParseAddr("192.0.2.12") {
			t.Fatalf("after a refusal = %v, %v; want a fresh 192.0.2.12", r.Addrs(), err)
		}
		res.Fail(errors.New("resolver down"))
		time.Sleep(transports.AnswerWindow)
		if _, err := p.Resolve(ctx, upstreamHost); err == nil {
			t.Fatal("failed lookup = nil error")
		}
		res.Fail(nil)
		if n := res.Lookups(); n != 6 {
			t.Fatalf("lookups = %d, want 6", n)
		}
		if _, err := p.Resolve(ctx, "192.0.2.99"); err != nil || res.Lookups() != 6 {
			t.Fatalf("literal = %v after %d lookups, want no lookup", err, res.Lookups())
		}
		if _, err := p.Resolve(ctx, "127.0.0.1"); reasonOf(err) != "loopback" {
			t.Fatalf("refused literal = %v", err)
		}
	})
}

// TestAnswersTTL: an answer is kept for its TTL when the resolver reports
// one shorter than the window, never past the window, and not at all for a
// TTL of zero or less.
func TestAnswersTTL(t *testing.T) {
	for _, tc := range []struct {
		ttl, kept time.Duration
	}{
		{5 * time.Second, 5 * time.Second},
		{time.Millisecond, time.Millisecond},
		{transports.AnswerWindow, transports.AnswerWindow},
		{time.Hour, transports.AnswerWindow},
		{1<<63 - 1, transports.AnswerWindow},
		{0, 0},
		{-time.Second, 0},
		{-1 << 63, 0},
	} {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res := &ttlResolver{addr: netip.MustParseAddr("192.0.2.10"), ttl: tc.ttl}
				p := &transports.Public{Resolver: res, Answers: &transports.Answers{}}
				for range 2 {
					if _, err := p.Resolve(t.Context(), upstreamHost); err != nil {
						t.Fatal(err)
					}
				}
				if want := 1 + btoi(tc.kept == 0); res.Asked() != want {
					t.Fatalf("lookups at once = %d, want %d", res.Asked(), want)
				}
				if tc.kept == 0 {
					return
				}
				time.Sleep(tc.kept - time.Nanosecond)
				p.Resolve(t.Context(), upstreamHost)
				if res.Asked() != 1 {
					t.Fatalf("lookups just inside %v = %d, want 1", tc.kept, res.Asked())
				}
				time.Sleep(time.Nanosecond)
				p.Resolve(t.Context(), upstreamHost)
				if res.Asked() != 2 {
					t.Fatalf("lookups at %v = %d, want 2", tc.kept, res.Asked())
				}
			})
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestAnswersBounded: 100,000 distinct names never make Answers hold more
// than MaxAnswers; the newest names are the ones kept.
func TestAnswersBounded(t *testing.T) {
	res := &ttlResolver{addr: netip.MustParseAddr("192.0.2.10"), ttl: time.Hour}
	a := &transports.Answers{}
	p := &transports.Public{Resolver: res, Answers: a}
	const n = 100_000
	for i := range n {
		if _, err := p.Resolve(t.Context(), fmt.Sprintf("h%d.example.com", i)); err != nil {
			t.Fatal(err)
		}
		if a.Len() > transports.MaxAnswers {
			t.Fatalf("after %d names Answers holds %d, want at most %d", i+1, a.Len(), transports.MaxAnswers)
		}
	}
	asked := res.Asked()
	p.Resolve(t.Context(), fmt.Sprintf("h%d.example.com", n-1))
	p.Resolve(t.Context(), fmt.Sprintf("h%d.example.com", n-transports.MaxAnswers))
	if res.Asked() != asked {
		t.Errorf("the newest names were looked up again")
	}
	p.Resolve(t.Context(), fmt.Sprintf("h%d.example.com", n-transports.MaxAnswers-1))
	if res.Asked() != asked+1 {
		t.Errorf("the name evicted was not looked up again")
	}
}

// TestAnswersConcurrent: goroutines resolving a few names that flip
// between a public and a private answer, across windows, only ever get an
// answer that passed the check, and Answers stays bounded.
func TestAnswersConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		flip := &flipResolver{}
		p := &transports.Public{Resolver: flip, Answers: &transports.Answers{}}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 200 {
					r, err := p.Resolve(t.Context(), fmt.Sprintf("n%d.example.com", (g+i)%5))
					if err == nil {
						for _, a := range r.Addrs() {
							if transports.CheckAddr(a) != nil {
								t.Errorf("Resolve handed over refused %v", a)
							}
						}
					}
					if i%20 == 0 {
						time.Sleep(transports.AnswerWindow / 3)
					}
				}
			})
		}
		wg.Wait()
	})
}

// flipResolver answers public and private by turns.
type flipResolver struct {
	mu sync.Mutex
	n  int
}

func (f *flipResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.n%2 == 0 {
		return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("192.0.2.7")}, nil
}

// TestAnswersLateLookup: a lookup that started first and ends last does
// not overwrite a later lookup's refusal with its older answer.
func TestAnswersLateLookup(t *testing.T) {
	slow := &slowResolver{release: make(chan struct{}), started: make(chan struct{})}
	p := &transports.Public{Resolver: slow, Answers: &transports.Answers{}}
	done := make(chan error)
	go func() {
		_, err := p.Resolve(t.Context(), upstreamHost) // the first lookup: public, held back
		done <- err
	}()
	<-slow.started
	if _, err := p.Resolve(t.Context(), upstreamHost); reasonOf(err) != "rfc1918" {
		t.Fatalf("second lookup = %v, want refused", err)
	}
	close(slow.release)
	if err := <-done; err != nil {
		t.Fatalf("first lookup = %v, want its public answer", err)
	}
	if _, err := p.Resolve(t.Context(), upstreamHost); reasonOf(err) != "rfc1918" {
		t.Fatalf("after both = %v, want a fresh lookup, refused", err)
	}
}

// slowResolver answers its first lookup with a public address once
// release is closed, and every later one at once with a private one.
type slowResolver struct {
	release, started chan struct{}

	mu sync.Mutex
	n  int
}

func (s *slowResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	if n == 1 {
		close(s.started)
		<-s.release
		return []netip.Addr{netip.MustParseAddr("192.0.2.10")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("10.0.0.9")}, nil
}

// scriptResolver answers each lookup with whatever next holds, and counts
// the lookups.
type scriptResolver struct {
	next  []netip.Addr
	ttl   time.Duration
	asked int
}

func (s *scriptResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	panic("asked through LookupNetIPTTL")
}

func (s *scriptResolver) LookupNetIPTTL(context.Context, string, string) ([]netip.Addr, time.Duration, error) {
	s.asked++
	return slices.Clone(s.next), s.ttl, nil
}

// FuzzAnswers runs a sequence of requests over four names, each op
// choosing the name, what the resolver would answer now (public, private,
// mixed, none), the record's TTL and how long to wait first, and holds
// Answers to a model of the rule: an answer is reused only while its
// lookup's window (TTL, at most AnswerWindow) lasts and only if every
// address passed; a reused answer is exactly the vetted one; otherwise the
// name is looked up and the verdict is the fresh answer's; a refused
// address is never handed over. Seeds: testdata/fuzz/FuzzAnswers.
func FuzzAnswers(f *testing.F) {
	f.Add([]byte{0x00, 0x40, 0x80, 0xc0})
	f.Add([]byte{0x04, 0x05, 0x36, 0x07, 0x38})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 256 {
			ops = ops[:256]
		}
		synctest.Test(t, func(t *testing.T) {
			answers := [][]netip.Addr{
				{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")},
				{netip.MustParseAddr("10.0.0.1")},
				{netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("169.254.169.254")},
				nil,
			}
			ttls := []time.Duration{time.Hour, 3 * time.Second, 0, transports.AnswerWindow}
			waits := []time.Duration{0, time.Second, transports.AnswerWindow - time.Second, transports.AnswerWindow}
			type kept struct {
				addrs []netip.Addr
				until time.Time
			}
			model := map[string]kept{}
			res := &scriptResolver{}
			p := &transports.Public{Resolver: res, Answers: &transports.Answers{}}
			for i, op := range ops {
				name := fmt.Sprintf("n%d.example.com", op&3)
				ans, ttl, wait := answers[op>>2&3], ttls[op>>4&3], waits[op>>6&3]
				time.Sleep(wait)
				res.next, res.ttl = ans, ttl
				asked := res.asked
				r, err := p.Resolve(t.Context(), name)
				k, hasKept := model[name]
				if hasKept && time.Now().Before(k.until) {
					if res.asked != asked || err != nil || !slices.Equal(r.Addrs(), k.addrs) {
						t.Fatalf("op %d (%s): kept %v until %v, got %v, %v after %d lookups, want it reused", i, name, k.addrs, k.until, r.Addrs(), err, res.asked-asked)
					}
					continue
				}
				if res.asked != asked+1 {
					t.Fatalf("op %d (%s): %d lookups, want a fresh one", i, name, res.asked-asked)
				}
				delete(model, name)
				allowed := len(ans) > 0
				for _, a := range ans {
					allowed = allowed && transports.CheckAddr(a) == nil
				}
				if allowed != (err == nil) {
					t.Fatalf("op %d (%s): fresh answer %v gave %v", i, name, ans, err)
				}
				if err != nil {
					continue
				}
				if !slices.Equal(r.Addrs(), ans) {
					t.Fatalf("op %d (%s): Resolve = %v, want the fresh %v", i, name, r.Addrs(), ans)
				}
				if ttl > 0 {
					model[name] = kept{addrs: ans, until: time.Now().Add(min(ttl, transports.AnswerWindow))}
				}
			}
		})
	})
}
