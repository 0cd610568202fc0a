package fetch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/ident"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/scrub"
	"github.com/snug/snugd/daemon/wire"
	"github.com/snug/snugd/transports"
)

// The connected-fetch executor. This is the one place that both
// reads credential values and calls the network (P3-X14-01): nothing else
// in snugd calls readSecrets and a transport for the same request.
//
// # The pipeline
//
// Every request, the app's and the chat lane's alike, and the wizard's
// probe, runs the ordered gate list in gates(): shape → resolution →
// binding → grant → ceiling → SSRF → confirm → local (6a) → journal (6b)
// → strip → inject → fetch → read. Each gate either ends the request with its
// registry code or passes it on; gates() is the only place the order is
// written and there is no other path. The transport is chosen once, where
// the spec places it: gate 5 for the network (public, or LAN), gate 6a
// for a local helper; strip, inject, send and read then run for every
// transport. Gate 8 asks the credential source of the grant's kind
// (fetch_inject.go). There is no strictness knob: Config can choose the
// transport policy between the spec's two profiles and
// nothing else that a gate reads.
//
// Decisions that do not need the network or a credential come first: the
// grant and ceiling are read from the in-memory index (one atomic load, no
// SQL); gate 5 resolves the host once and every later dial goes to those
// checked addresses only; the confirm of gate 6 is decided before the one
// credential read (readSecrets) at gate 8, and gate 6 ends by re-deciding
// the grant on the current index, so nothing that changed while the
// request waited is outrun. A request refused at gates 1–6a never reads a
// credential.
//
// # What the app sees
//
// The net-response's url is the URL the app sent (for a connection URL the
// snug-connection:// form), never the credentialed or resolved one.
// Refusal messages are fixed sentences that name no host or value, and an
// error message of a connection-URL request is scrubbed of the resolved
// host as a second line. Response bodies and whitelisted header values are
// scrubbed of every value the request injected (field values, rendered
// template values, the helper token, the OAuth bearer), raw and in its
// percent-encoded spellings (exact substrings, a second line behind
// the ceiling, nothing more). A result bound for a model (DeliveryLLM) has
// every RFC-1918 IPv4 literal scrubbed as well (§14.2).
//
// An upstream error status is a response, not an executor verdict: the app
// gets the status and the scrubbed body. NetResult.ProviderError carries,
// beside it, a ≤160-character extract for a host that shows the error to a
// human; it is never put into the frame.
//
// # Files
//
// fetch.go (this file): the executor's receiver and dependencies, Net,
// TestConnection and the gate list; fetch_gates.go: the gates and the one
// credential read; fetch_inject.go: gate 8's credential sources, one per
// kind (templates, the OAuth bearer, the helper token); fetch_transport.go:
// the transports of gate 9 (public, LAN, local helper); connurl.go: connection URLs;
// confirm.go: the confirm broker, the session memory and the
// withdrawal of a host's confirms; standing.go: standing approvals; side.go: the guarded client of side calls; fetch_journal.go: a
// request's journal entry. The grant index gates 3–4 read is
// daemon/grants' (index.go), the journal daemon/journal. Gate 10's scrub,
// the scrub and the provider-error extract are pure functions in daemon/scrub.

// Snapshots is what the executor reads of the grant book: the current
// grant index, one atomic load, no SQL (see grants.GrantIndex).
type Snapshots interface {
	Snapshot() *grants.GrantIndex
}

// Owners says whether the caller of ctx may reach an app (grants.Book):
// listing and addressing confirms and standing approvals follow it.
type Owners interface {
	AppVisible(ctx context.Context, appID string) (bool, error)
}

// Defaults for the zero values of Config's executor fields.
const (
	DefaultConfirmTimeout = 2 * time.Minute
	DefaultRequestTimeout = 30 * time.Second
)

// TransportPolicy chooses between the spec's two transport profiles.
// It can only ever choose between these two; no other gate
// is configurable.
type TransportPolicy string

const (
	// PolicyDesktop admits the LAN device class: http or https to an
	// RFC-1918 literal already in the ceiling of a lanHost row, sent by the
	// LAN transport with the row's certificate pin. The zero value means
	// desktop (snugd runs on the user's machine).
	PolicyDesktop TransportPolicy = "desktop"
	// PolicyBrowser is byte-identical to the spec's browser profile: no LAN
	// admission at gate 4, no LAN stand-down at gate 5.
	PolicyBrowser TransportPolicy = "browser"
)

