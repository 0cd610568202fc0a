package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// soakConfig is "bench soak"'s flags.
type soakConfig struct {
	snugd, dir, upNS string
	duration         time.Duration
	every            time.Duration // sampling period
	warmup           time.Duration // samples before this are not judged
	netRate          int           // /v1/net requests per second
}

// runSoak is "bench soak": the real snugd under mixed load for a
// duration, sampled from /proc and the data directory, judged at the end.
// scripts/soak.sh builds it and snugd, creates the namespaces and runs it
// inside the client namespace.
func runSoak(args []string) error {
	var cfg soakConfig
	fs := flag.NewFlagSet("bench soak", flag.ContinueOnError)
	fs.StringVar(&cfg.snugd, "snugd", "", "the snugd binary")
	fs.StringVar(&cfg.dir, "dir", "", "a scratch directory (removed by the caller)")
	fs.StringVar(&cfg.upNS, "upns", "", "the upstream's network namespace")
	fs.DurationVar(&cfg.duration, "duration", time.Hour, "how long the load runs")
	fs.DurationVar(&cfg.every, "every", 30*time.Second, "how often to sample")
	fs.DurationVar(&cfg.warmup, "warmup", 5*time.Minute, "samples before this are not judged (at most a third of -duration)")
	fs.IntVar(&cfg.netRate, "rate", 50, "/v1/net requests per second")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.snugd == "" || cfg.dir == "" || cfg.upNS == "" || cfg.duration <= 0 || cfg.every <= 0 || cfg.netRate <= 0 {
		return errors.New("usage: bench soak -snugd BIN -dir DIR -upns NS [-duration 1h] (run scripts/soak.sh)")
	}
	cfg.warmup = min(cfg.warmup, cfg.duration/3)

	caFile, certFile, keyFile, err := pki(cfg.dir)
	if err != nil {
		return err
	}
	emptyDir := filepath.Join(cfg.dir, "no-certs")
	hostsFile := filepath.Join(cfg.dir, "hosts")
	if err := os.Mkdir(emptyDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(hostsFile, []byte("127.0.0.1 localhost\n::1 localhost\n"+upstreamAddr+" "+upstreamHost+"\n"), 0o644); err != nil {
		return err
	}
	up, err := startUpstream(cfg.upNS, certFile, keyFile)
	if err != nil {
		return err
	}
	defer up.stop()
	dataDir, port, err := newDataDir(filepath.Join(cfg.dir, "snugd-soak"))
	if err != nil {
		return err
	}
	sd, _, err := startSnugd(cfg.snugd, dataDir, "0-1", hostsFile, caFile, emptyDir, port)
	if err != nil {
		return err
	}
	defer sd.stop()
	token, err := sd.setUp()
	if err != nil {
		return fmt.Errorf("set up snugd: %w", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), cfg.duration)
	defer cancel()
	var st soakStats
	var wg sync.WaitGroup
	net := snugdTarget(sd, token)
	// At most 16 connections to snugd: a stall then queues requests in
	// the client instead of opening sockets that would idle in the pool
	// afterwards and read as fds snugd holds.
	tr := keepAlive()
	tr.MaxConnsPerHost = 16
	net.client = &http.Client{Transport: tr}
	wg.Go(func() { soakNet(ctx, net, cfg.netRate, &st) })
	wg.Go(func() { soakReads(ctx, sd, token, &st) })
	wg.Go(func() { soakWriters(ctx, sd, token, &st) })

	fmt.Printf("snugd soak, %s: %v of %d req/s /v1/net (small GET through an api_key connection), 5 reads/s (status, connections, journal), a pairing request every second, a proposal every 2 s, credentials set every 10 s; sampled every %v\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), cfg.duration, cfg.netRate, cfg.every)
	fmt.Println("| t | RSS MiB | fds | of them files | threads | goroutines | snugd.db KiB | WAL KiB | net ok | net failed | net p50 ms | net p99 ms | reads | writes | failed |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	start := time.Now()
	var samples []soakSample
	tick := time.NewTicker(cfg.every)
	defer tick.Stop()
	sampleNow := func() error {
		s, err := sampleSnugd(sd, time.Since(start), &st)
		if err != nil {
			return err
		}
		samples = append(samples, s)
		fmt.Println(s.row())
		return nil
	}
	if err := sampleNow(); err != nil {
		return err
	}
	for done := false; !done; {
		select {
		case <-tick.C:
		case <-ctx.Done():
			done = true
			if time.Since(start)-samples[len(samples)-1].at < time.Second {
				continue // the last tick's sample is the final one
			}
		}
		if sd.exited() {
			return fmt.Errorf("snugd exited during the soak: %s", sd.logTail())
		}
		if err := sampleNow(); err != nil {
			return err
		}
	}
	wg.Wait()
	_, refused, err := up.conns()
	if err != nil {
		return err
	}
	return judgeSoak(cfg, samples, &st, refused)
}

// soakStats counts what the load got, shared by its goroutines.
type soakStats struct {
	netOK, netFailed, netSkipped atomic.Int64
	reads, writes, failed        atomic.Int64

	mu       sync.Mutex
	lat      []time.Duration // /v1/net latencies since the last sample
	firstErr string
}

// fail counts a failed read or write and keeps the first error.
func (st *soakStats) fail(what string, err error) {
	st.failed.Add(1)
	st.note(what, err)
}

// note keeps the first error.
func (st *soakStats) note(what string, err error) {
	st.mu.Lock()
	if st.firstErr == "" {
		st.firstErr = what + ": " + err.Error()
	}
	st.mu.Unlock()
}

// soakNet sends rate requests a second, each in its own goroutine, at most
// 64 in flight (a request over that is counted skipped, not queued).
func soakNet(ctx context.Context, t *target, rate int, st *soakStats) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	var i int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			st.netSkipped.Add(1)
			continue
		}
		i++
		n := i
		wg.Go(func() {
			defer func() { <-sem }()
			req, err := t.request(n, false)
			if err != nil {
				st.netFailed.Add(1)
				return
			}
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			began := time.Now()
			resp, err := t.client.Do(req.WithContext(rctx))
			var body []byte
			if err == nil {
				body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				if err == nil {
					err = t.check(resp.StatusCode, body, false)
				}
			}
			if err != nil {
				st.netFailed.Add(1)
				st.note("net", err)
				return
			}
			st.netOK.Add(1)
			st.mu.Lock()
			st.lat = append(st.lat, time.Since(began))
			st.mu.Unlock()
		})
	}
}

