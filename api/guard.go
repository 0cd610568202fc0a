package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hostauth"
)

// The security chain (DESIGN.md, loopback API security). Browsers let any
// web page send requests to http://127.0.0.1:<port>; DNS rebinding took the
// whole API of Ollama (CVE-2024-28224) and Tailscale and Syncthing fixed
// the same class. So every caller is hostile until proven otherwise, and
// the chain below is snugd's own code, run on every request before its
// handler, in this order:
//
//  1. security headers on every response, refusals included;
//  2. TCP: the Host header must be 127.0.0.1:<port>, [::1]:<port> or
//     localhost:<port> (the listener's own port): 403 otherwise, without
//     echoing the value;
//  3. any protocol upgrade (WebSocket, h2c) and Sec-Fetch-Mode: no-cors
//     are refused;
//  4. Origin: "null", a malformed or repeated Origin, and on the ctl
//     socket any Origin at all, are refused;
//  5. the route is matched from the route table (404, 405; on TCP the ctl
//     routes do not exist); an OPTIONS preflight is answered here, and
//     only for an origin the route admits (an authed route's, for any
//     web origin: what it lets through is refused at step 6 or 7);
//  6. an Origin is admitted per route: authed routes only a paired web
//     host's origin, open routes as their originRule says; CORS headers
//     (exact origin, Vary: Origin, never *, never credentials) go only to
//     an admitted origin, but for one refusal: a page on an authed route
//     reads 401 NOT_PAIRED, and nothing else, when its origin is not
//     paired (notPaired);
//  7. TCP, authed routes: the bearer token, bound to its origin (401,
//     403; from a page, 401 NOT_PAIRED), with failures rate-limited per
//     origin and per token (429; a
//     valid token is never held back); the request's context is bound to
//     the host's pairing, so unpairing cancels it; a redeem is never held
//     back here: a wrong verifier counts against its pairing (denied at
//     the fifth) and the origin's failure budget, which only turns its
//     answer into 429, and a right one always passes (redeem handler);
//     pairing requests have their own limit, per origin for a page and
//     per host name for a desktop request (pair handler);
//  8. the body: any Content-Type but JSON is 415 (which closes text/plain
//     CSRF); a Content-Length over the route's limit is 413 before a byte
//     is read, and the body is wrapped in http.MaxBytesReader;
//  9. the route's deadlines;
//  10. for a host, the app the route names in its path: one the host
//     does not own and was not given is 404 APP_NOT_FOUND (owners.go in
//     daemon; routes.go's appScope says how each route reaches an app).
//  11. the route matched at step 5 runs its handler: the route table is
//     the one router (echo provides the handler's Context, never a
//     second match).
//
// GET routes only read: no handler of a GET route calls a writer.
//
// Echo's CORS middleware is not used: it does not stop a disallowed simple
// request from reaching its handler. Go's http.CrossOriginProtection
// covers part of step 4, but it trusts same-site requests and cannot know
// which origins are paired, so the chain does the whole job itself.

// ctxKey keys the request context values the chain sets.
type ctxKey int

const (
	paramsKey ctxKey = iota
)

// listenerChain is one listener's security chain: the TCP listener's or
// the ctl socket's, each over its own route table.
type listenerChain struct {
	s    *Server
	ctl  bool
	tab  *table
	echo *echo.Echo // makes each handler's Context; it routes nothing
	// hosts are the Host values admitted on TCP; set by Serve (or
	// TCPHandler) from the listener's port.
	hosts []string
}

func (ch *listenerChain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ch.s.securityHeaders(w.Header(), ch.ctl)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			ch.s.log.Error("handler panicked", "panic", fmt.Sprint(v))
			apiRefusal(errcode.Internal, "internal error; the daemon's log says why").write(w)
		}
	}()
	if a, ok := ch.check(w, r); !ok {
		ch.s.log.Debug("request refused", "method", r.Method, "code", string(a.body.Error.Code), "status", a.status)
		a.write(w)
	}
}