// Delivery says where a result goes: to the app (the executor's ordinary
// scrub) or to a model (§14.2: every RFC-1918 literal scrubbed too).
type Delivery string

const (
	DeliveryApp Delivery = "app"
	DeliveryLLM Delivery = "llm"
)

// llm reports whether the harder scrub applies. Anything but DeliveryApp,
// the zero value included, is treated as model-bound: fail closed.
func (d Delivery) llm() bool { return d != DeliveryApp }

// NetCall is one request for the executor: the snug:net-request frame
// exactly as the app posted it, the host-assigned identity of the app that
// sent it (never read from the frame), and where the answer
// goes.
type NetCall struct {
	AppID    string
	Frame    []byte
	Delivery Delivery
}

// NetResult is the executor's answer.
type NetResult struct {
	// Frame is the encoded snug:net-response, ready to write as it is; nil
	// when Answer is false.
	Frame []byte
	// Answer is false when gate 1 recovered no requestId: the frame is
	// never answered.
	Answer bool
	// Code is the registry code of an error answer, "" for a response
	// (whatever its upstream status).
	Code errcode.Code
	// Status is the upstream status of a response, 0 otherwise.
	Status int
	// ProviderError is, for an upstream status of 400 or more, a scrubbed
	// extract of the provider's error of at most 160 characters for
	// a host that shows it to a human. It is never in Frame.
	ProviderError string

	// pooled is Frame's buffer when it is a pooled one (fetch_frame.go):
	// Release hands it back.
	Pooled *frameBuf
}

// LocalTransport is a local helper transport (DESIGN.md), chosen
// at gate 6a and sent by at gate 9: the linked-device issue implements it
// over the helper protocol. Do sends one request to the helper and returns
// its answer; the token is the helper token from the slot's credential
// slice (gate 8's helperSource). It must honour ctx and should return its
// body whole; the executor caps it at 1 MiB all the same.
type LocalTransport interface {
	Do(ctx context.Context, req LocalRequest) (LocalResponse, error)
}

// LocalRequest is a request departing to a helper at gate 9. Header has
// gate 7's strip applied and the rendered header templates (if any) set.
type LocalRequest struct {
	AppID        string
	Slot         string
	Method       string
	PathAndQuery string
	Header       http.Header
	Body         string
	Token        string // the helper token: a credential value
}

// LocalResponse is a helper's answer. It gets gate 10 like any other.
type LocalResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// TokenSource supplies the access token of an OAuth-kind connection at
// gate 8 (daemon/pairing implements it, refreshing inside its own
// ceiling-checked place). It is given what gate 8 read: the row's kind and
// the slot's credential slice, so a token that needs no refresh costs no
// further read. An error ends the request NET_AUTH_FAILED with a fixed
// message; its text is only logged.
type TokenSource interface {
	AccessToken(ctx context.Context, req TokenRequest) (string, error)
}

// TokenRequest is what gate 8 hands the token source.
type TokenRequest struct {
	AppID, Slot string
	Kind        requirement.Kind
	// Slice is the slot's credential slice as gate 8 read it: the
	// tokens and the connection state under their reserved names.
	Slice map[string]store.Secret
}

// executor is the connected-fetch executor: the gate pipeline and
// every dependency it has, fixed at New. It is the one place that both
// reads credential values and calls the network (P3-X14-01). *Daemon
// holds one and forwards Net and TestConnection to it; nothing else in
// the package runs a gate.
type Executor struct {
	// index is the grant and ceiling index (daemon/grants), loaded once per
	// request; the daemon's writers publish it.
	index    Snapshots
	owners   Owners           // who may see a confirm or a standing approval
	confirms *ConfirmBroker   // gate 6
	standing *StandingGate    // gate 6, before the session memory
	journal  *journal.Journal // one entry per request
	// readSecrets is the one credential read (the grant book's cache):
	// gate 8 calls it at most once per request.
	ReadSecrets func(ctx context.Context, appID, slot string) (map[string]store.Secret, error)
	// scrubs shares gate 10's compiled spellings between requests that
	// inject the same values (the secret cache's, forgotten with it).
	scrubs *scrub.Cache
	// sources inject each kind's credential at gate 8 (fetch_inject.go);
	// a kind without an entry gets templateSource.
	sources map[requirement.Kind]credentialSource

	// The transports: gate 5 chooses public or LAN, gate 6a a helper.
	Public *transports.Public
	Lan    *transports.LAN
	Local  map[string]LocalTransport

	// answered is the daemon's follow-up on an answer, after the
	// journal: daemon/pairing marks a token-claim row whose bridge refused
	// its credentials, or a LAN row whose certificate changed. Nil does
	// nothing.
	answered func(ctx context.Context, f *Fetch, res NetResult)

	log            *slog.Logger
	now            func() time.Time
	Desktop        bool
	RequestTimeout time.Duration
}

