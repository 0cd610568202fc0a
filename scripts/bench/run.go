package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// A cell is one load shape of the table.
type cell struct {
	big  bool
	conc int
	n    int // requests per repetition (scaled)
}

func (c cell) String() string {
	size := "small"
	if c.big {
		size = "1 MiB"
	}
	return fmt.Sprintf("%s, %d concurrent", size, c.conc)
}

// sample is what one repetition of one cell gave one target.
type sample struct {
	cpuPerReq  time.Duration
	throughput float64
	conns      int64
	n          int
}

func run(cfg config) error {
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
	if cfg.startOnly {
		starts, err := measureStarts(cfg, hostsFile, caFile, emptyDir)
		if err != nil {
			return err
		}
		fmt.Printf("snugd bench (start only), %s; %d repetitions, medians; snugd pinned to CPU %s\n\n",
			time.Now().UTC().Format("2006-01-02 15:04 UTC"), cfg.reps, cfg.serverCPU)
		fmt.Println("| figure | direct | nginx | Go proxy | snugd | snugd / nginx | snugd / Go proxy |")
		fmt.Println("|---|---|---|---|---|---|---|")
		printStarts(cfg, starts)
		return nil
	}
	up, err := startUpstream(cfg.upNS, certFile, keyFile)
	if err != nil {
		return err
	}
	defer up.stop()

	ng, ngBase, err := startNginx(cfg.dir, cfg.serverCPU, caFile)
	if err != nil {
		return err
	}
	defer ng.stop()
	gp, gpBase, err := startGoProxy(cfg.dir, cfg.serverCPU, caFile)
	if err != nil {
		return err
	}
	defer gp.stop()
	dataDir, port, err := newDataDir(filepath.Join(cfg.dir, "snugd-load"))
	if err != nil {
		return err
	}
	sd, _, err := startSnugd(cfg.snugd, dataDir, cfg.serverCPU, hostsFile, caFile, emptyDir, port)
	if err != nil {
		return err
	}
	defer sd.stop()
	token, err := sd.setUp()
	if err != nil {
		return fmt.Errorf("set up snugd: %w", err)
	}
	direct, err := directTarget(caFile)
	if err != nil {
		return err
	}
	targets := []*target{direct, nginxTarget(ng, ngBase), goProxyTarget(gp, gpBase), snugdTarget(sd, token)}

	// Idle: after start and set-up, before any load.
	idle := map[string]int64{}
	for _, t := range targets[1:] {
		rss, _, err := t.proc.mem()
		if err != nil {
			return err
		}
		idle[t.name] = rss
	}
	// Warm up every path (connections, TLS sessions, caches).
	for _, t := range targets {
		for _, big := range []bool{false, true} {
			if _, err := load(t, up, big, 4, 50, 30*time.Second); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	if _, refused, _ := up.conns(); refused != 0 {
		return fmt.Errorf("the upstream refused %d requests for a missing credential", refused)
	}

	scale := func(n int) int { return max(1, int(float64(n)*cfg.scale)) }
	cells := []cell{
		{false, 1, scale(1000)},
		{false, 16, scale(4000)},
		{true, 1, scale(100)},
		{true, 16, scale(400)},
	}
	samples := map[string]map[cell][]sample{}
	lats := map[string]map[cell][]time.Duration{}
	for _, t := range targets {
		samples[t.name] = map[cell][]sample{}
		lats[t.name] = map[cell][]time.Duration{}
	}
	reps := cfg.reps
	if cfg.profileOnly {
		reps = 0
	}
	for rep := range reps {
		for ci, c := range cells {
			// Interleave: rotate which target goes first in each round.
			for k := range targets {
				t := targets[(k+rep+ci)%len(targets)]
				r, err := load(t, up, c.big, c.conc, c.n, 60*time.Second)
				if err != nil {
					return fmt.Errorf("rep %d, %v: %w", rep+1, c, err)
				}
				samples[t.name][c] = append(samples[t.name][c], sample{
					cpuPerReq:  r.cpu / time.Duration(r.n),
					throughput: float64(r.n) / r.wall.Seconds(),
					conns:      r.conns,
					n:          r.n,
				})
				lats[t.name][c] = append(lats[t.name][c], r.lat...)
			}
		}
		fmt.Fprintf(os.Stderr, "bench: repetition %d of %d done\n", rep+1, cfg.reps)
	}

	if cfg.perf != "" {
		for _, pc := range []struct {
			big  bool
			conc int
		}{{false, 16}, {true, 16}, {false, 1}, {true, 1}} {
			if err := perfRecord(cfg, sd, snugdTarget(sd, token), up, pc.big, pc.conc); err != nil {
				fmt.Fprintln(os.Stderr, "bench: perf:", err)
			}
		}
		if cfg.profileOnly {
			sd.stop()
			ng.stop()
			gp.stop()
			return perfStart(cfg, hostsFile, caFile, emptyDir)
		}
	}

	// Peak: 64 concurrent 1 MiB answers through each proxy.
	peakCell := cell{true, 64, scale(256)}
	peak := map[string]int64{}
	for _, t := range targets {
		r, err := load(t, up, true, 64, peakCell.n, 120*time.Second)
		if err != nil {
			return fmt.Errorf("64 concurrent: %w", err)
		}
		samples[t.name][peakCell] = append(samples[t.name][peakCell], sample{throughput: float64(r.n) / r.wall.Seconds(), conns: r.conns, n: r.n})
		if t.proc != nil {
			_, hwm, err := t.proc.mem()
			if err != nil {
				return err
			}
			peak[t.name] = hwm
		}
	}
	sd.stop()
	ng.stop()
	gp.stop()

	starts, err := measureStarts(cfg, hostsFile, caFile, emptyDir)
	if err != nil {
		return err
	}
	printTable(cfg, cells, peakCell, samples, lats, idle, peak, starts)
	return nil
}

// startSample is one start to healthy.
type startSample struct {
	took time.Duration
	rss  int64
}

// measureStarts seeds a 10-row and a cfg.rows-row data directory, then
// starts the real binary on each, interleaved, cfg.reps times, timing from
// the exec to the first 200 of GET /v1/health. The samples are keyed 0
// (10 rows) and 1 (cfg.rows); with cfg.upgrade, 2 is a start on the
// cfg.rows directory after forgetting the pin re-consent record, as the
// first start under a new registry or build finds it.
func measureStarts(cfg config, hostsFile, caFile, emptyDir string) (map[int][]startSample, error) {
	type dir struct {
		i    int // 0: 10 rows, 1: cfg.rows, 2: cfg.rows after an upgrade
		path string
		port int
	}
	var dirs []dir
	for i, rows := range []int{10, cfg.rows} {
		p, port, err := seed(cfg, fmt.Sprintf("start-%d", i), rows, hostsFile, caFile, emptyDir)
		if err != nil {
			return nil, fmt.Errorf("seed %d rows: %w", rows, err)
		}
		dirs = append(dirs, dir{i, p, port})
	}
	if cfg.upgrade {
		dirs = append(dirs, dir{2, dirs[1].path, dirs[1].port})
	}
	out := map[int][]startSample{}
	for range cfg.reps {
		for _, d := range dirs {
			if d.i == 2 {
				if err := forgetReconsent(d.path); err != nil {
					return nil, err
				}
			}
			s, took, err := startSnugd(cfg.snugd, d.path, cfg.serverCPU, hostsFile, caFile, emptyDir, d.port)
			if err != nil {
				return nil, err
			}
			rss, _, err := s.mem()
			s.stop()
			if err != nil {
				return nil, err
			}
			out[d.i] = append(out[d.i], startSample{took, rss})
		}
	}
	return out, nil
}

// forgetReconsent deletes the pin re-consent record from the stopped
// daemon's snugd.db (daemon/internal/store/reconsent.go names the key):
// the next start finds what the first start after an upgrade finds, a
// record that does not name its registry and build, and checks every row.
func forgetReconsent(dataDir string) error {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dataDir, "snugd.db")+"?_busy_timeout=5000")
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := db.Exec("DELETE FROM snugd_meta WHERE key = 'reconsent_registry'")
	if err != nil {
		return fmt.Errorf("forget the re-consent record: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("forget the re-consent record: %d records, want 1 (did the last start complete its pass?)", n)
	}
	return nil
}

// perfRecord profiles snugd with perf(1) for 8 seconds while it serves the
// small (cfg.perf+"-small") or the 1 MiB body (cfg.perf+"-big") at conc
// concurrent (a suffix "1" names the one-at-a-time profile), bounded in time.
func perfRecord(cfg config, sd *snugd, t *target, up *upstream, big bool, conc int) error {
	if _, err := exec.LookPath("perf"); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := cfg.perf + "-small"
	if big {
		out = cfg.perf + "-big"
	}
	if conc == 1 {
		out += "1"
	}
	rec := exec.CommandContext(ctx, "perf", "record", "-F", "999", "-g", "-p", fmt.Sprint(sd.pid()), "-o", out, "--", "sleep", "8")
	rec.Stdout, rec.Stderr = os.Stderr, os.Stderr
	if err := rec.Start(); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	// The load ends at the time bound, so requests cut off by it fail;
	// only the profile matters here.
	_, _ = load(t, up, big, conc, 100_000, 7*time.Second)
	return rec.Wait()
}

func printTable(cfg config, cells []cell, peakCell cell, samples map[string]map[cell][]sample, lats map[string]map[cell][]time.Duration, idle, peak map[string]int64, starts map[int][]startSample) {
	host, _ := os.Hostname()
	fmt.Printf("snugd bench, %s, %s; %d interleaved repetitions, medians; snugd, nginx and the Go proxy pinned to CPU %s\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, cfg.reps, cfg.serverCPU)
	fmt.Println("| figure | direct | nginx | Go proxy | snugd | snugd / nginx | snugd / Go proxy |")
	fmt.Println("|---|---|---|---|---|---|---|")
	row := func(name string, vals [4]float64, unit func(float64) string, ratio bool) {
		ratios := [2]string{"—", "—"}
		for i, base := range []float64{vals[1], vals[2]} {
			if ratio && base > 0 && vals[3] >= 0 {
				ratios[i] = fmt.Sprintf("%.2f×", vals[3]/base)
			}
		}
		cells := [4]string{}
		for i, v := range vals {
			if v < 0 {
				cells[i] = "—"
			} else {
				cells[i] = unit(v)
			}
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s |\n", name, cells[0], cells[1], cells[2], cells[3], ratios[0], ratios[1])
	}
	us := func(v float64) string { return fmt.Sprintf("%.0f µs", v) }
	perS := func(v float64) string { return fmt.Sprintf("%.0f/s", v) }
	mib := func(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
	num := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	names := [4]string{"direct", "nginx", "go", "snugd"}
	for _, c := range cells {
		var cpu, p50, p99, thr, conns [4]float64
		for i, n := range names {
			var cs, ts []float64
			var opened, sent int
			for _, s := range samples[n][c] {
				cs = append(cs, float64(s.cpuPerReq)/float64(time.Microsecond))
				ts = append(ts, s.throughput)
				opened, sent = opened+int(s.conns), sent+s.n
			}
			cpu[i], thr[i] = median(cs), median(ts)
			conns[i] = float64(opened) * 10_000 / float64(max(sent, 1))
			p50[i] = float64(percentile(lats[n][c], 50)) / float64(time.Microsecond)
			p99[i] = float64(percentile(lats[n][c], 99)) / float64(time.Microsecond)
		}
		cpu[0] = -1
		row("CPU per request, "+c.String(), cpu, us, true)
		row("p50 latency, "+c.String(), p50, us, true)
		row("p99 latency, "+c.String(), p99, us, true)
		row("throughput, "+c.String(), thr, perS, true)
		row("upstream connections opened per 10,000 requests (all repetitions), "+c.String(), conns, num, false)
	}
	var thr [4]float64
	for i, n := range names {
		if s := samples[n][peakCell]; len(s) > 0 {
			thr[i] = s[0].throughput
		}
	}
	row(fmt.Sprintf("throughput, 1 MiB, 64 concurrent (%d requests, once)", peakCell.n), thr, perS, true)
	row("RSS idle (after start and set-up)", [4]float64{-1, float64(idle["nginx"]), float64(idle["go"]), float64(idle["snugd"])}, mib, true)
	row("RSS peak (VmHWM, whole run incl. 64 concurrent 1 MiB)", [4]float64{-1, float64(peak["nginx"]), float64(peak["go"]), float64(peak["snugd"])}, mib, true)
	printStarts(cfg, starts)
}

// printStarts prints the start rows of the table: time to healthy and the
// RSS then, at 10 and cfg.rows rows.
func printStarts(cfg config, starts map[int][]startSample) {
	ms := func(v float64) string { return fmt.Sprintf("%.0f ms", v) }
	mib := func(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
	for i, rows := range []int{10, cfg.rows} {
		var ts, rs []float64
		for _, s := range starts[i] {
			ts = append(ts, float64(s.took)/float64(time.Millisecond))
			rs = append(rs, float64(s.rss))
		}
		fmt.Printf("| start to healthy, %d connection rows | — | — | — | %s | — | — |\n", rows, ms(median(ts)))
		fmt.Printf("| RSS when healthy, %d connection rows | — | — | — | %s | — | — |\n", rows, mib(median(rs)))
	}
	if s := starts[2]; len(s) > 0 {
		var ts, rs []float64
		for _, s := range s {
			ts = append(ts, float64(s.took)/float64(time.Millisecond))
			rs = append(rs, float64(s.rss))
		}
		fmt.Printf("| start to healthy, %d connection rows, first after an upgrade (every row checked for re-consent) | — | — | — | %s | — | — |\n", cfg.rows, ms(median(ts)))
		fmt.Printf("| RSS when healthy, %d connection rows, first after an upgrade | — | — | — | %s | — | — |\n", cfg.rows, mib(median(rs)))
	}
}

// perfStart seeds cfg.rows connection rows and records one start of snugd
// on them with a system-wide perf(1) (the start is a new process; report
// it with perf report --comm snugd) into cfg.perf+"-start".
func perfStart(cfg config, hostsFile, caFile, emptyDir string) error {
	dir, port, err := seed(cfg, "start-profile", cfg.rows, hostsFile, caFile, emptyDir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	rec := exec.CommandContext(ctx, "perf", "record", "-F", "999", "-g", "-a", "-o", cfg.perf+"-start")
	rec.Stdout, rec.Stderr = os.Stderr, os.Stderr
	if err := rec.Start(); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	s, took, err := startSnugd(cfg.snugd, dir, cfg.serverCPU, hostsFile, caFile, emptyDir, port)
	if err == nil {
		rss, _, _ := s.mem()
		s.stop()
		fmt.Fprintf(os.Stderr, "bench: start with %d rows: %v, %.1f MiB\n", cfg.rows, took.Round(time.Millisecond), float64(rss)/(1<<20))
	}
	rec.Process.Signal(os.Interrupt)
	if werr := rec.Wait(); err == nil {
		err = werr
	}
	return err
}
