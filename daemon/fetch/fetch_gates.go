package fetch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/scrub"
	"github.com/snug/snugd/daemon/wire"
	"github.com/snug/snugd/transports"
)

// fetch is one request's state as it moves through the gates. Each field
// is written by one gate and read by later ones.
type Fetch struct {
	Call  NetCall
	Probe bool // the wizard's probe path (TestConnection)
	Start time.Time
	Index *grants.GrantIndex // one snapshot serves every gate

	Req      wire.NetRequest         // gate 1
	parseErr *wire.ParseError        // gate 1, when it refused
	conn     *ConnTarget             // resolution: set for a connection URL
	Target   *url.URL                // resolution: the URL to send, before query credentials
	App      *grants.AppGrants       // gate 2: the acting app's rows only
	Host     string                  // gate 3: target's host, normalized ("" when it does not normalize)
	Grant    *grants.GrantRow        // gate 3
	secrets  map[string]store.Secret // gate 8: the slot's slice, as read once
	lan      bool                    // gate 4: the LAN admission (desktop policy)
	Sidecar  string                  // gate 5: the registered helper id of a sidecar host
	via      transport               // gate 5 (network) or 6a (helper): how the request departs
	approval string                  // gate 6: "", "user", "session" or "standing"
	denial   string                  // gate 6: who or what denied the confirm (a Denied* note)
	Header   http.Header             // gate 7
	SendURL  *url.URL                // gate 8: target with query credentials placed
	pin      string                  // gate 8: the LAN row's certificate pin
	pinned   bool                    // gate 8: the LAN row has a pin, or state that does not say: https only
	PinBad   bool                    // gate 9: the LAN device presented another leaf than the pin (daemon/pairing marks the row)
	token    string                  // gate 8: the helper token, for a helper transport
	scrub    scrub.Set               // gate 8: every value injected
	resp     *upstream               // gate 9

	out           wire.NetResponse // gate 10
	providerError string           // gate 10

	journalID int64 // gate 6b: the row written before the send, completed by record

	failedGate string
	err        *errcode.Error
}

// upstream is what a transport or helper answered.
type upstream struct {
	status int
	header http.Header
	body   []byte
	// release, when set, says the executor owns body outright (the
	// network transports' capped read): gate 10 reads it in place rather
	// than copying it, and run hands the buffer back (zeroed) once the
	// answer is encoded and nothing aliases it. A helper's body has no
	// release: it is copied, as the helper may keep it.
	release func()
}

// done hands an owned body's buffer back; u's body must not be used
// after it.
func (u *upstream) done() {
	if u.release != nil {
		u.release()
		u.release, u.body = nil, nil
	}
}

// refuse builds a gate's refusal. Messages are fixed sentences: they name
// no host, address or value (host-clean). Gate 1 passes the parser's
// message through, which may name a header the app itself sent.
func refuse(code errcode.Code, msg string) *errcode.Error { return errcode.New(code, msg) }

// Gate 1: shape. ParseNetRequest is the hand-written, fail-closed parser of
// the net-request frame (body on GET/HEAD, body cap, STRIP headers,
// strict keys, URL shape).
func (e *Executor) checkShape(_ context.Context, f *Fetch) *errcode.Error {
	r, err := wire.ParseNetRequest(f.Call.Frame)
	if err != nil {
		if pe, ok := errors.AsType[*wire.ParseError](err); ok {
			f.parseErr = pe
			return refuse(pe.Code, pe.Message)
		}
		return refuse(errcode.NetInvalidRequest, "the net-request is malformed")
	}
	f.Req = r
	return nil
}