// execDeps are the executor's parts that the daemon owns and shares with
// its writers: the index, the broker, the standing gate, the journal and
// the credential read.
type ExecDeps struct {
	Index       Snapshots
	Owners      Owners
	Confirms    *ConfirmBroker
	Standing    *StandingGate
	Journal     *journal.Journal
	ReadSecrets func(ctx context.Context, appID, slot string) (map[string]store.Secret, error)
	Scrubs      *scrub.Cache
	Answered    func(ctx context.Context, f *Fetch, res NetResult)
	Log         *slog.Logger
	Now         func() time.Time

	// From Config: the transport policy, the transports, the per-phase
	// timeout, the OAuth token source and the registry (helper tokens).
	Policy         TransportPolicy
	Public         *transports.Public
	Lan            *transports.LAN
	Local          map[string]LocalTransport
	RequestTimeout time.Duration
	Tokens         TokenSource
	Registry       *registry.Registry
}

// checkPolicy reports whether the transport policy is the desktop one,
// refusing anything but the two profiles.
func checkPolicy(p TransportPolicy) (desktop bool, err error) {
	switch p {
	case "", PolicyDesktop:
		return true, nil
	case PolicyBrowser:
		return false, nil
	}
	return false, fmt.Errorf("daemon: transport policy %q is neither desktop nor browser", p)
}

func NewExecutor(deps ExecDeps) (*Executor, error) {
	desktop, err := checkPolicy(deps.Policy)
	if err != nil {
		return nil, err
	}
	// Gate 5 stands down for a helper's sidecar name when Local has an
	// entry for it: a nil entry would pass that and fail at the send.
	for id, lt := range deps.Local {
		if lt == nil {
			return nil, fmt.Errorf("fetch: helper %q has no transport", id)
		}
	}
	e := &Executor{
		index:          deps.Index,
		owners:         deps.Owners,
		confirms:       deps.Confirms,
		standing:       deps.Standing,
		journal:        deps.Journal,
		ReadSecrets:    deps.ReadSecrets,
		scrubs:         deps.Scrubs,
		answered:       deps.Answered,
		Public:         deps.Public,
		Lan:            deps.Lan,
		Local:          deps.Local,
		log:            deps.Log,
		now:            deps.Now,
		Desktop:        desktop,
		RequestTimeout: deps.RequestTimeout,
	}
	if e.Public == nil {
		e.Public = &transports.Public{}
	}
	if e.Public.Answers == nil {
		// Gate 5 reuses a vetted answer for a while (transports.Answers):
		// never a refusal, and the dial goes to exactly the addresses
		// that passed the check.
		e.Public.Answers = &transports.Answers{}
	}
	if e.Lan == nil {
		e.Lan = &transports.LAN{}
	}
	if e.RequestTimeout <= 0 {
		e.RequestTimeout = DefaultRequestTimeout
	}
	e.sources = credentialSources(deps.Tokens)
	e.sources[requirement.KindLinkedDevice] = helperSource{reg: deps.Registry}
	return e, nil
}

// closeIdle closes the transports' idle upstream connections.
func (e *Executor) CloseIdle() {
	e.Public.CloseIdleConnections()
	e.Lan.CloseIdleConnections()
}

// TransportPolicy reports the policy in force (for ctl status).
func (e *Executor) TransportPolicy() TransportPolicy {
	if e.Desktop {
		return PolicyDesktop
	}
	return PolicyBrowser
}

// A gate is one step of the pipeline. It returns nil to pass the request
// on, or the *errcode.Error that ends it. run is a method expression, so
// the list binds nothing per request.
type gate struct {
	name string
	run  func(e *Executor, ctx context.Context, f *Fetch) *errcode.Error
}

