package linkdevice

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
)

// Handler answers one method call on the helper side. A *RPCError result
// is sent as that JSON-RPC error; any other error as CodeInternal with a
// fixed message (its text is never sent). A nil result is sent as {}.
// ctx is cancelled when snugd cancels the call or the session ends.
type Handler func(ctx context.Context, method string, params json.RawMessage) (result any, err error)

// maxInFlight bounds the calls a Server handles at once; one more is
// answered CodeBusy.
const maxInFlight = 16

// Server is the helper side of the protocol: it reads calls from snugd on
// in, answers them on out through a Handler, and sends notifications.
// Notify and Serve are safe for concurrent use.
type Server struct {
	lines *lineReader
	wmu   sync.Mutex
	w     io.Writer
}

// NewServer returns a Server reading snugd's calls from in (the helper's
// stdin) and writing to out (its stdout).
func NewServer(in io.Reader, out io.Writer) *Server {
	return &Server{lines: newLineReader(in, MaxLine), w: out}
}

// Notify sends a notification (NotifyQR with a QR, NotifyLinkStatus with
// a LinkStatus).
func (s *Server) Notify(method string, params any) error {
	switch p := params.(type) {
	case QR:
		params = formatQR(p)
	case LinkStatus:
		params = statusParams(p)
	}
	return s.write(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
}

func (s *Server) write(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(raw) > MaxLine {
		return errors.New("message exceeds the line limit")
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.w.Write(append(raw, '\n'))
	return err
}

func (s *Server) answer(id json.RawMessage, result any, err error) error {
	type errJSON struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	msg := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *errJSON        `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: id}
	var re *RPCError
	switch {
	case errors.As(err, &re):
		msg.Error = &errJSON{re.Code, re.Message}
	case err != nil:
		msg.Error = &errJSON{CodeInternal, "internal error"}
	case result == nil:
		msg.Result = struct{}{}
	default:
		msg.Result = result
	}
	return s.write(msg)
}

// Serve handles calls until in ends (nil), ctx is done (nil), a shutdown
// call has been answered (nil), or in breaks the framing (an error). Calls
// run concurrently, at most 16 at a time, except initialize, which is
// answered before the next line is read; a cancel notification from snugd
// cancels its call's ctx. Serve returns after every call it started has
// finished.
func (s *Server) Serve(ctx context.Context, h Handler) error {
	ctx, cancelAll := context.WithCancel(ctx)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inflight = map[string]context.CancelFunc{}
		shutdown = make(chan struct{})
		once     sync.Once
	)
	defer func() {
		cancelAll() // first: the calls in flight see their ctx end
		wg.Wait()
	}()

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() { // ends at end of input; Serve's caller owns in
		for {
			line, err := s.lines.next()
			if err != nil {
				readErr <- err
				return
			}
			cp := append([]byte(nil), line...)
			select {
			case lines <- cp:
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			}
		}
	}()

	for {
		var line []byte
		select {
		case <-ctx.Done():
			return nil
		case <-shutdown:
			return nil
		case err := <-readErr:
			if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
				return nil
			}
			if errors.Is(err, errLineTooLong) {
				s.answer(json.RawMessage("null"), nil, &RPCError{CodeInvalidRequest, "line exceeds the size limit"})
			}
			return err
		case line = <-lines:
		}
		var m rpcMessage
		if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
			s.answer(json.RawMessage("null"), nil, &RPCError{CodeParseError, "parse error"})
			continue
		}
		if m.ID == nil { // a notification
			if m.Method == MethodCancel {
				var p cancelParams
				if json.Unmarshal(m.Params, &p) == nil {
					mu.Lock()
					if c, ok := inflight[strconv.FormatInt(p.ID, 10)]; ok {
						c()
					}
					mu.Unlock()
				}
			}
			continue
		}
		id := *m.ID
		if m.Method == "" {
			s.answer(id, nil, &RPCError{CodeInvalidRequest, "invalid request"})
			continue
		}
		if m.Method == MethodInitialize {
			// Inline: nothing after it runs before it is answered.
			result, err := h(ctx, m.Method, m.Params)
			s.answer(id, result, err)
			continue
		}
		mu.Lock()
		n := len(inflight)
		mu.Unlock()
		if n >= maxInFlight {
			s.answer(id, nil, &RPCError{CodeBusy, "too many calls in flight"})
			continue
		}
		cctx, cancel := context.WithCancel(ctx)
		key := string(id)
		mu.Lock()
		inflight[key] = cancel
		mu.Unlock()
		wg.Add(1)
		go func(method string, params json.RawMessage) {
			defer wg.Done()
			defer func() {
				mu.Lock()
				delete(inflight, key)
				mu.Unlock()
				cancel()
			}()
			result, err := h(cctx, method, params)
			s.answer(id, result, err)
			if method == MethodShutdown && err == nil {
				once.Do(func() { close(shutdown) })
			}
		}(m.Method, m.Params)
	}
}

// ParseInitialize reads initialize's params on the helper side: it picks
// ProtocolVersion when snugd offers it and returns the session directory.
// The error is an *RPCError to answer with.
func ParseInitialize(params json.RawMessage) (sessionDir string, err error) {
	var p initializeParams
	if err := json.Unmarshal(params, &p); err != nil || p.SessionDir == "" {
		return "", &RPCError{CodeInvalidParams, "initialize needs protocolVersions and sessionDir"}
	}
	for _, v := range p.ProtocolVersions {
		if v == ProtocolVersion {
			return p.SessionDir, nil
		}
	}
	return "", &RPCError{CodeUnsupportedVersion, "no common protocol version"}
}

// InitializeResult is the answer a Go helper gives to initialize.
func InitializeResult(name, version string) any {
	return initializeResult{ProtocolVersion: ProtocolVersion, Name: name, Version: version}
}

// PollResult is the answer a Go helper gives to link.poll.
func PollResult(p Poll) any {
	r := pollResult{State: p.State, Label: p.Label, Token: p.Token.Reveal(), Reason: p.Reason}
	if p.QR != nil {
		r.QR = formatQR(*p.QR)
	}
	return r
}

// VerifyResult is the answer a Go helper gives to verify.
func VerifyResult(v Verification) any { return verifyResult(v) }

// ResponseResult is the answer a Go helper gives to request.
func ResponseResult(r Response) any {
	h := map[string][]string(r.Header)
	if h == nil {
		h = map[string][]string{}
	}
	return responseResult{Status: r.Status, Headers: h, Body: nonNil(r.Body)}
}

// ParseToken reads the token of verify's params on the helper side; a
// missing or malformed token is CodeUnauthorized.
func ParseToken(params json.RawMessage) (Token, error) {
	var p tokenParams
	if err := json.Unmarshal(params, &p); err != nil {
		return Token{}, &RPCError{CodeInvalidParams, "params must be an object"}
	}
	t, err := NewToken(p.Token)
	if err != nil {
		return Token{}, &RPCError{CodeUnauthorized, "unauthorized"}
	}
	return t, nil
}

// ParseRequest reads request's params on the helper side and checks them
// against PROTOCOL.md's bounds. A missing or malformed token is
// CodeUnauthorized; other faults CodeInvalidParams.
func ParseRequest(params json.RawMessage) (Request, error) {
	var p requestParams
	if err := json.Unmarshal(params, &p); err != nil {
		return Request{}, &RPCError{CodeInvalidParams, "params must be a request object"}
	}
	t, err := NewToken(p.Token)
	if err != nil {
		return Request{}, &RPCError{CodeUnauthorized, "unauthorized"}
	}
	req := Request{Method: p.Method, PathAndQuery: p.PathAndQuery, Header: canonicalHeader(p.Headers), Body: p.Body, Token: t}
	if err := checkRequest(req); err != nil {
		return Request{}, &RPCError{CodeInvalidParams, err.Error()}
	}
	return req, nil
}