// Resolution: a connection URL selects the acting app's
// own slot and is rebuilt against its one ceiling host. Translation only:
// the rebuilt URL still runs gates 2–10. Any other URL is parsed as it is.
func (e *Executor) resolveConnection(_ context.Context, f *Fetch) *errcode.Error {
	cu, kind := ParseConnectionURL(f.Req.URL)
	switch kind {
	case NotConnectionURL:
		u, err := url.Parse(f.Req.URL)
		if err != nil {
			return refuse(errcode.NetInvalidRequest, "the url does not parse")
		}
		u.Fragment, u.RawFragment = "", "" // never sent
		f.Target = u
		return nil
	case ConnectionURLMalformed:
		return refuse(errcode.NetInvalidRequest, "the connection URL is malformed")
	}
	row := f.Index.Apps[f.Call.AppID].Row(cu.Slot)
	switch {
	case row == nil:
		// Another app's slot name is an unknown slot here (P3-U15-01).
		return refuse(errcode.NetInvalidRequest, "the app has no connection in that slot")
	case row.Approved():
	case row.Imported:
		return refuse(errcode.NetImportedUnapproved, "the connection was imported and needs approval on this device")
	default:
		return refuse(errcode.NetNotApproved, "the connection is not approved")
	}
	if len(row.Ceiling) != 1 {
		// An empty ceiling too; a symbolic address has one meaning.
		return refuse(errcode.NetAmbiguousConnection, "the connection does not name exactly one host")
	}
	host := row.Ceiling[0]
	u, err := ComposeURL("https", host, cu.PathAndQuery) // a LAN row too: its transport's pinned TLS
	if err != nil {
		return refuse(errcode.NetInvalidRequest, "the connection URL is malformed")
	}
	f.Target, f.conn = u, &ConnTarget{Slot: cu.Slot, Host: host}
	return nil
}

// Gate 2: binding. The acting app is the host-assigned call.AppID and
// nothing in the frame (there is no identity seat); the request sees
// that app's rows only.
func (e *Executor) bindApp(_ context.Context, f *Fetch) *errcode.Error {
	if grants.CheckAppID(f.Call.AppID) != nil {
		return refuse(errcode.NetInvalidRequest, "the request has no host-assigned app identity")
	}
	f.App = f.Index.Apps[f.Call.AppID]
	return nil
}

// Gate 3: grant. The decision order, on the acting app's rows:
//
//  1. approved rows whose frozen ceiling holds the host: exactly one is the
//     grant; two or more refuse NET_AMBIGUOUS_CONNECTION (never a
//     tiebreak);
//  2. no approved row holds it, but unapproved rows' requirements claim it:
//     NET_IMPORTED_UNAPPROVED when every such row is imported, else
//     NET_NOT_APPROVED;
//  3. nobody claims it and the app has an approved row: NET_HOST_BLOCKED;
//  4. otherwise (no approved row at all): NET_NOT_APPROVED.
//
// A host that does not normalize (an IP literal other than an RFC-1918
// dotted quad, a numeric spelling, a trailing dot) is claimed by nobody.
// The pending requirement of a staged change is never read.
func (e *Executor) checkGrant(_ context.Context, f *Fetch) *errcode.Error {
	host, ok := RequestHost(f.Target)
	if ok {
		f.Host = host
	}
	var rows []grants.GrantRow
	if f.App != nil {
		rows = f.App.Rows
	}
	anyApproved, claimants := false, 0
	for i := range rows {
		g := &rows[i]
		if !g.Approved() {
			continue
		}
		anyApproved = true
		if ok && g.InCeiling(host) {
			claimants++
			f.Grant = g
		}
	}
	switch {
	case claimants == 1:
		return nil
	case claimants > 1:
		f.Grant = nil
		return refuse(errcode.NetAmbiguousConnection, "two approved connections claim the host")
	}
	if ok {
		claimed, allImported := false, true
		for i := range rows {
			g := &rows[i]
			if !g.Approved() && g.ClaimsHost(host) {
				claimed = true
				allImported = allImported && g.Imported
			}
		}
		if claimed && allImported {
			return refuse(errcode.NetImportedUnapproved, "the connection was imported and needs approval on this device")
		}
		if claimed {
			return refuse(errcode.NetNotApproved, "the connection for this host is not approved")
		}
	}
	if anyApproved {
		return refuse(errcode.NetHostBlocked, "no approved connection of the app covers the host")
	}
	return refuse(errcode.NetNotApproved, "the app has no approved connection")
}

// requestHost returns the host of u in ceiling form: an RFC-1918 dotted
// quad as it stands, any other host through requirement.NormalizeHost
// (IDNA, lowercase). ok is false when the host normalizes to nothing a
// ceiling can hold.
func RequestHost(u *url.URL) (string, bool) {
	h := u.Hostname()
	if requirement.IsRFC1918Literal(h) {
		return h, true
	}
	n, err := requirement.NormalizeHost(h)
	return n, err == nil
}