// soakReads reads five times a second, in turn: status, the app's
// connections, its journal.
func soakReads(ctx context.Context, sd *snugd, token string, st *soakStats) {
	paths := []string{"/v1/status", "/v1/apps/" + benchApp + "/connections", "/v1/journal?app=" + benchApp}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := sd.call("GET", paths[i%len(paths)], token, nil, nil); err != nil {
			st.fail("read "+paths[i%len(paths)], err)
			continue
		}
		st.reads.Add(1)
	}
}

// soakWriters writes: a desktop pairing request under a new made-up name
// every second (never approved: they displace each other), a connection
// proposal for one of 20 apps every 2 s, and the app's credential through
// snugd ctl every 10 s.
func soakWriters(ctx context.Context, sd *snugd, token string, st *soakStats) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		vb := make([]byte, 32)
		rand.Read(vb)
		sum := sha256.Sum256(vb)
		if err := sd.call("POST", "/v1/hosts/pair", "", map[string]string{
			"name": fmt.Sprintf("soak %d", i), "surface": "desktop", "challenge": base64.RawURLEncoding.EncodeToString(sum[:]),
		}, nil); err != nil {
			st.fail("pair", err)
		} else {
			st.writes.Add(1)
		}
		if i%2 == 0 {
			app := fmt.Sprintf("soak-app-%02d", (i/2)%20)
			if err := sd.call("PUT", "/v1/apps/"+app+"/connections/api", token, map[string]json.RawMessage{"requirement": json.RawMessage(benchRequirement)}, nil); err != nil {
				st.fail("propose "+app, err)
			} else {
				st.writes.Add(1)
			}
		}
		if i%10 == 0 {
			if _, err := sd.ctl(fmt.Sprintf(`{"api_key":%q}`, benchKey), "credentials", "set", benchApp, "api"); err != nil {
				st.fail("credentials set", err)
			} else {
				st.writes.Add(1)
			}
		}
	}
}

