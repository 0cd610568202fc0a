package wire

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
)

// Limits of snug:net-request.
const (
	MaxNetURLChars      = 4096
	MaxHeaderNameChars  = 128
	MaxHeaderValueChars = 4096
	// MaxNetRequestBody bounds a request body both ways: at most this many
	// characters and at most this many UTF-8 bytes. A string
	// never has more characters than UTF-8 bytes, so the byte count decides.
	MaxNetRequestBody = 262144
	// MaxNetResponseBody is the cap the executor reads a response under;
	// a larger body is a terminal NET_SIZE_EXCEEDED.
	MaxNetResponseBody = 1 << 20
)

// CredentialHeader reports whether name is credential-shaped: one of
// STRIP_HEADERS after lowercasing ASCII letters and mapping '_' to '-'
// (X_Api_Key counts as x-api-key, since CGI-style servers fold
// the two). At gate 7 "credential-shaped" means exactly this.
// It does not allocate.
func CredentialHeader(name string) bool {
	switch len(name) {
	case len("cookie"):
		return canonIs(name, "cookie")
	case len("x-api-key"):
		return canonIs(name, "x-api-key")
	case len("set-cookie"):
		return canonIs(name, "set-cookie")
	case len("authorization"):
		return canonIs(name, "authorization")
	case len("proxy-authorization"):
		return canonIs(name, "proxy-authorization")
	}
	return false
}

// reservedHeader reports whether an app may not set name: the transport
// owns host, framing and connection management, and proxy-*
// is never forwarded. Names are compared as CredentialHeader compares them.
func reservedHeader(name string) bool {
	if len(name) >= len("proxy-") && canonIs(name[:len("proxy-")], "proxy-") {
		return true
	}
	switch len(name) {
	case len("te"):
		return canonIs(name, "te")
	case len("host"):
		return canonIs(name, "host")
	case len("trailer"):
		return canonIs(name, "trailer") || canonIs(name, "upgrade")
	case len("connection"):
		return canonIs(name, "connection") || canonIs(name, "keep-alive")
	case len("content-length"):
		return canonIs(name, "content-length")
	case len("transfer-encoding"):
		return canonIs(name, "transfer-encoding")
	}
	return false
}

// canonIs reports whether name, with ASCII letters lowercased and '_'
// mapped to '-', equals canon.
func canonIs(name, canon string) bool {
	if len(name) != len(canon) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if canonByte(name[i]) != canon[i] {
			return false
		}
	}
	return true
}

func canonByte(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A'
	case c == '_':
		return '-'
	}
	return c
}

// canonEqual reports whether two header names are the same name.
func canonEqual(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if canonByte(a[i]) != canonByte(b[i]) {
			return false
		}
	}
	return true
}

// tchar (RFC 9110 §5.6.2) as two bit sets: bytes 0–63 and 64–127.
const (
	tcharLo uint64 = 1<<'!' | 1<<'#' | 1<<'$' | 1<<'%' | 1<<'&' | 1<<'\'' | 1<<'*' | 1<<'+' | 1<<'-' | 1<<'.' | (1<<10-1)<<'0'
	tcharHi uint64 = (1<<26-1)<<('A'-64) | 1<<('^'-64) | 1<<('_'-64) | 1<<('`'-64) | (1<<26-1)<<('a'-64) | 1<<('|'-64) | 1<<('~'-64)
)

// isToken reports whether s is an RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 64:
			if tcharLo&(1<<c) == 0 {
				return false
			}
		case c < 128:
			if tcharHi&(1<<(c-64)) == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// headerProblem checks one app-supplied header.
func headerProblem(name, value string) string {
	if name == "" || len(name) > MaxHeaderNameChars {
		return fmt.Sprintf("header names must be 1–%d characters", MaxHeaderNameChars)
	}
	if !isToken(name) {
		return "header names must be RFC 9110 tokens"
	}
	if CredentialHeader(name) {
		return "header " + name + " is credential-shaped (STRIP_HEADERS) and may not cross the bridge"
	}
	if reservedHeader(name) {
		return "header " + name + " is set by the transport, not the app"
	}
	if len(value) > MaxHeaderValueChars && chars(value) > MaxHeaderValueChars {
		return fmt.Sprintf("header %s: value must be at most %d characters", name, MaxHeaderValueChars)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return "header " + name + ": value must not contain CR, LF or NUL"
	}
	return ""
}

// duplicateHeader is the problem when two names are the same name after
// lowercasing (and mapping '_' to '-').
func duplicateHeader(name string) string {
	return "header " + name + " appears twice"
}

// NetRequest is snug:net-request: the app's request for one network call.
// There is no appId: the acting app is the one the host says sent the
// frame.
type NetRequest struct {
	RequestID  string
	InstanceID string
	URL        string // as the app sent it: https, http or snug-connection://, judged at later gates
	Method     string
	Headers    map[string]string // nil when the frame had none
	Body       string
	HasBody    bool // the frame carried a body key, even ""
}