// Gate 4: ceiling. https only, and exact membership of the normalized host
// in the grant's frozen ceiling (no suffix, no wildcard). The one
// admission: http or https to an RFC-1918 literal in the ceiling of a row
// that declares lanHost, under the desktop policy.
// The request is sent to the normalized host (punycode), the form the
// ceiling and the TLS check use.
func (e *Executor) checkCeiling(_ context.Context, f *Fetch) *errcode.Error {
	g := f.Grant
	lan := e.Desktop && g.Req.LANHost != nil && requirement.IsRFC1918Literal(f.Host)
	switch f.Target.Scheme {
	case "https":
	case "http":
		if !lan {
			return refuse(errcode.NetSchemeBlocked, "only https is admitted")
		}
	default:
		return refuse(errcode.NetSchemeBlocked, "only https is admitted")
	}
	if !g.InCeiling(f.Host) {
		return refuse(errcode.NetHostBlocked, "no approved connection of the app covers the host")
	}
	f.lan = lan
	if port := f.Target.Port(); port != "" {
		f.Target.Host = net.JoinHostPort(f.Host, port)
	} else {
		f.Target.Host = f.Host
	}
	return nil
}

// sidecarZone is the suffix of the sidecar symbolic hosts (DESIGN.md):
// <helperId>.sidecar.invalid. ".invalid" never resolves (RFC 2606).
const sidecarZone = ".sidecar.invalid"

// Gate 5: SSRF, and the network transport's choice. The public transport
// resolves the host once and checks every answer; its send
// later dials only those addresses. Exactly two classes stand this gate
// down, and only this gate: the LAN class admitted at gate 4 (sent by the
// LAN transport), and the sidecar symbolic host of a registered helper on
// a linked_device row (whose transport gate 6a chooses, after the
// confirm). A name under .invalid is never looked up in DNS: one that
// names no registered helper refuses as a DNS miss would
// (NET_FETCH_FAILED), so a missing helper never falls back to the network.
func (e *Executor) checkSSRF(ctx context.Context, f *Fetch) *errcode.Error {
	if f.lan {
		f.via = lanTransport{e.Lan}
		return nil // stand-down 1: the LAN class (desktop policy)
	}
	if strings.HasSuffix(f.Host, ".invalid") {
		id, ok := strings.CutSuffix(f.Host, sidecarZone)
		if ok && id != "" && !strings.Contains(id, ".") && f.Grant.Req.Kind == requirement.KindLinkedDevice {
			if _, ok := e.Local[id]; ok { // never nil: NewExecutor refuses a nil transport
				f.Sidecar = id
				return nil // stand-down 2: the sidecar symbolic host
			}
		}
		return refuse(errcode.NetFetchFailed, "no local helper serves the connection")
	}
	ctx, cancel := context.WithTimeout(ctx, e.RequestTimeout)
	defer cancel()
	r, err := e.Public.Resolve(ctx, f.Host)
	if err != nil {
		return transportError(err)
	}
	f.via = publicTransport{e.Public, r}
	return nil
}

// mutating reports whether method needs the user's confirmation (gate 6).
func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// Gate 6: confirm. A mutating request needs the user's answer before any
// credential is read. The standing gate is consulted first and wraps
// the session memory; neither is consulted on the probe path,
// whose confirm carries no slot and no body.
//
// Gates 3 and 4 decided on the index snapshot taken when the request
// arrived, and gate 5's lookup and the user's answer can take minutes. So
// whatever the method, the gate ends by re-deciding the grant on the
// current index (regrant): a revoke or a re-approval that narrowed the
// ceiling while the request waited refuses it before any credential is
// read, never after.
func (e *Executor) Confirm(ctx context.Context, f *Fetch) *errcode.Error {
	if err := e.askConfirm(ctx, f); err != nil {
		return err
	}
	return e.regrant(ctx, f)
}