// check runs the chain. It either serves the request (true) or returns
// the refusal to write (false). A preflight is answered inside it.
func (ch *listenerChain) check(w http.ResponseWriter, r *http.Request) (apiError, bool) {
	// 2. Host.
	if !ch.ctl && !slices.Contains(ch.hosts, r.Host) {
		return apiRefusal(errcode.Forbidden, "the Host header is not allowed"), false
	}
	// 3. Upgrades and no-cors.
	if _, ok := r.Header["Upgrade"]; ok || headerHasToken(r.Header, "Connection", "upgrade") {
		return apiRefusal(errcode.Forbidden, "protocol upgrades (WebSocket) are refused"), false
	}
	if strings.EqualFold(r.Header.Get("Sec-Fetch-Mode"), "no-cors") {
		return apiRefusal(errcode.Forbidden, "no-cors requests are refused"), false
	}
	// 4. Origin.
	origins := r.Header.Values("Origin")
	origin := ""
	switch {
	case len(origins) > 1:
		return apiRefusal(errcode.Forbidden, "one Origin header at most"), false
	case len(origins) == 1 && ch.ctl:
		return apiRefusal(errcode.Forbidden, "the ctl channel serves no web page"), false
	case len(origins) == 1:
		origin = origins[0]
		if origin == "null" || !hostauth.ValidWebOrigin(origin) {
			return apiRefusal(errcode.Forbidden, "this Origin is refused"), false
		}
	}
	// 5. Route.
	escaped := r.URL.EscapedPath()
	rt, params, methods := ch.tab.match(r.Method, escaped)
	if rt == nil && r.Method == http.MethodOptions && len(origins) == 1 && len(methods) > 0 {
		return ch.preflight(w, r, origin, escaped, methods)
	}
	if rt == nil && len(methods) > 0 {
		w.Header().Set("Allow", strings.Join(methods, ", "))
		return apiRefusal(errcode.MethodNotAllowed, "the route does not take this method"), false
	}
	if rt == nil {
		return apiRefusal(errcode.NotFound, "no such route"), false
	}
	ctx := r.Context()
	// 6. Origin admission, and CORS headers for an admitted origin. A
	// page that is not paired reads only that it is not (notPaired).
	if origin != "" {
		if !ch.admits(ctx, rt, params, origin) {
			if !ch.ctl && rt.access == authed {
				return notPaired(w, origin), false
			}
			return apiRefusal(errcode.Forbidden, "this origin is not paired"), false
		}
		corsHeaders(w.Header(), origin)
	}
	// 7. Authentication (TCP; the ctl socket's peer was checked at accept).
	if !ch.ctl {
		switch {
		case rt.access == authed:
			// A valid token always passes: every local process without an
			// Origin shares one bucket, so holding valid tokens back would
			// let any of them lock the desktop hosts out. Tokens are 256
			// random bits; the limit is on failures, which past the burst
			// answer 429 instead of 401.
			token, _ := bearer(r)
			h, err := ch.s.hostBook.Authenticate(ctx, token, origin)
			if err != nil {
				keys := failureKeys(origin, token)
				if wait := ch.s.fails.blocked(keys); wait > 0 {
					return rateLimited(w, wait), false
				}
				ch.s.fails.fail(keys)
				if origin != "" {
					// A page of a paired origin whose own token is
					// unknown here (its host was unpaired while another
					// host of the origin stays paired) or is another
					// host's: the same refusal, which says nothing of
					// whose the token is.
					return notPaired(w, origin), false
				}
				return errorOf(ch.s.log, err), false
			}
			// Unpairing the host cancels this request wherever it is:
			// a parked confirm is denied, an event stream ends.
			bound, release, err := ch.s.hostBook.Bind(ctx, h.ID)
			if err != nil {
				if origin != "" && errors.Is(err, errcode.Unauthorized) {
					return notPaired(w, origin), false // unpaired just now
				}
				return errorOf(ch.s.log, err), false
			}
			defer release()
			// Every daemon call of this request acts for the host: it
			// reaches only the apps the host owns or was given, and what it
			// parks is the host's (unpairing withdraws it).
			ctx = hostauth.WithHost(bound, h.ID)
		}
		// A redeem is not held back here: one that presents the right
		// verifier always passes, and a wrong one is limited per pairing
		// (hostauth denies it at the fifth) and answered 429 past the
		// origin's failure budget (redeem handler).
	}
	// 8. Body.
	if a, ok := checkBody(w, r, rt); !ok {
		return a, false
	}
	// 9. Deadlines.
	if a, ok := ch.deadlines(w, r, rt); !ok {
		return a, false
	}
	// 10. The app a route names in its path, for a host: another host's
	// app answers as one that does not exist, before any handler runs
	// (scopeBody and scopeFiltered routes check in their handlers; the
	// ctl socket's context names no host and sees everything).
	if rt.app == scopePath {
		if err := ch.s.book.CheckApp(ctx, params["appId"]); err != nil {
			return errorOf(ch.s.log, err), false
		}
	}
	// 11. Dispatch: the route matched above is the one that runs.
	ctx = context.WithValue(ctx, paramsKey, params)
	c := ch.echo.NewContext(r.WithContext(ctx), w)
	if err := rt.handle(ch.s, c); err != nil {
		ch.s.httpErrorHandler(err, c)
	}
	return apiError{}, true
}

