package linkdevice

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/snug/snugd/internal/names"
)

// ProtocolVersion is the helper protocol version this package speaks
// (PROTOCOL.md). snugd offers every version it supports in initialize; the
// helper picks one.
const ProtocolVersion = 1

// Limits of PROTOCOL.md, "Framing" and "Bounds".
const (
	// MaxLine is the longest line either side may send, not counting the
	// newline: a 1 MiB response body in base64 plus its headers fits.
	MaxLine = 2 << 20
	// MaxRequestBody is the longest request body, decoded (wire's
	// MAX_NET_REQUEST_BODY).
	MaxRequestBody = 256 << 10
	// MaxResponseBody is the longest response body, decoded (gate 10's cap).
	MaxResponseBody = 1 << 20
	// MaxQRPayload is the longest QR payload: printable ASCII only.
	MaxQRPayload = 512
	// MaxLabel is the longest display label, in bytes of UTF-8.
	MaxLabel = 80
	// MaxReason is the longest failure reason, in bytes of UTF-8.
	MaxReason = 200
	// MinToken and MaxToken bound a helper token's length: 43 characters of
	// base64url carry 256 bits.
	MinToken = 43
	MaxToken = 256
	// MaxPathAndQuery bounds request.pathAndQuery.
	MaxPathAndQuery = 4096
	// MaxHeaders bounds the number of header names in a request or answer;
	// MaxHeaderName and MaxHeaderValue bound each name and value.
	MaxHeaders     = 64
	MaxHeaderName  = 128
	MaxHeaderValue = 4096
	// MaxHeaderValues bounds the values one header name may carry.
	MaxHeaderValues = 16
)

// Method names of PROTOCOL.md.
const (
	MethodInitialize = "initialize"
	MethodLinkStart  = "link.start"
	MethodLinkPoll   = "link.poll"
	MethodLinkCancel = "link.cancel"
	MethodVerify     = "verify"
	MethodRequest    = "request"
	MethodUnlink     = "unlink"
	MethodShutdown   = "shutdown"
	MethodCancel     = "cancel" // notification snugd → helper

	NotifyQR         = "link.qr"     // notification helper → snugd
	NotifyLinkStatus = "link.status" // notification helper → snugd
)

// timeouts is PROTOCOL.md's table: how long snugd waits for each method's
// answer before it deems the helper hung, kills it and restarts it.
var timeouts = map[string]time.Duration{
	MethodInitialize: 10 * time.Second,
	MethodLinkStart:  10 * time.Second,
	MethodLinkPoll:   5 * time.Second,
	MethodLinkCancel: 5 * time.Second,
	MethodVerify:     10 * time.Second,
	MethodRequest:    30 * time.Second,
	MethodUnlink:     10 * time.Second,
	MethodShutdown:   5 * time.Second,
}

// Timeout returns how long snugd waits for method's answer (PROTOCOL.md).
func Timeout(method string) time.Duration {
	if d, ok := timeouts[method]; ok {
		return d
	}
	return 10 * time.Second
}

// Error codes: JSON-RPC 2.0's own and the helper codes of PROTOCOL.md.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603

	CodeUnauthorized       = -32001 // the token is missing or wrong
	CodeNotLinked          = -32002 // no device session exists
	CodeBadRequest         = -32003 // the helper will not send this request
	CodeBusy               = -32004 // try again later
	CodeAlreadyLinked      = -32005 // link.start while a session exists
	CodeNotInitialized     = -32006 // a method before initialize
	CodeUnsupportedVersion = -32007 // no common protocol version
)

// Sentinels a caller branches on; an *RPCError with the matching code is
// errors.Is each of them.
var (
	ErrUnauthorized  = errors.New("helper refused the token")
	ErrNotLinked     = errors.New("helper has no device session")
	ErrBadRequest    = errors.New("helper refused the request")
	ErrBusy          = errors.New("helper is busy")
	ErrAlreadyLinked = errors.New("helper already holds a device session")
)

var codeSentinels = map[int]error{
	CodeUnauthorized:  ErrUnauthorized,
	CodeNotLinked:     ErrNotLinked,
	CodeBadRequest:    ErrBadRequest,
	CodeBusy:          ErrBusy,
	CodeAlreadyLinked: ErrAlreadyLinked,
}

// RPCError is a JSON-RPC error answer. Message is the helper's own text:
// bounded and stripped of control characters, but not vetted, so a caller
// scrubs it before it logs it and never shows it to an app.
type RPCError struct {
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("helper error %d: %s", e.Code, e.Message)
}