// askConfirm obtains the answer to a mutating request's confirm.
func (e *Executor) askConfirm(ctx context.Context, f *Fetch) *errcode.Error {
	if !mutating(f.Req.Method) {
		return nil
	}
	// The paired host that forwarded the request owns its confirm:
	// unpairing it withdraws the confirm.
	host, _ := hostauth.CallerHost(ctx)
	asked := Confirm{
		AppID:    f.Call.AppID,
		Host:     f.Host,
		Method:   f.Req.Method,
		URL:      f.Target.String(), // the resolved host, no query credential yet
		Slot:     f.Grant.Slot,
		Body:     f.Req.Body,
		Delivery: f.Call.Delivery,
		HostID:   host,
	}
	if f.Probe {
		asked.Slot, asked.Body, asked.Probe = "", "", true
	}
	if !asked.Probe {
		switch e.standing.Decide(ctx, f, asked) {
		case StandingApprove:
			f.approval = "standing"
			return nil
		case standingRefuse:
			return refuse(errcode.NetConfirmDenied, "the request's target sources disagree")
		}
		if e.confirms.SessionAllows(asked.AppID, asked.Host, asked.Method) {
			f.approval = "session"
			return nil
		}
	}
	res, why := e.confirms.Ask(ctx, asked)
	if res != AskAllowed {
		f.denial = why
	}
	switch res {
	case AskFull:
		f.denial = why
		return refuse(errcode.NetConfirmDenied, "too many requests are waiting for the user's confirmation")
	case askDenied:
		f.denial = why
		return refuse(errcode.NetConfirmDenied, "the user did not confirm the request")
	case askUnpaired:
		return refuse(errcode.NetConfirmDenied, "the host that sent the request was unpaired")
	case askShutdown:
		return refuse(errcode.NetConfirmDenied, "snugd is shutting down")
	}
	f.approval = "user"
	return nil
}

// regrant re-runs gates 3 and 4 on the current index when the acting
// app's rows changed since f's snapshot (every committed connection write
// publishes a new entry for its app). The request goes on only when the
// same slot is still the one approved grant covering the host, with the
// same kind and transport class (gate 5's stand-downs depend on both); it
// then uses the current row, whose templates match the credentials read
// next. A change it cannot follow refuses with the code a fresh request
// would get, or NET_NOT_APPROVED.
func (e *Executor) regrant(ctx context.Context, f *Fetch) *errcode.Error {
	idx := e.index.Snapshot()
	app := idx.Apps[f.Call.AppID]
	if app == f.App {
		return nil
	}
	target := *f.Target
	g := &Fetch{Call: f.Call, Req: f.Req, Target: &target, Index: idx, App: app}
	if err := e.checkGrant(ctx, g); err != nil {
		return err
	}
	if err := e.checkCeiling(ctx, g); err != nil {
		return err
	}
	if g.Grant.Slot != f.Grant.Slot || g.Grant.Req.Kind != f.Grant.Req.Kind || g.lan != f.lan {
		return refuse(errcode.NetNotApproved, "the connection changed while the request waited")
	}
	f.Index, f.App, f.Grant = idx, app, g.Grant
	return nil
}

// Gate 6a: local transports. A request to a registered helper departs by
// the helper's transport, chosen here, after gate 6, never before. It then
// runs gates 7–10 like any other request: the strip, the helper token and
// any rendered header template (gate 8), the send with no redirect
// (gate 9), and the cap, scrub and whitelist (gate 10). A helper that
// fails refuses; nothing falls back to the network.
func (e *Executor) chooseLocal(_ context.Context, f *Fetch) *errcode.Error {
	if f.Sidecar == "" {
		return nil
	}
	f.via = helperTransport{id: f.Sidecar, t: e.Local[f.Sidecar], log: e.log}
	return nil
}

// Gate 7: strip. The app's headers, minus every credential-shaped header
// (the C1 belt to gate 1's braces), Accept-Encoding (a compressed body
// would blind gate 10's scrub), the hop-by-hop and transport-owned
// headers, and the method-override headers: many servers take
// X-HTTP-Method-Override: DELETE on a request as a DELETE, so the method
// sent must be the one gate 6 judged (a GET is never confirmed).
func (e *Executor) strip(_ context.Context, f *Fetch) *errcode.Error {
	f.Header = AppHeader(f.Req.Headers)
	stripRequestHeaders(f.Header)
	return nil
}

// appHeader copies the app's headers into an http.Header, names as sent.
func AppHeader(h map[string]string) http.Header {
	out := make(http.Header, len(h)+4)
	for name, v := range h {
		out[name] = []string{v}
	}
	return out
}

