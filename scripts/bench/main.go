// Command bench measures snugd side by side with nginx (a header-injecting
// reverse proxy) and a direct Go client, all against one TLS upstream in a
// network namespace (issue 15, item 5). scripts/bench.sh builds it and snugd,
// creates the namespaces and runs it inside the client namespace; it is not
// meant to be run by hand.
//
// Layout: snugd, nginx and this program (the load client) share the client
// namespace; the upstream is this program again ("bench upstream"), started
// with ip netns exec in the upstream namespace on a documentation address.
// The two namespaces are joined only to each other. snugd reaches the
// upstream through its ordinary public transport: it runs under unshare -m
// with a bind-mounted /etc/hosts that maps the connection's host to the
// upstream, and SSL_CERT_FILE trusting the run's own CA.
//
// Every load loop is bounded in count and in time.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// The addresses and names of the run (a documentation block, the one admitted as public).
const (
	upstreamHost = "api.bench.test"
	upstreamAddr = "203.0.113.10"
	benchKey     = "bench-key-7c41e0d2" // the api_key credential both proxies inject
	keyHeader    = "X-Api-Key"
	smallBody    = `{"id":1,"name":"lamp","on":true,"level":42}`
	bigBodyBytes = 1 << 20 // the response body cap, exactly
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "upstream" {
		if err := runUpstream(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench upstream:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "soak" {
		if err := runSoak(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench soak:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "goproxy" {
		if err := runGoProxy(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench goproxy:", err)
			os.Exit(1)
		}
		return
	}
	var cfg config
	flag.StringVar(&cfg.snugd, "snugd", "", "the snugd binary to measure")
	flag.StringVar(&cfg.dir, "dir", "", "a scratch directory (removed by the caller)")
	flag.StringVar(&cfg.upNS, "upns", "spf-up", "the upstream's network namespace")
	flag.IntVar(&cfg.reps, "reps", 5, "interleaved repetitions")
	flag.Float64Var(&cfg.scale, "scale", 1, "scales every request count")
	flag.IntVar(&cfg.rows, "rows", 100_000, "connection rows for the large start")
	flag.StringVar(&cfg.serverCPU, "cpu", "1", "the CPU the serving processes are pinned to (taskset -c)")
	flag.StringVar(&cfg.perf, "perf", "", "if set, record snugd with perf(1) under the small and the 1 MiB load at 16 concurrent into FILE-small and FILE-big, and both at 1 concurrent into FILE-small1 and FILE-big1")
	flag.BoolVar(&cfg.profileOnly, "profile-only", false, "with -perf: set up, warm up, record the load profiles and one start on -rows rows (FILE-start), and stop (no table)")
	flag.BoolVar(&cfg.startOnly, "start-only", false, "measure only the start to healthy at 10 and -rows rows (no upstream, nginx or load)")
	flag.BoolVar(&cfg.upgrade, "upgrade", true, "also time the first start on -rows rows after an upgrade (the pin re-consent record forgotten before each)")
	flag.Parse()
	if cfg.snugd == "" || cfg.dir == "" {
		fmt.Fprintln(os.Stderr, "usage: bench -snugd BIN -dir DIR (run scripts/bench.sh)")
		os.Exit(2)
	}
	start := time.Now()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "bench: done in %v\n", time.Since(start).Round(time.Second))
}

type config struct {
	snugd, dir, upNS, serverCPU, perf string
	reps, rows                        int
	scale                             float64
	profileOnly, startOnly, upgrade   bool
}