// soakSample is one row of the table.
type soakSample struct {
	at                    time.Duration
	rss, db, wal          int64
	fds, files, threads   int // files: the fds that are not sockets
	goroutines            int // from snugd ctl status --json
	netOK, netFailed      int64
	p50, p99              time.Duration
	reads, writes, failed int64
}

func (s soakSample) row() string {
	return fmt.Sprintf("| %s | %.1f | %d | %d | %d | %d | %d | %d | %d | %d | %.2f | %.2f | %d | %d | %d |",
		s.at.Round(time.Second), float64(s.rss)/(1<<20), s.fds, s.files, s.threads, s.goroutines, s.db>>10, s.wal>>10,
		s.netOK, s.netFailed, ms(s.p50), ms(s.p99), s.reads, s.writes, s.failed)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sampleSnugd reads snugd's RSS, open files and threads from /proc, its
// goroutines from snugd ctl status --json, the database and WAL sizes,
// and the load's counts so far.
func sampleSnugd(sd *snugd, at time.Duration, st *soakStats) (soakSample, error) {
	s := soakSample{at: at}
	out, err := sd.ctl("", "status", "--json")
	if err != nil {
		return s, err
	}
	var status struct {
		Goroutines int `json:"goroutines"`
	}
	if err := json.Unmarshal([]byte(out), &status); err != nil || status.Goroutines <= 0 {
		return s, fmt.Errorf("snugd ctl status --json gave no goroutine count (%v): %.200s", err, out)
	}
	s.goroutines = status.Goroutines
	if s.rss, _, err = sd.mem(); err != nil {
		return s, err
	}
	fdDir := fmt.Sprintf("/proc/%d/fd", sd.pid())
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return s, err
	}
	s.fds = len(fds)
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && !strings.HasPrefix(target, "socket:") {
			s.files++
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", sd.pid()))
	if err != nil {
		return s, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			fmt.Sscan(strings.TrimSpace(v), &s.threads)
		}
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"snugd.db", &s.db}, {"snugd.db-wal", &s.wal}} {
		if fi, err := os.Stat(filepath.Join(sd.dataDir, f.name)); err == nil {
			*f.dst = fi.Size()
		}
	}
	st.mu.Lock()
	lat := st.lat
	st.lat = nil
	st.mu.Unlock()
	s.p50, s.p99 = percentile(lat, 50), percentile(lat, 99)
	s.netOK, s.netFailed = st.netOK.Load(), st.netFailed.Load()
	s.reads, s.writes, s.failed = st.reads.Load(), st.writes.Load(), st.failed.Load()
	return s, nil
}

// maxSockets bounds the sockets snugd may hold at once under the soak's
// load: the client's 16 connections, one upstream connection for each of
// the 64 requests that can be in flight, the listeners and a few
// short-lived reads, writes and ctl calls. Sockets come and go with the
// requests in flight (a stall elsewhere on the machine raises them for a
// while); a leak would pass the bound within the hour.
const maxSockets = 16 + 64 + 8

// maxGoroutineDrift is how far the goroutines' median may rise from the
// first judged half to the second: a few requests more in flight at the
// samples (each holds a handful), not a leak.
const maxGoroutineDrift = 32

