package daemon

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/internal/testutil"
)

// orderService records when it starts and stops, in a shared log.
type orderService struct {
	name string
	mu   *sync.Mutex
	log  *[]string
	err  error
	up   chan struct{}
}

func (s *orderService) Run(ctx context.Context) error {
	s.mu.Lock()
	*s.log = append(*s.log, "start "+s.name)
	s.mu.Unlock()
	close(s.up)
	if s.err != nil {
		return s.err
	}
	<-ctx.Done()
	s.mu.Lock()
	*s.log = append(*s.log, "stop "+s.name)
	s.mu.Unlock()
	return nil
}

// TestServices: the group stops its services in reverse start order, each
// one returned before the next is stopped; a service that fails is
// logged; nothing starts after stop, and stop is idempotent.
func TestServices(t *testing.T) {
	var mu sync.Mutex
	var order []string
	logs := &testutil.LogBuffer{}
	g := newServices(slog.New(slog.NewTextHandler(logs, nil)))
	mk := func(name string, err error) *orderService {
		return &orderService{name: name, mu: &mu, log: &order, err: err, up: make(chan struct{})}
	}
	a, b, bad := mk("a", nil), mk("b", nil), mk("bad", errors.New("broken"))
	g.add("a", a)
	g.add("b", b)
	g.add("bad", bad)
	g.startAll(t.Context())
	<-a.up
	<-b.up
	<-bad.up
	g.stop()
	g.stop()
	late := mk("late", nil)
	g.add("late", late)
	g.startAll(t.Context())
	mu.Lock()
	got := slices.Clone(order)
	mu.Unlock()
	// The three start in any order; the stops are ordered.
	if !slices.Equal(got[len(got)-2:], []string{"stop b", "stop a"}) || slices.Contains(got, "start late") {
		t.Errorf("order = %v, want b stopped before a, nothing started after stop", got)
	}
	if !strings.Contains(logs.String(), "service=bad") || !strings.Contains(logs.String(), "broken") {
		t.Errorf("the failing service was not logged: %s", logs.String())
	}
}

// TestJournalServiceFlushesOnStop: entries queued when the daemon closes
// are written by the batcher's Run before it returns.
func TestJournalServiceFlushesOnStop(t *testing.T) {
	dir := t.TempDir() + "/data"
	r := newRig(t, func(c *Config) { c.DataDir = dir })
	for range 50 {
		r.net(t, "app1", frame("GET", "https://"+apiHost+"/x", nil))
	}
	r.d.Close()
	d, err := New(t.Context(), Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	run(t, d)
	defer d.Close()
	es, err := d.records.Journal(t.Context(), journal.JournalQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// The 50 are one refusal repeated: one entry counting them.
	n := 0
	for _, e := range es {
		if e.Outcome != "act" {
			n += e.Count
		}
	}
	if n != 50 {
		t.Errorf("journal after restart counts %d requests (%d entries), want 50", n, len(es))
	}
}