// admits reports whether route rt admits a request from origin.
func (ch *listenerChain) admits(ctx context.Context, rt *route, params map[string]string, origin string) bool {
	d := ch.s.hostBook
	if rt.access != open {
		return d.PairedOrigin(ctx, origin)
	}
	switch rt.origin {
	case originPairing:
		// Any web origin may ask to pair, for itself only (the daemon
		// checks that the body's origin is this one). Pairing from a page
		// needs this; it is rate-limited, and the request only waits for
		// the administrator.
		return true
	case originRedeem:
		o, ok := d.PairingOrigin(ctx, params["pairingId"])
		return ok && o == origin
	case originNone:
		// The loopback redirect is a top-level navigation, which sends
		// no Origin; a page's fetch of it does, and is refused.
		return false
	default:
		return d.PairedOrigin(ctx, origin)
	}
}

// preflight answers a CORS (and private-network) preflight: only for an
// origin the route admits, with the exact origin, Vary: Origin, never *,
// never Access-Control-Allow-Credentials. Anything else gets a 403
// without a CORS header, which the browser reads as a refusal.
func (ch *listenerChain) preflight(w http.ResponseWriter, r *http.Request, origin, escaped string, methods []string) (apiError, bool) {
	want := r.Header.Get("Access-Control-Request-Method")
	rt, params, _ := ch.tab.match(want, escaped)
	// An authenticated route's preflight is answered for any web origin:
	// the request it lets the page send is refused with NOT_PAIRED before
	// its token is even read unless the origin is paired (step 6), and
	// the page must be able to read that refusal.
	if rt == nil || !(rt.access == authed && !ch.ctl) && !ch.admits(r.Context(), rt, params, origin) {
		return apiRefusal(errcode.Forbidden, "this origin is not paired"), false
	}
	for _, h := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		switch strings.ToLower(strings.TrimSpace(h)) {
		case "", "authorization", "content-type":
		default:
			return apiRefusal(errcode.Forbidden, "only the Authorization and Content-Type request headers are allowed"), false
		}
	}
	h := w.Header()
	corsHeaders(h, origin)
	h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers, Access-Control-Request-Private-Network")
	h.Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
	h.Set("Access-Control-Max-Age", "600")
	if strings.EqualFold(r.Header.Get("Access-Control-Request-Private-Network"), "true") {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
	w.WriteHeader(http.StatusNoContent)
	return apiError{}, true
}

// notPaired is the refusal to a web page (a valid Origin) on an
// authenticated route without a token valid for its origin: its origin was
// never paired, or was unpaired, or the token is not its own. The page may
// read it, and only it: Access-Control-Allow-Origin is the page's exact
// origin (Vary: Origin is on every answer), no header is exposed, and the
// body is one fixed sentence. What it tells the page, that snugd listens
// here and does not know it, any page learns from POST /v1/hosts/pair,
// which admits every web origin; without it a page whose pairing ended
// cannot tell that from snugd being down.
func notPaired(w http.ResponseWriter, origin string) apiError {
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Del("Access-Control-Expose-Headers")
	return apiRefusal(errcode.NotPaired, "this origin is not paired with snugd: pair again")
}

// corsHeaders admits origin to read the response.
func corsHeaders(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "Snugd-Version, Retry-After, "+ProviderErrorHeader)
}

// securityHeaders go on every response, refusals included.
func (s *Server) securityHeaders(h http.Header, ctl bool) {
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Snugd-Version", s.version)
	if !ctl {
		h.Set("Vary", "Origin")
	}
}

// checkBody refuses a body that is not JSON (415) or is larger than the
// route takes (413, before a byte is read), and caps what can be read.
func checkBody(w http.ResponseWriter, r *http.Request, rt *route) (apiError, bool) {
	ct := r.Header.Values("Content-Type")
	hasBody := r.ContentLength != 0
	if len(ct) > 1 {
		return apiRefusal(errcode.UnsupportedMediaType, "one Content-Type header at most"), false
	}
	if len(ct) == 1 || hasBody {
		mt := ""
		if len(ct) == 1 {
			mt = ct[0]
		}
		if !isJSON(mt) && (rt.rawType == "" || !sameMediaType(mt, rt.rawType)) {
			return apiRefusal(errcode.UnsupportedMediaType, "the body must be application/json"), false
		}
	}
	if r.ContentLength > rt.limit {
		return apiRefusal(errcode.PayloadTooLarge, fmt.Sprintf("this route takes a body of at most %d bytes", rt.limit)), false
	}
	if rt.limit == 0 {
		r.Body = http.NoBody
		if hasBody {
			return apiRefusal(errcode.PayloadTooLarge, "this route takes no body"), false
		}
		return apiError{}, true
	}
	r.Body = http.MaxBytesReader(w, r.Body, rt.limit)
	return apiError{}, true
}

