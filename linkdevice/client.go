package linkdevice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// Session errors. A session that ends fails every call in flight with an
// error that is errors.Is ErrSessionClosed; ProtocolError says why when the
// helper broke the protocol.
var (
	// ErrSessionClosed: the helper's session ended (it exited, broke the
	// protocol, or hung) before the call was answered.
	ErrSessionClosed = errors.New("helper session closed")
	// ErrHung: the helper did not answer within the method's timeout
	// (PROTOCOL.md); the session is ended so the helper can be restarted.
	ErrHung = errors.New("helper did not answer in time")
	// ErrResponseTooLarge: the helper's answer carries a body over
	// MaxResponseBody; the caller refuses it as gate 10 would.
	ErrResponseTooLarge = errors.New("helper response body exceeds 1048576 bytes")
	// ErrOutOfBounds: a request breaks PROTOCOL.md's bounds (method, path,
	// headers, body, token) and was not sent.
	ErrOutOfBounds = errors.New("request is outside the helper protocol's bounds")
)

// ProtocolError is a violation of PROTOCOL.md by the helper. Reason is a
// fixed sentence of this package, never bytes the helper sent.
type ProtocolError struct{ Reason string }

func (e *ProtocolError) Error() string { return "helper broke the protocol: " + e.Reason }

func violation(reason string) error { return &ProtocolError{Reason: reason} }

// Notification is one notification from the helper, parsed and checked:
// Method is NotifyQR (QR is set) or NotifyLinkStatus (Status is set).
type Notification struct {
	Method string
	QR     QR
	Status LinkStatus
}

// ClientOptions configures a Client. The zero value is usable.
type ClientOptions struct {
	// Notify receives each notification, in order, from the goroutine
	// reading the helper's output. It must return quickly. Nil drops them.
	Notify func(Notification)
	// MaxLine bounds a line; zero means MaxLine.
	MaxLine int
}

// Notification flood limit (PROTOCOL.md): a burst of floodBurst, then
// floodRate per second. A helper over it broke the protocol.
const (
	floodBurst = 32
	floodRate  = 4
)

// Client speaks the helper protocol to one helper session over a reader
// (the helper's stdout) and a writer (its stdin). Its methods are safe for
// concurrent use; calls may overlap and are matched to answers by id.
// Whatever the helper sends, a Client never panics and never blocks a
// caller past the method's timeout.
type Client struct {
	lines  *lineReader
	w      io.Writer
	notify func(Notification)
	wq     chan []byte

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan rpcMessage
	tokens  float64
	refill  time.Time
	running bool

	done     chan struct{}
	doneOnce sync.Once
	err      error // why the session ended; set before done closes
}

// NewClient returns a Client reading the helper's output from r and
// writing its input to w. Nothing happens until Run.
func NewClient(r io.Reader, w io.Writer, opt ClientOptions) *Client {
	max := opt.MaxLine
	if max <= 0 {
		max = MaxLine
	}
	return &Client{
		lines:   newLineReader(r, max),
		w:       w,
		notify:  opt.Notify,
		wq:      make(chan []byte, 16),
		pending: make(map[int64]chan rpcMessage),
		tokens:  floodBurst,
		done:    make(chan struct{}),
	}
}

// Run reads the helper's output and writes its input until the output
// ends, the helper breaks the protocol, a call goes unanswered past its
// timeout, Close is called or ctx is done. It returns why the session
// ended: nil for a clean end of output or ctx, a *ProtocolError, ErrHung,
// or a read or write error. Run's reading and writing goroutines finish
// when the owner closes the underlying reader and writer (killing the
// helper does): a blocked Read cannot be interrupted otherwise.
func (c *Client) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running {
		c.mu.Unlock()
		return errors.New("client already running")
	}
	c.running = true
	c.refill = time.Now()
	c.mu.Unlock()

	go c.writeLoop() // ends with the session (done) or a write error
	readErr := make(chan error, 1)
	go func() { readErr <- c.readLoop() }() // ends at end of input or a violation
	select {
	case err := <-readErr:
		if errors.Is(err, io.EOF) {
			err = nil
		}
		c.fail(err)
	case <-ctx.Done():
		c.fail(nil)
	case <-c.done:
	}
	return c.err
}

// Done is closed when the session has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the session ended (see Run), once Done is closed.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// Close ends the session: calls in flight fail with ErrSessionClosed.
func (c *Client) Close() { c.fail(nil) }

func (c *Client) fail(err error) {
	c.doneOnce.Do(func() {
		c.err = err
		close(c.done)
	})
}

func (c *Client) closedErr() error {
	if c.err != nil {
		return fmt.Errorf("%w: %w", ErrSessionClosed, c.err)
	}
	return ErrSessionClosed
}

func (c *Client) writeLoop() {
	for {
		select {
		case <-c.done:
			return
		case msg := <-c.wq:
			if _, err := c.w.Write(msg); err != nil {
				c.fail(errors.New("the helper's input is closed"))
				return
			}
		}
	}
}