// setInjected sets an injected header, first deleting every app header
// that names the same header in any spelling (case, '_' for '-'), so an
// app can never send a second value beside the injected one.
func setInjected(h http.Header, name, value string) {
	want := headerCanon(name)
	for k := range h {
		if headerCanon(k) == want {
			delete(h, k)
		}
	}
	h.Set(name, value)
}

// headerCanon lowercases name and maps '_' to '-' (the header-name folding).
func headerCanon(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// stripRequestHeaders deletes from h every header an app may not send
// upstream. Names are compared after lowercasing and mapping '_' to '-',
// so non-canonical spellings that slipped past gate 1 go too.
func stripRequestHeaders(h http.Header) {
	for name := range h {
		if wire.CredentialHeader(name) || unsendable(name) {
			delete(h, name)
		}
	}
}

// unsendable reports whether name is Accept-Encoding, hop-by-hop, owned
// by the transport, a method override or a range (a partial answer would
// split a reflected credential past the exact-substring scrub).
func unsendable(name string) bool {
	c := headerCanon(name)
	switch c {
	case "accept-encoding", "connection", "keep-alive", "te", "trailer", "transfer-encoding",
		"upgrade", "host", "content-length", "expect",
		"x-http-method-override", "x-http-method", "x-method-override", "range", "if-range":
		return true
	}
	return strings.HasPrefix(c, "proxy-")
}

// readSlice is the one credential read of a request: the slot's slice,
// kept in f for the token source (an OAuth bearer) and the field values.
func (e *Executor) readSlice(ctx context.Context, f *Fetch) *errcode.Error {
	slice, err := e.ReadSecrets(ctx, f.Call.AppID, f.Grant.Slot)
	if err != nil {
		e.log.Error("read credentials", "app", f.Call.AppID, "slot", f.Grant.Slot, "err", err)
		return refuse(errcode.NetFetchFailed, "the connection's credentials could not be read")
	}
	f.secrets = slice
	return nil
}

// credentials performs the executor's one credential read: the slot's
// slice, field values and the _connection state (for the LAN pin). Every
// value read joins the scrub set.
func (e *Executor) credentials(ctx context.Context, f *Fetch) (map[string]string, *errcode.Error) {
	if err := e.readSlice(ctx, f); err != nil {
		return nil, err
	}
	slice := f.secrets
	values := make(map[string]string, len(slice))
	for name, v := range slice {
		if name == store.ConnectionStateField {
			if !f.lan {
				continue
			}
			st, err := grants.UnmarshalConnState(v)
			if err == nil && st.LANPin != nil {
				f.pin = st.LANPin.Fingerprint
			}
			f.pinned = err != nil || st.LANPin != nil
			continue
		}
		if strings.HasPrefix(name, "_") {
			continue // reserved names are state, never field values
		}
		values[name] = string(v)
		f.scrub.Add(string(v))
	}
	return values, nil
}

// Gate 9: fetch. The request departs by the transport gate 5 or 6a chose,
// bounded by the request timeout. Redirects are never followed on any
// transport: a 3xx, 304 included, is NET_REDIRECT_BLOCKED.
func (e *Executor) send(ctx context.Context, f *Fetch) *errcode.Error {
	if f.via == nil { // unreachable: gate 5 or 6a chose one
		return refuse(errcode.NetFetchFailed, "the upstream could not be reached")
	}
	ctx, cancel := context.WithTimeout(ctx, e.RequestTimeout)
	defer cancel()
	resp, err := f.via.send(ctx, f)
	if err != nil {
		return err
	}
	f.resp = resp
	if resp.status >= 300 && resp.status <= 399 {
		return refuse(errcode.NetRedirectBlocked, "the upstream answered with a redirect, which is never followed")
	}
	return nil
}

// transportError maps the transports' vocabulary to registry codes
// (transports/errors.go). The cause is never shown.
func transportError(err error) *errcode.Error {
	var blocked *transports.BlockedError
	switch {
	case errors.As(err, &blocked):
		return refuse(errcode.NetSSRFBlocked, "the destination address is refused")
	case errors.Is(err, transports.ErrBodyTooLarge):
		return refuse(errcode.NetSizeExceeded, "the response body exceeds 1048576 bytes")
	case errors.Is(err, transports.ErrNoAddress):
		return refuse(errcode.NetFetchFailed, "the host has no address")
	case errors.Is(err, transports.ErrPinRequired), errors.Is(err, transports.ErrPinMismatch):
		return refuse(errcode.NetFetchFailed, "the device's certificate is not the paired one")
	}
	return refuse(errcode.NetFetchFailed, "the upstream could not be reached")
}

// encoded reports whether h names a content coding other than identity.
func encoded(h http.Header) bool {
	for name, vs := range h {
		if !strings.EqualFold(name, "Content-Encoding") {
			continue
		}
		for _, v := range vs {
			for c := range strings.SplitSeq(v, ",") {
				if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
					return true
				}
			}
		}
	}
	return false
}