// gates lists, in order, every step every request takes:
// there is no other path. The transport is chosen once, where the spec
// places it: gate 5 for the network (public, or LAN), gate 6a for a local
// helper; strip, inject, send and read then run for every transport. Each
// gate is a small method with its own table test; this is the only place
// the order is written down.
func Gates() []gate {
	return []gate{
		{"shape", (*Executor).checkShape},             // 1: NET_INVALID_REQUEST
		{"resolution", (*Executor).resolveConnection}, // NET_INVALID_REQUEST, NET_IMPORTED_UNAPPROVED, NET_NOT_APPROVED, NET_AMBIGUOUS_CONNECTION
		{"binding", (*Executor).bindApp},              // 2: NET_INVALID_REQUEST (no host-assigned identity)
		{"grant", (*Executor).checkGrant},             // 3: NET_NOT_APPROVED, NET_IMPORTED_UNAPPROVED, NET_AMBIGUOUS_CONNECTION, NET_HOST_BLOCKED
		{"ceiling", (*Executor).checkCeiling},         // 4: NET_SCHEME_BLOCKED, NET_HOST_BLOCKED
		{"ssrf", (*Executor).checkSSRF},               // 5: NET_SSRF_BLOCKED, NET_FETCH_FAILED; chooses the network transport
		{"confirm", (*Executor).Confirm},              // 6: NET_CONFIRM_DENIED; decided before any credential is read; the grant re-decided
		{"local", (*Executor).chooseLocal},            // 6a: chooses the local helper transport, after gate 6
		{"journal", (*Executor).journalSend},          // 6b: NET_FETCH_FAILED when the request cannot be journaled; a mutating request's row is written before the send
		{"strip", (*Executor).strip},                  // 7: never refuses
		{"inject", (*Executor).inject},                // 8: NET_AUTH_FAILED, NET_FETCH_FAILED, NET_HOST_BLOCKED, NET_SCHEME_BLOCKED
		{"fetch", (*Executor).send},                   // 9: NET_REDIRECT_BLOCKED, NET_SSRF_BLOCKED, NET_SIZE_EXCEEDED, NET_FETCH_FAILED
		{"read", (*Executor).readResponse},            // 10: NET_SIZE_EXCEEDED, NET_FETCH_FAILED
	}
}

// Net runs one snug:net-request through the executor and returns the
// answer. It blocks while a confirm is parked; cancelling ctx (the caller
// went away) cancels the request and denies its own parked confirm. Net is
// safe for concurrent use.
func (e *Executor) Net(ctx context.Context, call NetCall) NetResult { return e.net(ctx, call) }

func (e *Executor) net(ctx context.Context, call NetCall) NetResult {
	f := &Fetch{Call: call, Start: e.now(), Index: e.index.Snapshot()}
	f.scrub.UseCache(e.scrubs)
	return e.Run(ctx, f, Gates())
}

// TestConnection runs the requirement's testRequest (always GET) of
// (appID, slot) through the same pipeline, on the wizard's probe path: the
// confirm gets no slot and no body, so no standing approval and no
// session memory ever answers it. The probe addresses the row's first
// declared API host (for a LAN row its collected literal, over https with
// the row's pin) with the testRequest's pathAndQuery, composed as a URL.
// Errors: BAD_REQUEST for an invalid app id or slot, CONNECTION_NOT_FOUND
// for no row, NOT_FOUND when the requirement has no testRequest; every
// executor verdict is in the NetResult.
func (e *Executor) TestConnection(ctx context.Context, appID, slot string) (NetResult, error) {
	return e.testConnection(ctx, appID, slot)
}