func (c *Client) readLoop() error {
	for {
		line, err := c.lines.next()
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				return violation("a line exceeds the size limit")
			}
			return err
		}
		select {
		case <-c.done:
			return nil
		default:
		}
		if err := c.dispatch(line); err != nil {
			return err
		}
	}
}

// dispatch handles one line from the helper.
func (c *Client) dispatch(line []byte) error {
	var m rpcMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return violation("a line is not a JSON-RPC message")
	}
	if m.JSONRPC != "2.0" {
		return violation("a message lacks jsonrpc 2.0")
	}
	switch {
	case m.Method != "" && m.ID != nil:
		return violation("the helper sent a request")
	case m.Method != "":
		return c.dispatchNotification(m)
	case m.ID != nil:
		return c.dispatchResponse(m)
	default:
		return violation("a message is neither an answer nor a notification")
	}
}

func (c *Client) dispatchNotification(m rpcMessage) error {
	if !c.take() {
		return violation("the helper flooded notifications")
	}
	var n Notification
	switch m.Method {
	case NotifyQR:
		var p qrJSON
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return violation("link.qr params are malformed")
		}
		q, err := parseQR(&p)
		if err != nil {
			return violation("link.qr params are out of bounds")
		}
		n = Notification{Method: NotifyQR, QR: q}
	case NotifyLinkStatus:
		var p statusParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return violation("link.status params are malformed")
		}
		if !p.State.valid() || checkLabel(p.Label) != nil || checkText(p.Reason, MaxReason, "reason") != nil {
			return violation("link.status params are out of bounds")
		}
		n = Notification{Method: NotifyLinkStatus, Status: LinkStatus(p)}
	default:
		return nil // an unknown notification is ignored (PROTOCOL.md)
	}
	if c.notify != nil {
		c.notify(n)
	}
	return nil
}

// take spends one notification from the flood bucket.
func (c *Client) take() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.tokens += now.Sub(c.refill).Seconds() * floodRate
	c.refill = now
	if c.tokens > floodBurst {
		c.tokens = floodBurst
	}
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

func (c *Client) dispatchResponse(m rpcMessage) error {
	id, err := strconv.ParseInt(string(*m.ID), 10, 64)
	if err != nil || id < 1 {
		return violation("an answer's id was never sent")
	}
	if (m.Result == nil) == (m.Error == nil) {
		return violation("an answer must carry exactly one of result and error")
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	issued := id <= c.nextID
	c.mu.Unlock()
	if !ok {
		if issued {
			return nil // the answer to a call its caller abandoned
		}
		return violation("an answer's id was never sent")
	}
	ch <- m // buffered: the caller may have gone
	return nil
}

// call sends method and waits for its answer, decoding the result into
// result. The wait is bounded by ctx and by the method's timeout; the
// timeout ends the session (ErrHung).
func (c *Client) call(ctx context.Context, method string, params, result any) error {
	select {
	case <-c.done:
		return c.closedErr()
	default:
	}
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan rpcMessage, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	abandon := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}

	raw, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", id, method, params})
	if err != nil {
		abandon()
		return fmt.Errorf("encode %s: %w", method, err)
	}
	if len(raw) > MaxLine {
		abandon()
		return fmt.Errorf("%s exceeds the line limit", method)
	}
	raw = append(raw, '\n')

	timer := time.NewTimer(Timeout(method))
	defer timer.Stop()
	select {
	case c.wq <- raw:
	case <-ctx.Done():
		abandon()
		return ctx.Err()
	case <-c.done:
		abandon()
		return c.closedErr()
	case <-timer.C:
		abandon()
		c.fail(ErrHung)
		return c.closedErr()
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return &RPCError{Code: m.Error.Code, Message: cleanText(m.Error.Message, MaxReason)}
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, result); err != nil {
			c.fail(violation("an answer's result is malformed"))
			return c.closedErr()
		}
		return nil
	case <-ctx.Done():
		abandon()
		c.cancel(id)
		return ctx.Err()
	case <-c.done:
		abandon()
		return c.closedErr()
	case <-timer.C:
		abandon()
		c.fail(ErrHung)
		return c.closedErr()
	}
}

// cancel tells the helper its caller gave up on id; best effort.
func (c *Client) cancel(id int64) {
	raw, _ := json.Marshal(struct {
		JSONRPC string       `json:"jsonrpc"`
		Method  string       `json:"method"`
		Params  cancelParams `json:"params"`
	}{"2.0", MethodCancel, cancelParams{ID: id}})
	select {
	case c.wq <- append(raw, '\n'):
	default:
	}
}

// bad ends the session for an answer that breaks PROTOCOL.md's bounds.
func (c *Client) bad(reason string) error {
	c.fail(violation(reason))
	return c.closedErr()
}