// FrameType returns TypeNetRequest.
func (NetRequest) FrameType() string { return TypeNetRequest }

// MarshalJSON writes the frame with type and v: 1.
func (r NetRequest) MarshalJSON() ([]byte, error) {
	var body *string
	if r.HasBody {
		body = &r.Body
	}
	return marshal(struct {
		Type       string            `json:"type"`
		V          int               `json:"v"`
		RequestID  string            `json:"requestId"`
		InstanceID string            `json:"instanceId"`
		URL        string            `json:"url"`
		Method     string            `json:"method"`
		Headers    map[string]string `json:"headers,omitempty"`
		Body       *string           `json:"body,omitempty"`
	}{TypeNetRequest, protocolVersion, r.RequestID, r.InstanceID, r.URL, r.Method, r.Headers, body})
}

// Validate applies every rule ParseNetRequest applies to the values of r,
// for a request built in Go (the wizard's probe, a Go host). It returns a
// *ParseError with code NET_INVALID_REQUEST, or nil.
func (r NetRequest) Validate() error {
	p := r.scalarProblem()
	if p == "" {
		p = headersProblem(r.Headers)
	}
	return validationError(TypeNetRequest, p)
}

// scalarProblem checks everything but the headers.
func (r NetRequest) scalarProblem() string {
	if p := checkLen("requestId", r.RequestID, 1, MaxIDChars); p != "" {
		return p
	}
	if p := checkLen("instanceId", r.InstanceID, 1, MaxIDChars); p != "" {
		return p
	}
	switch r.Method {
	case "GET", "HEAD":
		if r.HasBody {
			return "a " + r.Method + " request carries no body"
		}
	case "POST", "PUT", "PATCH", "DELETE":
	default:
		return "method must be one of GET, HEAD, POST, PUT, PATCH, DELETE"
	}
	if len(r.Body) > MaxNetRequestBody {
		return fmt.Sprintf("body must be at most %d characters and %d UTF-8 bytes", MaxNetRequestBody, MaxNetRequestBody)
	}
	return netURLProblem(r.URL)
}

// headersProblem checks a header map: each header, then names that are
// the same after lowercasing.
func headersProblem(h map[string]string) string {
	for name, value := range h {
		if p := headerProblem(name, value); p != "" {
			return p
		}
	}
	if len(h) > 1 {
		seen := make(map[string]struct{}, len(h))
		for name := range h {
			c := canonName(name)
			if _, dup := seen[c]; dup {
				return duplicateHeader(name)
			}
			seen[c] = struct{}{}
		}
	}
	return ""
}

func canonName(name string) string {
	b := []byte(name)
	for i, c := range b {
		b[i] = canonByte(c)
	}
	return string(b)
}

// netURLProblem applies the net-request URL rules. The scheme is not judged
// here (gate 4 and §15 do that), but there must be one.
func netURLProblem(s string) string {
	if p := checkLen("url", s, 1, MaxNetURLChars); p != "" {
		return p
	}
	_, p := strictURL("url", s)
	return p
}

// strictURL parses s as an absolute URL with a host and refuses the shapes
// that let two URL parsers disagree about where a request goes: userinfo
// (even an empty "@"), '%' or '\' in the host, a control, format or space
// character anywhere, and a port that is not canonical 1–65535.
func strictURL(field, s string) (*url.URL, string) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == 0x7f {
				return nil, field + " must not contain control characters or spaces"
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsControl(r) || unicode.IsSpace(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return nil, field + " must not contain control characters or spaces"
		}
		i += n
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, field + " does not parse as a URL"
	}
	if u.Scheme == "" {
		return nil, field + " must be an absolute URL"
	}
	if u.User != nil {
		return nil, field + " must not carry userinfo"
	}
	authority := rawAuthority(s, len(u.Scheme))
	if strings.IndexByte(authority, '@') >= 0 {
		return nil, field + " must not carry userinfo"
	}
	host, port, hasPort := splitAuthority(authority)
	if host == "" || u.Hostname() == "" {
		return nil, field + " must have a host"
	}
	if strings.ContainsAny(host, `%\`) {
		return nil, field + ` host must not contain '%' or '\'`
	}
	if hasPort && !canonicalPort(port) {
		return nil, field + " port must be 1–65535 without leading zeros"
	}
	return u, ""
}

// rawAuthority returns the authority of s as written, cut where Go's
// url.Parse cuts it: after "scheme://", before the first '/', '?' or '#'.
func rawAuthority(s string, schemeLen int) string {
	rest := s[schemeLen+1:]
	if !strings.HasPrefix(rest, "//") {
		return ""
	}
	rest = rest[2:]
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// splitAuthority splits a raw authority (without userinfo) into host and
// port; hasPort is true when a ':' follows the host, even with nothing
// after it.
func splitAuthority(a string) (host, port string, hasPort bool) {
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return a, "", false
		}
		host, rest := a[:end+1], a[end+1:]
		if strings.HasPrefix(rest, ":") {
			return host, rest[1:], true
		}
		return host, "", false
	}
	if i := strings.LastIndexByte(a, ':'); i >= 0 {
		return a[:i], a[i+1:], true
	}
	return a, "", false
}

