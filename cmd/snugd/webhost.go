package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
// from itself (the runner documents), nothing else. CSP has no source
// expression for an IPv6 literal: a host-source's host is "*" or labels
// of letters, digits and "-" (checked 2026-12,
// https://www.w3.org/TR/CSP3/#grammardef-host-source), and Chromium drops
// a source it cannot parse, so the page reaches snugd at 127.0.0.1 or
// localhost.
const hostPageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' http://127.0.0.1:* http://localhost:*; frame-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// runnerCSP is the app runner document's policy, the same as
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
// With --app DIR it also serves the micro-app in DIR, for its author.
func cmdWebhost(ctx context.Context, e env, args []string) int {
	flags := flag.NewFlagSet("snugd webhost", flag.ContinueOnError)
	flags.SetOutput(e.stderr)
	port := flags.Int("port", defaultWebhostPort, "the loopback port to serve the reference host on")
	appDir := flags.String("app", "", "a micro-app directory to run in the host: DIR/index.html, and DIR/connections.json (its requirements) if it has connections")
	if code, ok := parseArgs(flags, args); !ok {
		return code
	}
	if *port < 1 || *port > 65535 {
		fmt.Fprintf(e.stderr, "snugd webhost: --port must be between 1 and 65535\n")
		return exitUsage
	}
	var dev *devApp
	if *appDir != "" {
		var err error
		if dev, err = openDevApp(*appDir); err != nil {
			fmt.Fprintf(e.stderr, "snugd webhost: --app: %v\n", err)
			return exitUsage
		}
	}
	h, err := webhostHandler(dev)
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
	if dev != nil {
		fmt.Fprintf(e.stdout, "your app %s (%s) is listed first; edits show when you run it again\n", dev.id, dev.dir)
	}
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
//	/dev/app.json           with --app: {id, title, connections}, read
//	                        from the directory on each request (404 without)
//	/dev/run                with --app: DIR/index.html as a runner document
//
// Only the SDK's two files may be read by pages of other origins (a host
// imports snugd-host.js from here); every other answer is this origin's.
func webhostHandler(dev *devApp) (http.Handler, error) {
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
	mux.HandleFunc("GET /snugd-host.js", shared(static(sdk.Files, "snugd-host.js", "text/javascript; charset=utf-8")))
	mux.HandleFunc("GET /snugd-host.d.ts", shared(static(sdk.Files, "snugd-host.d.ts", "text/plain; charset=utf-8")))
	mux.HandleFunc("GET /dev/app.json", func(w http.ResponseWriter, r *http.Request) {
		if dev == nil {
			http.NotFound(w, r)
			return
		}
		b, err := dev.describe()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	mux.HandleFunc("GET /dev/run", func(w http.ResponseWriter, r *http.Request) {
		if dev == nil {
			http.NotFound(w, r)
			return
		}
		b, err := dev.page()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", runnerCSP)
		w.Write(b)
	})
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

// shared lets a page of any origin read the answer: the SDK's files are
// public, carry nothing of anyone's, and are fetched without credentials
// (a module script is a CORS request). A host elsewhere imports them.
func shared(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Cross-Origin-Resource-Policy", "cross-origin")
		h(w, r)
	}
}

// headers adds what every answer of the reference host carries, and
// refuses a Host that is not a loopback name: a page of another site whose
// name was rebound to 127.0.0.1 reads nothing here, an author's app
// included.
func headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, _, err := net.SplitHostPort(r.Host); err != nil || host != "127.0.0.1" && host != "localhost" && host != "::1" {
			http.Error(w, "the Host header is not allowed", http.StatusForbidden)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
		h.ServeHTTP(w, r)
	})
}

// Bounds on the files of an app directory.
const (
	maxDevPage  = 4 << 20
	maxDevConns = 256 << 10
)

// A devApp is the micro-app directory of `snugd webhost --app DIR`: its
// index.html (the app: one HTML file whose scripts and styles are inline
// or from the runner's CDN allowlist, as snugd runs every app) and, if it
// has connections, connections.json (a JSON array of requirements, which
// the page proposes on the user channel). Both are read again on each
// request, so an edit shows the next time the app runs. No other file of
// the directory is ever served.
type devApp struct {
	dir string
	id  string // the appId the reference host gives it
}

// openDevApp checks dir once, so that a mistake is reported at the
// start rather than in the page.
func openDevApp(dir string) (*devApp, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	d := &devApp{dir: abs, id: devAppID(filepath.Base(abs))}
	if _, err := d.describe(); err != nil {
		return nil, err
	}
	return d, nil
}

// devAppID is "dev-" and the directory's name in lowercase letters,
// digits and dashes.
func devAppID(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	id := strings.Trim(b.String(), "-")
	if len(id) > 60 {
		id = strings.TrimRight(id[:60], "-")
	}
	if id == "" {
		return "dev-app"
	}
	return "dev-" + id
}

// page reads the app's HTML.
func (d *devApp) page() ([]byte, error) {
	b, err := readDevFile(filepath.Join(d.dir, "index.html"), maxDevPage)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no index.html: a micro-app is one HTML file", d.dir)
	}
	return b, err
}

// describe answers /dev/app.json: the app's id, its title and its
// requirements as written (snugd validates each when it is proposed).
func (d *devApp) describe() ([]byte, error) {
	html, err := d.page()
	if err != nil {
		return nil, err
	}
	title := d.id
	if t := titleRE.FindSubmatch(html); t != nil {
		title = strings.TrimSpace(string(t[1]))
	}
	conns := []json.RawMessage{}
	b, err := readDevFile(filepath.Join(d.dir, "connections.json"), maxDevConns)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		var objs []map[string]json.RawMessage
		if err := json.Unmarshal(b, &objs); err != nil {
			return nil, fmt.Errorf("%s: want a JSON array of requirements: %v", filepath.Join(d.dir, "connections.json"), err)
		}
		for i, o := range objs {
			var slot string
			if json.Unmarshal(o["slot"], &slot) != nil || slot == "" {
				return nil, fmt.Errorf("%s: requirement %d has no slot", filepath.Join(d.dir, "connections.json"), i+1)
			}
			raw, _ := json.Marshal(o)
			conns = append(conns, raw)
		}
	}
	return json.Marshal(struct {
		ID          string            `json:"id"`
		Title       string            `json:"title"`
		Connections []json.RawMessage `json:"connections"`
	}{d.id, title, conns})
}

// readDevFile reads a regular file of at most limit bytes.
func readDevFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}