// Initialize negotiates the protocol version and hands the helper its
// session directory. It must be the first call.
func (c *Client) Initialize(ctx context.Context, sessionDir string) (HelperInfo, error) {
	var r initializeResult
	err := c.call(ctx, MethodInitialize, initializeParams{ProtocolVersions: []int{ProtocolVersion}, SessionDir: sessionDir}, &r)
	if err != nil {
		return HelperInfo{}, err
	}
	if r.ProtocolVersion != ProtocolVersion {
		return HelperInfo{}, c.bad("the helper chose a version snugd did not offer")
	}
	return HelperInfo{ProtocolVersion: r.ProtocolVersion, Name: cleanText(r.Name, 64), Version: cleanText(r.Version, 64)}, nil
}

// StartLink begins a device-link attempt; codes follow as link.qr
// notifications. It fails with ErrAlreadyLinked while a session exists.
func (c *Client) StartLink(ctx context.Context) error {
	return c.call(ctx, MethodLinkStart, struct{}{}, nil)
}

// CancelLink abandons the attempt in progress, if any.
func (c *Client) CancelLink(ctx context.Context) error {
	return c.call(ctx, MethodLinkCancel, struct{}{}, nil)
}

// PollLink returns the link state. The one answer that observes the
// completed link carries the token; no later answer does.
func (c *Client) PollLink(ctx context.Context) (Poll, error) {
	var r pollResult
	if err := c.call(ctx, MethodLinkPoll, struct{}{}, &r); err != nil {
		return Poll{}, err
	}
	if !r.State.valid() || checkLabel(r.Label) != nil || checkText(r.Reason, MaxReason, "reason") != nil {
		return Poll{}, c.bad("a link.poll answer is out of bounds")
	}
	p := Poll{State: r.State, Label: r.Label, Reason: r.Reason}
	if r.State == LinkQR {
		q, err := parseQR(r.QR)
		if err != nil {
			return Poll{}, c.bad("a link.poll answer's qr is out of bounds")
		}
		p.QR = &q
	}
	if r.Token != "" {
		if r.State != LinkLinked {
			return Poll{}, c.bad("a link.poll answer carries a token before the link")
		}
		t, err := NewToken(r.Token)
		if err != nil {
			return Poll{}, c.bad("a link.poll answer's token is out of bounds")
		}
		p.Token = t
	}
	return p, nil
}

// Verify asks whether the device session is alive and its label. It fails
// with ErrUnauthorized for a wrong token and ErrNotLinked without a session.
func (c *Client) Verify(ctx context.Context, token Token) (Verification, error) {
	var r verifyResult
	if err := c.call(ctx, MethodVerify, tokenParams{Token: token.Reveal()}, &r); err != nil {
		return Verification{}, err
	}
	if checkLabel(r.Label) != nil {
		return Verification{}, c.bad("a verify answer's label is out of bounds")
	}
	return Verification(r), nil
}

// Do sends one request through the helper's device session. The request
// is checked against PROTOCOL.md's bounds before it is sent; the answer is
// checked as it arrives. A body over MaxResponseBody is ErrResponseTooLarge.
func (c *Client) Do(ctx context.Context, req Request) (Response, error) {
	if err := checkRequest(req); err != nil {
		return Response{}, fmt.Errorf("%w: %v", ErrOutOfBounds, err)
	}
	hdr := map[string][]string(req.Header)
	if hdr == nil {
		hdr = map[string][]string{}
	}
	var r responseResult
	err := c.call(ctx, MethodRequest, requestParams{
		Method: req.Method, PathAndQuery: req.PathAndQuery, Headers: hdr,
		Body: nonNil(req.Body), Token: req.Token.Reveal(),
	}, &r)
	if err != nil {
		return Response{}, err
	}
	if r.Status < 100 || r.Status > 599 {
		return Response{}, c.bad("a request answer's status is out of range")
	}
	if err := checkHeaders(r.Headers); err != nil {
		return Response{}, c.bad("a request answer's headers are out of bounds")
	}
	if len(r.Body) > MaxResponseBody {
		return Response{}, ErrResponseTooLarge
	}
	return Response{Status: r.Status, Header: canonicalHeader(r.Headers), Body: r.Body}, nil
}

func checkRequest(req Request) error {
	if err := checkMethod(req.Method); err != nil {
		return err
	}
	if err := checkPathAndQuery(req.PathAndQuery); err != nil {
		return err
	}
	if err := checkHeaders(req.Header); err != nil {
		return err
	}
	if len(req.Body) > MaxRequestBody {
		return errors.New("request body exceeds 262144 bytes")
	}
	if req.Token.IsZero() {
		return errors.New("request has no token")
	}
	return nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// Unlink ends the device session and makes the helper forget it.
func (c *Client) Unlink(ctx context.Context) error {
	return c.call(ctx, MethodUnlink, struct{}{}, nil)
}

// Shutdown asks the helper to exit; it answers, then exits.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.call(ctx, MethodShutdown, struct{}{}, nil)
}