// Is reports whether target is the sentinel of e's code.
func (e *RPCError) Is(target error) bool {
	s, ok := codeSentinels[e.Code]
	return ok && s == target
}

// LinkState is a helper's device-link state (PROTOCOL.md, link.poll).
type LinkState string

const (
	LinkIdle    LinkState = "idle"    // no attempt and no session
	LinkQR      LinkState = "qr"      // waiting for a scan of the current code
	LinkLinked  LinkState = "linked"  // a device session exists
	LinkExpired LinkState = "expired" // the attempt ran out of codes
	LinkFailed  LinkState = "failed"  // the attempt failed; Reason says why
)

func (s LinkState) valid() bool {
	switch s {
	case LinkIdle, LinkQR, LinkLinked, LinkExpired, LinkFailed:
		return true
	}
	return false
}

// QR is one code a helper shows: the payload to encode and when it stops
// being accepted.
type QR struct {
	Payload   string
	ExpiresAt time.Time
}

// Token is a helper token: a credential value. It prints, logs and
// marshals as REDACTED; Reveal returns the value.
type Token struct{ v string }

const redacted = "REDACTED"

// NewToken checks s against PROTOCOL.md's token rule (43–256 characters of
// base64url) and wraps it.
func NewToken(s string) (Token, error) {
	if err := checkToken(s); err != nil {
		return Token{}, err
	}
	return Token{s}, nil
}

// Reveal returns the token; "" when there is none.
func (t Token) Reveal() string { return t.v }

// IsZero reports whether t holds no token.
func (t Token) IsZero() bool { return t.v == "" }

func (Token) String() string               { return redacted }
func (Token) GoString() string             { return redacted }
func (Token) Format(f fmt.State, _ rune)   { f.Write([]byte(redacted)) }
func (Token) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (Token) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// Poll is the answer to link.poll. Token is set in exactly one answer: the
// first that observes the completed link.
type Poll struct {
	State  LinkState
	QR     *QR    // the current code while State is LinkQR
	Label  string // the session's display label once linked
	Token  Token  // once
	Reason string // why, when State is LinkFailed
}

// LinkStatus is a link.status notification: a hint that the state moved.
// It never carries the token; link.poll does.
type LinkStatus struct {
	State  LinkState
	Label  string
	Reason string
}

// Verification is the answer to verify.
type Verification struct {
	Alive bool
	Label string
}

// HelperInfo is the answer to initialize.
type HelperInfo struct {
	ProtocolVersion int
	Name            string
	Version         string
}

// Request is one request sent to a helper (the request method).
type Request struct {
	Method       string
	PathAndQuery string
	Header       http.Header
	Body         []byte
	Token        Token
}

// Response is a helper's answer to a request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// The JSON shapes of PROTOCOL.md. Domain types above carry no tags.

type rpcMessage struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *rpcErrorJSON    `json:"error,omitempty"`
}

type rpcErrorJSON struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

type initializeParams struct {
	ProtocolVersions []int  `json:"protocolVersions"`
	SessionDir       string `json:"sessionDir"`
}

type initializeResult struct {
	ProtocolVersion int    `json:"protocolVersion"`
	Name            string `json:"name,omitempty"`
	Version         string `json:"version,omitempty"`
}

type qrJSON struct {
	Payload   string `json:"payload"`
	ExpiresAt string `json:"expiresAt"`
}

type pollResult struct {
	State  LinkState `json:"state"`
	QR     *qrJSON   `json:"qr,omitempty"`
	Label  string    `json:"label,omitempty"`
	Token  string    `json:"token,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

type statusParams struct {
	State  LinkState `json:"state"`
	Label  string    `json:"label,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

type tokenParams struct {
	Token string `json:"token"`
}

type verifyResult struct {
	Alive bool   `json:"alive"`
	Label string `json:"label"`
}

type requestParams struct {
	Method       string              `json:"method"`
	PathAndQuery string              `json:"pathAndQuery"`
	Headers      map[string][]string `json:"headers"`
	Body         []byte              `json:"body"` // base64 (encoding/json's []byte)
	Token        string              `json:"token"`
}

type responseResult struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	Body    []byte              `json:"body"`
}

type cancelParams struct {
	ID int64 `json:"id"`
}

// Checks of PROTOCOL.md's bounds. Each returns a fixed sentence: never the
// offending bytes, which may be anything a helper sent.

