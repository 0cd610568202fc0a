package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/snug/snugd/api/sdk"
	"github.com/snug/snugd/daemon/starter"
)

// defaultWebhostPort is where `snugd webhost` serves the reference host.
const defaultWebhostPort = 4780

// hostPageCSP is the reference host page's own policy: its scripts and
// styles from itself, connections only to a loopback snugd, frames only
// from itself (the runner documents), nothing else.
const hostPageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' http://127.0.0.1:* http://localhost:* http://[::1]:*; frame-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// runnerCSP is the app runner document's policy (Part I C2), the same as
// the SDK's RUNNER_CSP, plus the sandbox directive, so that the document is
// sandboxed even when it is opened on its own, outside the host's iframe.
const runnerCSP = "default-src 'none'; " +
	"script-src 'unsafe-inline' https://cdn.jsdelivr.net https://cdnjs.cloudflare.com https://unpkg.com; " +
	"style-src 'unsafe-inline' https://cdn.jsdelivr.net https://cdnjs.cloudflare.com https://unpkg.com; " +
	"img-src data: blob:; font-src data: https://cdn.jsdelivr.net https://cdnjs.cloudflare.com https://unpkg.com; " +
	"media-src data: blob:; connect-src 'none'; frame-src 'none'; worker-src 'none'; form-action 'none'; " +
	"base-uri 'none'; sandbox allow-scripts"

// cmdWebhost serves the reference browser host (api/sdk/host) and the host
// SDK on a loopback port. It is a static file server: it holds no token and
// talks to no daemon; the page it serves pairs with snugd from the browser.
func cmdWebhost(ctx context.Context, e env, args []string) int {
	flags := flag.NewFlagSet("snugd webhost", flag.ContinueOnError)
	flags.SetOutput(e.stderr)
	port := flags.Int("port", defaultWebhostPort, "the loopback port to serve the reference host on")
	if code, ok := parseArgs(flags, args); !ok {
		return code
	}
	if *port < 1 || *port > 65535 {
		fmt.Fprintf(e.stderr, "snugd webhost: --port must be between 1 and 65535\n")
		return exitUsage
	}
	h, err := webhostHandler()
	if err != nil {
		fmt.Fprintf(e.stderr, "snugd webhost: %v\n", err)
		return exitNo
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(e.stderr, "snugd webhost: cannot listen on 127.0.0.1:%d: %v\n", *port, errors.Unwrap(err))
		return exitNo
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(e.stdout, "the reference host is at http://127.0.0.1:%d/ (Ctrl-C stops it)\n", *port)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(e.stderr, "snugd webhost: %v\n", err)
		return exitNo
	}
	return exitOK
}

// A webStarter is one bundled starter as the reference host lists it.
type webStarter struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

var titleRE = regexp.MustCompile(`(?is)<title>([^<]{1,80})</title>`)

// webhostHandler serves:
//
//	/                       the reference host (host/index.html)
//	/host.js, /host.css     its script and style
//	/snugd-host.js, .d.ts   the SDK
//	/starters.json          the bundled starters [{id, title}]
//	/starters/ID/index.html a starter's HTML byte for byte (text/plain: the
//	                        host hashes it for the install channel)
//	/run/ID                 the same HTML as a runner document, with the
//	                        runner CSP and its sandbox
func webhostHandler() (http.Handler, error) {
	cat, err := starter.Load()
	if err != nil {
		return nil, fmt.Errorf("load the bundled starters: %w", err)
	}
	host, err := fs.Sub(sdk.Files, "host")
	if err != nil {
		return nil, err
	}
	var list []webStarter
	pages := map[string][]byte{}
	for _, id := range cat.IDs() {
		m, _ := cat.Lookup(id)
		title := id
		if t := titleRE.FindSubmatch(m.HTML); t != nil {
			title = strings.TrimSpace(string(t[1]))
		}
		list = append(list, webStarter{ID: id, Title: title})
		pages[id] = m.HTML
	}
	listJSON, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}

	static := func(fsys fs.FS, name, ctype string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, err := fs.ReadFile(fsys, name)
			if err != nil {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Content-Security-Policy", hostPageCSP)
			w.Write(b)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", static(host, "index.html", "text/html; charset=utf-8"))
	mux.HandleFunc("GET /host.js", static(host, "host.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /host.css", static(host, "host.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /snugd-host.js", static(sdk.Files, "snugd-host.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /snugd-host.d.ts", static(sdk.Files, "snugd-host.d.ts", "text/plain; charset=utf-8"))
	mux.HandleFunc("GET /starters.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(listJSON)
	})
	mux.HandleFunc("GET /starters/{id}/index.html", func(w http.ResponseWriter, r *http.Request) {
		b, ok := pages[r.PathValue("id")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
		w.Write(b)
	})
	mux.HandleFunc("GET /run/{id}", func(w http.ResponseWriter, r *http.Request) {
		b, ok := pages[r.PathValue("id")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", runnerCSP)
		w.Write(b)
	})
	return headers(mux), nil
}

// headers adds what every answer of the reference host carries.
func headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}
