package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A target is one of the three ways to reach the upstream.
type target struct {
	name   string
	client *http.Client
	proc   *proc // the serving process; nil for the direct client
	// request builds the i-th request for the small or the big body.
	request func(i int64, big bool) (*http.Request, error)
	// check judges an answer (status and body as read).
	check func(status int, body []byte, big bool) error
}

// want is the body length each size must come back with.
func want(big bool) int {
	if big {
		return bigBodyBytes
	}
	return len(smallBody)
}

func path(big bool) string {
	if big {
		return "/big"
	}
	return "/small"
}

func keepAlive() *http.Transport {
	return &http.Transport{Proxy: nil, MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
}

func plainCheck(status int, body []byte, big bool) error {
	if status != http.StatusOK || len(body) != want(big) {
		return fmt.Errorf("answer %d with %d bytes, want 200 with %d", status, len(body), want(big))
	}
	return nil
}

func directTarget(caFile string) (*target, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tr := keepAlive()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, ServerName: upstreamHost}
	tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", upstreamAddr+":443")
	}
	return &target{
		name:   "direct",
		client: &http.Client{Transport: tr},
		request: func(_ int64, big bool) (*http.Request, error) {
			req, err := http.NewRequest("GET", "https://"+upstreamHost+path(big), nil)
			if err == nil {
				req.Header.Set(keyHeader, benchKey)
			}
			return req, err
		},
		check: plainCheck,
	}, nil
}

func nginxTarget(p *proc, base string) *target {
	return &target{
		name:   "nginx",
		client: &http.Client{Transport: keepAlive()},
		proc:   p,
		request: func(_ int64, big bool) (*http.Request, error) {
			return http.NewRequest("GET", base+path(big), nil)
		},
		check: plainCheck,
	}
}

func snugdTarget(s *snugd, token string) *target {
	return &target{
		name:   "snugd",
		client: &http.Client{Transport: keepAlive()},
		proc:   s.proc,
		request: func(i int64, big bool) (*http.Request, error) {
			body := fmt.Sprintf(`{"appId":%q,"delivery":"app","frame":{"type":"snug:net-request","v":1,"requestId":"b-%d","instanceId":"bench","url":"https://%s%s","method":"GET"}}`,
				benchApp, i, upstreamHost, path(big))
			req, err := http.NewRequest("POST", s.base+"/v1/net", strings.NewReader(body))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
			}
			return req, err
		},
		// A full decode would cost the shared client CPU; the frame's status
		// and its size say enough (escaping only lengthens the body, and a
		// frame replaced by NET_SIZE_EXCEEDED has no status).
		check: func(status int, body []byte, big bool) error {
			if status != http.StatusOK || !bytes.Contains(body, []byte(`"status":200`)) || len(body) < want(big) {
				return fmt.Errorf("answer %d with %d bytes: %.200s", status, len(body), body)
			}
			return nil
		},
	}
}

// result is one measured load run.
type result struct {
	n       int           // requests that succeeded
	wall    time.Duration // first request sent to last answer read
	cpu     time.Duration // the serving process's CPU over the run
	conns   int64         // upstream connections accepted over the run
	lat     []time.Duration
	errs    int
	firstEr error
}

// load sends n requests from conc workers, stopping early at limit. The
// serving process's CPU and the upstream's connection count are read just
// before and just after.
func load(t *target, up *upstream, big bool, conc, n int, limit time.Duration) (result, error) {
	var r result
	c0, _, err := up.conns()
	if err != nil {
		return r, err
	}
	var cpu0 time.Duration
	if t.proc != nil {
		if cpu0, err = t.proc.cpu(); err != nil {
			return r, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var (
		next   atomic.Int64
		mu     sync.Mutex
		wg     sync.WaitGroup
		errs   int
		first  error
		lats   = make([]time.Duration, 0, n)
		start  = time.Now()
		perWkr = make([][]time.Duration, conc)
	)
	for w := range conc {
		wg.Go(func() {
			var buf bytes.Buffer
			for {
				i := next.Add(1)
				if i > int64(n) || ctx.Err() != nil {
					return
				}
				req, err := t.request(i, big)
				if err != nil {
					mu.Lock()
					errs++
					first = err
					mu.Unlock()
					return
				}
				began := time.Now()
				resp, err := t.client.Do(req.WithContext(ctx))
				if err == nil {
					buf.Reset()
					_, err = io.Copy(&buf, io.LimitReader(resp.Body, 4<<20))
					resp.Body.Close()
					if err == nil {
						err = t.check(resp.StatusCode, buf.Bytes(), big)
					}
				}
				took := time.Since(began)
				if err != nil {
					mu.Lock()
					errs++
					if first == nil {
						first = err
					}
					mu.Unlock()
					continue
				}
				perWkr[w] = append(perWkr[w], took)
			}
		})
	}
	wg.Wait()
	r.wall = time.Since(start)
	for _, l := range perWkr {
		lats = append(lats, l...)
	}
	r.lat, r.n, r.errs, r.firstEr = lats, len(lats), errs, first
	if t.proc != nil {
		cpu1, err := t.proc.cpu()
		if err != nil {
			return r, err
		}
		r.cpu = cpu1 - cpu0
	}
	c1, _, err := up.conns()
	if err != nil {
		return r, err
	}
	r.conns = c1 - c0
	if r.errs > 0 {
		return r, fmt.Errorf("%s: %d of %d requests failed, first: %v", t.name, errs, n, first)
	}
	if r.n < n {
		return r, fmt.Errorf("%s: only %d of %d requests within %v", t.name, r.n, n, limit)
	}
	return r, nil
}

// percentile returns the p-th percentile (0–100) of ds (sorted in place).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(p / 100 * float64(len(ds)-1))
	return ds[i]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