// judgeSoak applies the soak's bounds to the samples after the warm-up:
// RSS grows less than 5% from the first judged sample to the last; the
// open files that are not sockets and the threads never exceed their most
// in the first half; the goroutines' median in the second half is within
// maxGoroutineDrift of the first half's (they come and go with the
// requests in flight; a leak of one per request or per write would add
// thousands); the sockets stay under maxSockets; the WAL stays
// under 16 MiB; and nothing failed.
func judgeSoak(cfg soakConfig, samples []soakSample, st *soakStats, refused int64) error {
	var judged []soakSample
	for _, s := range samples {
		if s.at >= cfg.warmup {
			judged = append(judged, s)
		}
	}
	if len(judged) < 4 {
		return fmt.Errorf("only %d samples after the %v warm-up: run longer", len(judged), cfg.warmup)
	}
	first, last := judged[0], judged[len(judged)-1]
	early, late := judged[:len(judged)/2], judged[len(judged)/2:]
	var maxRSS, maxWAL int64
	maxSock := 0
	for _, s := range judged {
		maxRSS = max(maxRSS, s.rss)
		maxSock = max(maxSock, s.fds-s.files)
	}
	for _, s := range samples {
		maxWAL = max(maxWAL, s.wal)
	}
	most := func(ss []soakSample, f func(soakSample) int) int {
		m := 0
		for _, s := range ss {
			m = max(m, f(s))
		}
		return m
	}
	files := func(s soakSample) int { return s.files }
	threads := func(s soakSample) int { return s.threads }
	filesEarly, filesLate := most(early, files), most(late, files)
	thrEarly, thrLate := most(early, threads), most(late, threads)
	median := func(ss []soakSample) int {
		g := make([]int, len(ss))
		for i, s := range ss {
			g[i] = s.goroutines
		}
		slices.Sort(g)
		return g[len(g)/2]
	}
	grEarly, grLate := median(early), median(late)
	growth := float64(last.rss-first.rss) / float64(first.rss) * 100
	peak := float64(maxRSS-first.rss) / float64(first.rss) * 100
	var bad bytes.Buffer
	check := func(ok bool, format string, a ...any) {
		verdict := "ok  "
		if !ok {
			verdict = "FAIL"
			fmt.Fprintf(&bad, format+"; ", a...)
		}
		fmt.Printf("%s "+format+"\n", append([]any{verdict}, a...)...)
	}
	fmt.Printf("\njudged from %v (the warm-up before it is not): %d samples\n", cfg.warmup, len(judged))
	check(growth < 5, "RSS %.1f → %.1f MiB (%+.1f%%; peak %+.1f%%), bound +5%%", mib(first.rss), mib(last.rss), growth, peak)
	check(filesLate <= filesEarly, "open files that are not sockets: at most %d in the first half, %d in the second", filesEarly, filesLate)
	check(thrLate <= thrEarly, "threads: at most %d in the first half, %d in the second", thrEarly, thrLate)
	check(grLate <= grEarly+maxGoroutineDrift, "goroutines: median %d in the first half, %d in the second (%d → %d, at most %d), bound +%d",
		grEarly, grLate, first.goroutines, last.goroutines, most(judged, func(s soakSample) int { return s.goroutines }), maxGoroutineDrift)
	check(maxSock <= maxSockets, "sockets: %d → %d, at most %d, bound %d", first.fds-first.files, last.fds-last.files, maxSock, maxSockets)
	check(maxWAL <= 16<<20, "WAL at most %.1f MiB over the run, bound 16 MiB", mib(maxWAL))
	check(last.netFailed == 0 && last.failed == 0, "%d /v1/net answered, %d failed; %d reads, %d writes, %d failed%s", last.netOK, last.netFailed, last.reads, last.writes, last.failed, firstErr(st))
	check(refused == 0, "the upstream refused %d requests for a missing credential", refused)
	if n := st.netSkipped.Load(); n > 0 {
		fmt.Printf("note %d /v1/net requests not sent: 64 were in flight\n", n)
	}
	if bad.Len() > 0 {
		return fmt.Errorf("soak bounds not held: %s", strings.TrimSuffix(bad.String(), "; "))
	}
	return nil
}

func firstErr(st *soakStats) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.firstErr == "" {
		return ""
	}
	return " (first: " + st.firstErr + ")"
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
