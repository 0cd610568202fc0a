package main

// The Go floor: what the same job costs a minimal Go program. "bench
// goproxy" is net/http's server and net/http/httputil's ReverseProxy over
// one keep-alive http.Transport to the upstream, setting the credential
// header, and nothing else: no gate, no journal, no scrub, no frame. It
// runs pinned to the same CPU as nginx and snugd, so the table shows how
// much of snugd's cost is the two net/http hops every Go proxy pays and
// how much is snugd's own.

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// runGoProxy is "bench goproxy -listen ADDR -ca FILE".
func runGoProxy(args []string) error {
	fs := flag.NewFlagSet("goproxy", flag.ContinueOnError)
	listen := fs.String("listen", "", "listen address")
	ca := fs.String("ca", "", "the run's CA")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pem, err := os.ReadFile(*ca)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSClientConfig:     &tls.Config{RootCAs: roots, ServerName: upstreamHost},
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
	target := &url.URL{Scheme: "https", Host: upstreamAddr + ":443"}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = upstreamHost
			r.Out.Header.Set(keyHeader, benchKey)
		},
		Transport: tr,
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	return srv.Serve(l)
}

// startGoProxy runs "bench goproxy" (this program again) pinned to cpu.
func startGoProxy(dir, cpu, caFile string) (*proc, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := startProc("go proxy", exec.Command("taskset", "-c", cpu, self, "goproxy", "-listen", addr, "-ca", caFile), filepath.Join(dir, "goproxy.log"))
	if err != nil {
		return nil, "", err
	}
	base := "http://" + addr
	if _, err := waitHealthy(p, base+"/small", 10*time.Second); err != nil {
		p.stop()
		return nil, "", fmt.Errorf("go proxy: %w: %s", err, p.logTail())
	}
	return p, base, nil
}

func goProxyTarget(p *proc, base string) *target {
	t := nginxTarget(p, base)
	t.name = "go"
	return t
}