func (e *Executor) testConnection(ctx context.Context, appID, slot string) (NetResult, error) {
	if err := grants.CheckAppID(appID); err != nil {
		return NetResult{}, err
	}
	if err := grants.CheckSlot(slot); err != nil {
		return NetResult{}, err
	}
	idx := e.index.Snapshot()
	row := idx.Apps[appID].Row(slot)
	if row == nil {
		return NetResult{}, errcode.New(errcode.ConnectionNotFound, "no connection in that slot")
	}
	if row.Req == nil || row.Req.TestRequest == nil || len(row.Req.DeclaredAPIHosts) == 0 {
		return NetResult{}, errcode.New(errcode.NotFound, "the requirement has no test request")
	}
	// https, a LAN row's too (the LAN transport's pinned TLS).
	u, err := ComposeURL("https", row.Req.DeclaredAPIHosts[0], row.Req.TestRequest.PathAndQuery)
	if err != nil {
		return NetResult{}, errcode.New(errcode.NotFound, "the requirement's test request does not compose")
	}
	frame, err := wire.Encode(wire.NetRequest{
		RequestID:  "probe-" + ident.Random(8),
		InstanceID: "snugd-probe",
		URL:        u.String(),
		Method:     http.MethodGet,
	})
	if err != nil {
		return NetResult{}, errcode.New(errcode.NotFound, "the requirement's test request does not form a valid request")
	}
	f := &Fetch{Call: NetCall{AppID: appID, Frame: frame, Delivery: DeliveryApp}, Probe: true, Start: e.now(), Index: idx}
	f.scrub.UseCache(e.scrubs)
	return e.Run(ctx, f, Gates()), nil
}

// run passes f through gates in order, then journals it and answers: the
// answer is returned only once its journal entry is committed, and a
// request whose entry cannot be committed answers the journal's refusal
// instead (NET_FETCH_FAILED, the disk is full or read-only).
func (e *Executor) Run(ctx context.Context, f *Fetch, gates []gate) NetResult {
	for _, g := range gates {
		if err := g.run(e, ctx, f); err != nil {
			f.failedGate, f.err = g.name, err
			break
		}
	}
	res := e.answer(f)
	if err := e.record(f, res); err != nil {
		res.Release()
		res = e.unrecorded(f, err)
	}
	if e.answered != nil {
		e.answered(ctx, f, res)
	}
	if f.resp != nil {
		// The answer is encoded: nothing aliases the body any more.
		f.out = wire.NetResponse{}
		f.resp.done()
	}
	return res
}

// answer encodes f's outcome as a net-response.
func (e *Executor) answer(f *Fetch) NetResult {
	if f.err != nil {
		var frame wire.Frame
		if f.parseErr != nil {
			a, ok := f.parseErr.Answer()
			if !ok {
				return NetResult{Code: f.err.Code}
			}
			frame = a
		} else {
			msg := f.err.Msg
			if f.conn != nil {
				msg = f.conn.ScrubResolved(msg) // error-path text is host-clean
			}
			frame = wire.NetErrorResponse(f.Req.RequestID, f.Req.URL, errcode.New(f.err.Code, msg))
		}
		b, err := wire.Encode(frame)
		if err != nil {
			e.log.Error("encode net error answer", "code", string(f.err.Code), "err", err)
			return NetResult{Code: f.err.Code}
		}
		return NetResult{Frame: b, Answer: true, Code: f.err.Code}
	}
	resp := f.out
	b, replaced, buf, err := encodeAnswer(resp)
	if err != nil {
		e.log.Error("encode net answer", "err", err)
		b, _ = wire.Encode(wire.NetErrorResponse(f.Req.RequestID, f.Req.URL, errcode.New(errcode.HostError, "the answer could not be encoded")))
		return NetResult{Frame: b, Answer: b != nil, Code: errcode.HostError}
	}
	if replaced {
		// Encode turned an oversized frame into NET_SIZE_EXCEEDED.
		code := errcode.NetSizeExceeded
		f.failedGate, f.err = "read", errcode.New(code, "the response exceeds the net frame size class")
		return NetResult{Frame: b, Answer: true, Code: code}
	}
	return NetResult{Frame: b, Answer: true, Status: resp.Status, ProviderError: f.providerError, Pooled: buf}
}

// composeURL builds scheme://host<pathAndQuery> by URL composition, never
// string concatenation: pathAndQuery is parsed as a reference that must
// hold only a path and a query, so "/@evil.com" stays a path on host.
func ComposeURL(scheme, host, pathAndQuery string) (*url.URL, error) {
	ref, err := url.Parse(pathAndQuery)
	if err != nil {
		return nil, err
	}
	if ref.Scheme != "" || ref.Host != "" || ref.User != nil || ref.Opaque != "" || ref.Fragment != "" ||
		len(ref.Path) == 0 || ref.Path[0] != '/' {
		return nil, errors.New("not a path and query")
	}
	return &url.URL{Scheme: scheme, Host: host, Path: ref.Path, RawPath: ref.RawPath, RawQuery: ref.RawQuery}, nil
}