// CheckQRPayload reports whether p is an acceptable QR payload: 1 to
// MaxQRPayload bytes of printable ASCII (no control characters, so a
// payload can never drive a terminal).
func CheckQRPayload(p string) error {
	if p == "" || len(p) > MaxQRPayload {
		return errors.New("qr payload must be 1-512 bytes")
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] > 0x7e {
			return errors.New("qr payload must be printable ASCII")
		}
	}
	return nil
}

func checkToken(s string) error {
	if len(s) < MinToken || len(s) > MaxToken {
		return errors.New("token must be 43-256 characters")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return errors.New("token must be base64url characters")
		}
	}
	return nil
}

// checkText bounds free text a helper sends (a label, a reason): valid
// UTF-8 of at most max bytes, no control characters.
func checkText(s string, max int, what string) error {
	if len(s) > max {
		return fmt.Errorf("%s exceeds %d bytes", what, max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not UTF-8", what)
	}
	if hasControl(s) {
		return fmt.Errorf("%s has control characters", what)
	}
	return nil
}

// checkLabel bounds a device label, the name a person reads to decide
// which phone is linked: at most MaxLabel bytes and, when present, the
// text rule of every trusted name (names.Check: NFC, nothing invisible,
// no private-use or unassigned code points). "" means no label.
func checkLabel(s string) error {
	if s == "" {
		return nil
	}
	if len(s) > MaxLabel {
		return fmt.Errorf("label exceeds %d bytes", MaxLabel)
	}
	if err := names.Check(s); err != nil {
		return fmt.Errorf("label: %w", err)
	}
	return nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || isBidi(r) {
			return true
		}
	}
	return false
}

// isBidi reports the bidirectional formatting characters, which reorder
// what a terminal or a page shows.
func isBidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// cleanText makes helper text safe to keep: control characters become
// spaces, invalid UTF-8 is replaced, and it is cut to max bytes.
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || isBidi(r) {
			r = ' '
		}
		if b.Len()+utf8.RuneLen(r) > max {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

func parseQR(q *qrJSON) (QR, error) {
	if q == nil {
		return QR{}, errors.New("qr is missing")
	}
	if err := CheckQRPayload(q.Payload); err != nil {
		return QR{}, err
	}
	t, err := time.Parse(time.RFC3339, q.ExpiresAt)
	if err != nil {
		return QR{}, errors.New("qr expiresAt is not an RFC 3339 time")
	}
	return QR{Payload: q.Payload, ExpiresAt: t}, nil
}

func formatQR(q QR) *qrJSON {
	return &qrJSON{Payload: q.Payload, ExpiresAt: q.ExpiresAt.UTC().Format(time.RFC3339Nano)}
}

func checkMethod(m string) error {
	if m == "" || len(m) > 16 {
		return errors.New("method must be 1-16 uppercase letters")
	}
	for i := 0; i < len(m); i++ {
		if m[i] < 'A' || m[i] > 'Z' {
			return errors.New("method must be 1-16 uppercase letters")
		}
	}
	return nil
}

func checkPathAndQuery(p string) error {
	if p == "" || p[0] != '/' || len(p) > MaxPathAndQuery {
		return errors.New("pathAndQuery must start with / and be at most 4096 bytes")
	}
	if strings.HasPrefix(p, "//") {
		return errors.New("pathAndQuery must not start with //")
	}
	for i := 0; i < len(p); i++ {
		if p[i] <= 0x20 || p[i] >= 0x7f || p[i] == '#' {
			return errors.New("pathAndQuery must be printable ASCII without spaces or #")
		}
	}
	return nil
}

// checkHeaders applies the header bounds to h, in either direction.
func checkHeaders(h map[string][]string) error {
	if len(h) > MaxHeaders {
		return errors.New("too many headers")
	}
	for name, vals := range h {
		if name == "" || len(name) > MaxHeaderName || !isToken(name) {
			return errors.New("a header name is not a 1-128 byte token")
		}
		if len(vals) > MaxHeaderValues {
			return errors.New("a header has too many values")
		}
		for _, v := range vals {
			if len(v) > MaxHeaderValue {
				return errors.New("a header value exceeds 4096 bytes")
			}
			for i := 0; i < len(v); i++ {
				if v[i] < 0x20 && v[i] != '\t' || v[i] == 0x7f {
					return errors.New("a header value has control characters")
				}
			}
		}
	}
	return nil
}

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return s != ""
}

// canonicalHeader copies h with canonical names.
func canonicalHeader(h map[string][]string) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		ck := http.CanonicalHeaderKey(k)
		out[ck] = append(out[ck], v...)
	}
	return out
}