// isJSON reports whether a Content-Type is application/json, with at most
// a charset parameter that says UTF-8.
func isJSON(v string) bool {
	mt, params, err := mime.ParseMediaType(v)
	if err != nil || mt != "application/json" {
		return false
	}
	for k, p := range params {
		if k != "charset" || !strings.EqualFold(p, "utf-8") {
			return false
		}
	}
	return true
}

func sameMediaType(v, want string) bool {
	mt, params, err := mime.ParseMediaType(v)
	return err == nil && mt == want && len(params) == 0
}

// deadlines sets the route's read and write deadlines. A long route's body
// is read here, within the server's read timeout, so that its read
// deadline can then be lifted: net/http cancels a request's context when
// the connection's read deadline passes while the handler still runs.
func (ch *listenerChain) deadlines(w http.ResponseWriter, r *http.Request, rt *route) (apiError, bool) {
	rc := http.NewResponseController(w)
	now := time.Now() // deadlines are the network's: never the injected clock
	var err error
	switch rt.class {
	case quick:
		err = rc.SetWriteDeadline(now.Add(quickTimeout))
	case long:
		body, rerr := io.ReadAll(r.Body)
		if rerr != nil {
			return readError(ch.s.log, rerr), false
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		err = rc.SetReadDeadline(time.Time{})
		if err == nil {
			err = rc.SetWriteDeadline(now.Add(longTimeout))
		}
	case stream:
		err = rc.SetReadDeadline(time.Time{})
		if err == nil {
			err = rc.SetWriteDeadline(time.Time{})
		}
	case bulk:
		err = rc.SetReadDeadline(now.Add(bulkTimeout))
		if err == nil {
			err = rc.SetWriteDeadline(now.Add(bulkTimeout))
		}
	}
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		return errorOf(ch.s.log, fmt.Errorf("set deadlines: %w", err)), false
	}
	return apiError{}, true
}

// readError is the answer to a request body that could not be read: 413
// past the route's limit, 408 when it did not arrive within the server's
// read timeout (a slow or stalled sender), 400 when the client broke it
// off. Never a 500: the failure is the sender's.
func readError(log *slog.Logger, err error) apiError {
	var (
		mbe *http.MaxBytesError
		ne  net.Error
	)
	switch {
	case errors.As(err, &mbe):
		return apiRefusal(errcode.PayloadTooLarge, fmt.Sprintf("the request body is larger than the route's %d bytes", mbe.Limit))
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return apiRefusal(errcode.RequestTimeout, "the request body did not arrive in time")
	default:
		log.Debug("request body unreadable", "err", err)
		return apiRefusal(errcode.BadRequest, "the request body could not be read")
	}
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
// Tokens travel only there: never in a query string, where they would
// reach logs and histories.
func bearer(r *http.Request) (string, bool) {
	vs := r.Header.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(vs[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// failureKeys are the rate-limit keys of a request: its origin ("" for a
// caller without one: every local process shares it, since every caller's
// address is 127.0.0.1) and, when it carries one, its token's hash.
func failureKeys(origin, token string) []string {
	keys := []string{"origin " + origin}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		keys = append(keys, "token "+hex.EncodeToString(sum[:16]))
	}
	return keys
}

func rateLimited(w http.ResponseWriter, wait time.Duration) apiError {
	return rateLimitedMsg(w, wait, "too many failed attempts; retry later")
}

func rateLimitedMsg(w http.ResponseWriter, wait time.Duration, msg string) apiError {
	w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
	return apiRefusal(errcode.RateLimited, msg)
}

// headerHasToken reports whether a comma-separated header holds token.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// allowedHosts are the Host values the TCP listener admits on port.
func allowedHosts(port int) []string {
	p := strconv.Itoa(port)
	return []string{net.JoinHostPort("127.0.0.1", p), net.JoinHostPort("::1", p), net.JoinHostPort("localhost", p)}
}

// pathUnescape unescapes one path segment, refusing what no identifier
// holds: invalid UTF-8 and control characters.
func pathUnescape(seg string) (string, error) {
	v, err := url.PathUnescape(seg)
	if err != nil {
		return "", err
	}
	if !plainText(v) {
		return "", fmt.Errorf("path segment holds invalid characters")
	}
	return v, nil
}

// plainText reports whether an identifier is valid UTF-8 without control
// characters: what an appId holds, in a path or in a body. Identifiers are
// printed by snugd ctl, where an escape sequence could redraw the screen.
func plainText(v string) bool {
	return utf8.ValidString(v) && strings.IndexFunc(v, unicode.IsControl) < 0
}