// canonicalPort reports whether p is a decimal 1–65535 without leading
// zeros.
func canonicalPort(p string) bool {
	if p == "" || len(p) > 5 || p[0] == '0' {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n <= 65535
}

// ParseNetRequest parses a snug:net-request exactly as the
// net-request rules define it. It is strict: any key outside {type, v,
// requestId, instanceId, url, method, headers, body} rejects the frame,
// appId included, and so does a duplicate key at any level. The frame is
// at most MaxNetFrameBytes as received.
//
// A refused frame returns a *ParseError: UNSUPPORTED_VERSION when v is
// not 1, NET_INVALID_REQUEST otherwise, with the requestId
// recovered when one may be answered. A returned NetRequest never carries
// a credential-shaped header. ParseNetRequest is safe for concurrent use.
func ParseNetRequest(raw []byte) (NetRequest, error) {
	if len(raw) > MaxNetFrameBytes {
		return NetRequest{}, oversizeRaw(TypeNetRequest, raw)
	}
	var buf [maxKnownKeys]member
	ms, perr := scanFrame(raw, buf[:0], TypeNetRequest, errcode.NetInvalidRequest)
	if perr != nil {
		return NetRequest{}, perr
	}
	return decodeNetRequest(ms)
}

// oversizeRaw is oversize for a frame not scanned yet: the requestId is
// recovered only while the work stays bounded (maxScanBytes).
func oversizeRaw(typ string, raw []byte) *ParseError {
	if len(raw) <= maxScanBytes && utf8.Valid(raw) {
		if ms, err := scanObject(raw, nil); err == nil {
			return oversize(typ, ms)
		}
	}
	return &ParseError{Code: shapeCode(typ), Type: typ, Message: fmt.Sprintf("frame exceeds %d bytes", FrameLimit(typ))}
}

func decodeNetRequest(ms []member) (NetRequest, error) {
	const (
		kType = 1 << iota
		kV
		kRequestID
		kInstanceID
		kURL
		kMethod
		kHeaders
		kBody
	)
	d := newDecoder(TypeNetRequest)
	var r NetRequest
	var seen uint8
	for _, m := range ms {
		var bit uint8
		switch string(m.key) {
		case "type":
			bit = kType
			d.common(m)
		case "v":
			bit = kV
			d.common(m)
		case "requestId":
			bit = kRequestID
			d.offerRequestID(m)
			r.RequestID = d.str(m, "requestId")
		case "instanceId":
			bit = kInstanceID
			r.InstanceID = d.str(m, "instanceId")
		case "url":
			bit = kURL
			r.URL = d.str(m, "url")
		case "method":
			bit = kMethod
			r.Method = d.str(m, "method")
		case "headers":
			bit = kHeaders
			r.Headers = d.netHeaders(m)
		case "body":
			bit = kBody
			r.Body = d.str(m, "body")
			r.HasBody = true
		default:
			d.fail("unknown key: net-request is strict")
			continue
		}
		if seen&bit != 0 {
			d.fail("duplicate key " + string(m.key))
		}
		seen |= bit
	}
	d.require(seen&kType != 0, "type")
	d.require(seen&kRequestID != 0, "requestId")
	d.require(seen&kInstanceID != 0, "instanceId")
	d.require(seen&kURL != 0, "url")
	d.require(seen&kMethod != 0, "method")
	if d.problem == "" {
		d.fail(r.scalarProblem())
	}
	if err := d.err(); err != nil {
		return NetRequest{}, err
	}
	return r, nil
}

// netHeaders decodes the headers object, checking each header in document
// order so the first problem named is always the same one.
func (d *decoder) netHeaders(m member) map[string]string {
	if m.kind() != kindObject {
		d.fail("headers must be an object of strings")
		return nil
	}
	var buf [maxKnownKeys]member
	hs := members(m.val, buf[:0])
	if len(hs) == 0 {
		return nil
	}
	h := make(map[string]string, len(hs))
	var canon map[string]struct{} // for frames with many headers: keeps the duplicate check linear
	if len(hs) > maxKnownKeys {
		canon = make(map[string]struct{}, len(hs))
	}
	for i, hm := range hs {
		if hm.kind() != kindString {
			d.fail("headers must be an object of strings")
			return nil
		}
		name, value := string(hm.key), stringValue(hm.val)
		if p := headerProblem(name, value); p != "" {
			d.fail(p)
			return nil
		}
		dup := false
		if canon != nil {
			c := canonName(name)
			_, dup = canon[c]
			canon[c] = struct{}{}
		} else {
			for _, prev := range hs[:i] {
				if canonEqual(prev.key, hm.key) {
					dup = true
					break
				}
			}
		}
		if dup {
			d.fail(duplicateHeader(name))
			return nil
		}
		h[name] = value
	}
	return h
}