// Gate 10: read. The body arrived capped at 1 MiB while reading (the
// transports). Every injected value is scrubbed from the body
// and from the whitelisted header values, raw and percent-encoded; a
// model-bound result loses every RFC-1918 literal too (§14.2); the headers
// are whitelist-filtered and content-length recomputed. An upstream
// status outside 100–599 is NET_FETCH_FAILED, and so is a body in a
// content coding (gzip and the like): the scrub would be blind to it.
func (e *Executor) readResponse(_ context.Context, f *Fetch) *errcode.Error {
	r := f.resp
	if len(r.body) > wire.MaxNetResponseBody {
		return refuse(errcode.NetSizeExceeded, "the response body exceeds 1048576 bytes")
	}
	if r.status < 100 || r.status > 599 {
		return refuse(errcode.NetFetchFailed, "the upstream answered with an invalid status")
	}
	if len(r.body) > 0 && encoded(r.header) {
		// Gate 7 sends no Accept-Encoding, so this is unasked for, and
		// the scrub cannot see a value inside a compressed body.
		return refuse(errcode.NetFetchFailed, "the upstream answered with a content-encoded body")
	}
	llm := f.Call.Delivery.llm()
	clean := func(s string) string {
		s = f.scrub.Apply(s)
		if llm {
			s = scrub.PrivateIPv4(s)
		}
		return s
	}
	// The body is read where the transport put it (for the network
	// transports, a pooled read buffer that run hands back once the
	// answer is encoded): the UTF-8 pass, the scrub and the encoder all
	// read those bytes in place, and no string is made of them, so
	// nothing derived from the answer (an error extract, a scrub result,
	// a log line) can alias memory the next request reuses. A body that
	// is not valid UTF-8, or that the scrub rewrites, is a new slice; the
	// common case is neither, and costs no copy but the frame's.
	text := wire.ValidTextBytes(r.body)
	body := f.scrub.ApplyBytes(text.Bytes())
	if llm {
		body = scrub.PrivateIPv4Bytes(body)
	}
	if !sameBytes(body, text.Bytes()) {
		text = wire.ValidTextBytes(body)
	}
	if r.status >= 400 {
		// The error body is copied into a string for the extract, and
		// the extract cloned: it may be a substring of raw, and
		// NetResult outlives the request: a short extract must not keep
		// the whole body alive.
		raw := string(r.body)
		f.providerError = strings.Clone(scrub.ProviderErrorText(raw, f.scrub.Values(), func(s string) string {
			if llm {
				s = scrub.PrivateIPv4(s)
			}
			return f.conn.ScrubResolved(s) // nil-safe: a no-op without a connection URL
		}))
	}
	resp, err := wire.NewNetResponseBytes(f.Req.RequestID, f.Req.URL, r.status, r.header, text)
	if err != nil {
		code, _ := errcode.CodeOf(err)
		return refuse(code, "the upstream answer cannot be delivered")
	}
	// The whitelisted values are scrubbed as they cross (joined, when a
	// name repeats: a value split over two lines is caught too);
	// content-length is the one the encoder computed, not upstream's.
	for name, v := range resp.Headers {
		if name != "content-length" {
			resp.Headers[name] = clean(v)
		}
	}
	f.out = resp
	return nil
}

// sameBytes reports whether a and b are the same bytes in memory (not
// merely equal ones): whether a scrub returned its input.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
