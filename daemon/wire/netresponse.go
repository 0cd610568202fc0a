package wire

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
)

// AllowedResponseHeader reports whether the response header name may cross
// into a net-response. Matching is on the lowercased name;
// set-cookie never crosses.
func AllowedResponseHeader(name string) bool {
	_, ok := allowedLower(name)
	return ok
}

// allowedLower returns name lowercased, and whether it is whitelisted
// (AllowedResponseHeader). A fixed name's lowercase form is a constant,
// so the common headers cost no allocation.
func allowedLower(name string) (string, bool) {
	var lower string
	switch len(name) {
	case len("etag"): // and len("link")
		lower = pick(name, "etag", "link")
	case len("retry-after"):
		lower = pick(name, "retry-after", "")
	case len("content-type"):
		lower = pick(name, "content-type", "")
	case len("cache-control"): // and len("last-modified")
		lower = pick(name, "cache-control", "last-modified")
	case len("content-length"):
		lower = pick(name, "content-length", "")
	}
	if lower != "" {
		return lower, true
	}
	if len(name) >= len("x-ratelimit-") && lowerIs(name[:len("x-ratelimit-")], "x-ratelimit-") {
		return strings.ToLower(name), true
	}
	return "", false
}

// pick returns whichever of a and b name spells in any ASCII case, or "".
func pick(name, a, b string) string {
	switch {
	case lowerIs(name, a):
		return a
	case b != "" && lowerIs(name, b):
		return b
	}
	return ""
}

// lowerIs reports whether name, ASCII-lowercased, equals lower.
func lowerIs(name, lower string) bool {
	if len(name) != len(lower) {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// FilterResponseHeaders returns the whitelisted headers of h (an
// http.Header, or any map of name to values) with lowercase names, the
// values of one name joined with ", " in order. Names that differ only in
// case are merged in sorted order. A value holding CR, LF or NUL is
// dropped. Everything else, set-cookie included, is dropped.
func FilterResponseHeaders(h map[string][]string) map[string]string {
	out := make(map[string]string)
	var buf [8]string // the names of a usual answer, without allocating
	names := buf[:0]
	for name := range h {
		if AllowedResponseHeader(name) && isToken(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		lower, _ := allowedLower(name)
		for _, v := range h[name] {
			if strings.ContainsAny(v, "\r\n\x00") {
				continue
			}
			if prev, ok := out[lower]; ok {
				out[lower] = prev + ", " + v
			} else {
				out[lower] = v
			}
		}
	}
	return out
}

// NetResponse is snug:net-response: the answer to one net-request, either
// a response (Error nil) or an error envelope (Error set).
//
// On the wire a response is
//
//	{"type":"snug:net-response","v":1,"requestId":"r1","ok":true,
//	 "status":200,"headers":{"content-type":"application/json"},
//	 "body":"…","url":"https://api.example.com/x"}
//
// and an error is
//
//	{"type":"snug:net-response","v":1,"requestId":"r1","ok":false,
//	 "error":{"code":"NET_HOST_BLOCKED","message":"…","retryable":false},
//	 "url":"https://api.example.com/x"}
//
// ok tells the two shapes apart, as in snug:app-response. url, when
// present, echoes the URL the app asked for, never the URL a connection
// resolved to (the resolved host is never disclosed to the app).
// truncated is never set for the body cap (an oversized body is
// NET_SIZE_EXCEEDED), and snugd never sets it at all.
type NetResponse struct {
	RequestID string
	Status    int
	Headers   map[string]string // whitelisted, lowercase names
	Body      string
	Truncated bool
	URL       string
	Error     *ErrorBody

	// body is the body held as bytes, when NewNetResponseBytes built r
	// (Body is then empty): the encoder reads it in place.
	body []byte
}

// BodyLen reports the length of r's body, however it is held.
func (r NetResponse) BodyLen() int { return len(r.Body) + len(r.body) }

// bodyString returns r's body as a string (a copy, when it is held as
// bytes).
func (r NetResponse) bodyString() string {
	if r.body != nil {
		return string(r.body)
	}
	return r.Body
}

// FrameType returns TypeNetResponse.
func (NetResponse) FrameType() string { return TypeNetResponse }

// OK reports whether r is a response rather than an error.
func (r NetResponse) OK() bool { return r.Error == nil }

// MarshalJSON writes the frame in the shape NetResponse documents.
func (r NetResponse) MarshalJSON() ([]byte, error) {
	type head struct {
		Type      string `json:"type"`
		V         int    `json:"v"`
		RequestID string `json:"requestId"`
		OK        bool   `json:"ok"`
	}
	h := head{TypeNetResponse, protocolVersion, r.RequestID, r.Error == nil}
	if r.Error != nil {
		return marshal(struct {
			head
			Error *ErrorBody `json:"error"`
			URL   string     `json:"url,omitempty"`
		}{h, r.Error, r.URL})
	}
	headers := r.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	return marshal(struct {
		head
		Status    int               `json:"status"`
		Headers   map[string]string `json:"headers"`
		Body      string            `json:"body"`
		Truncated bool              `json:"truncated,omitempty"`
		URL       string            `json:"url,omitempty"`
	}{h, r.Status, headers, r.bodyString(), r.Truncated, r.URL})
}

// NewNetResponseText builds the net-response for an upstream answer: the
// headers whitelist-filtered (FilterResponseHeaders), content-length
// recomputed to match the delivered body, and url echoing the URL the app
// asked for. The body is Text, so it is valid UTF-8 (a
// JSON string must hold text): the executor validates an upstream body
// once, before it scrubs it, and hands the result here rather than have
// it looked at again.
//
// Scrub header values and body before calling it (the executor's scrub,
// and the stricter one for a result bound for a model): content-length is
// computed from the body given.
//
// It returns an *errcode.Error instead when the answer may not pass:
// NET_FETCH_FAILED for a status outside 100–599, NET_SIZE_EXCEEDED for a
// body over MaxNetResponseBody (an oversized body is refused, never
// truncated). The caller answers that error with NetErrorResponse.
func NewNetResponseText(requestID, url string, status int, header map[string][]string, body Text) (NetResponse, error) {
	if err := checkAnswer(status, len(body.s)); err != nil {
		return NetResponse{}, err
	}
	r := newNetResponse(requestID, url, status, header, len(body.s))
	r.Body = body.s
	return r, nil
}

// checkAnswer refuses an answer that may not pass: a status outside
// 100–599, or a body over the cap.
func checkAnswer(status, bodyLen int) error {
	if status < 100 || status > 599 {
		return errcode.New(errcode.NetFetchFailed, "the upstream answered with an invalid status")
	}
	if bodyLen > MaxNetResponseBody {
		return errcode.New(errcode.NetSizeExceeded, fmt.Sprintf("the response body exceeds %d bytes", MaxNetResponseBody))
	}
	return nil
}

// NewNetResponseBytes is NewNetResponseText for a body held as bytes
// (the buffer the answer was read into, say): the response holds body
// without copying it, and Encode, EncodeNetResponse and
// AppendNetResponse read it in place, so a megabyte answer is neither
// copied into a string nor allocated again. Body (the string field) is
// empty; BodyLen reports the length.
//
// The response borrows body's bytes: the caller keeps them unchanged
// until the response is encoded, and neither the response nor anything
// taken from it is used once the bytes are released. The frame an
// encoder returns never aliases them.
func NewNetResponseBytes(requestID, url string, status int, header map[string][]string, body TextBytes) (NetResponse, error) {
	if err := checkAnswer(status, len(body.b)); err != nil {
		return NetResponse{}, err
	}
	r := newNetResponse(requestID, url, status, header, len(body.b))
	r.body = body.b
	if r.body == nil {
		r.body = []byte{} // held as bytes, empty
	}
	return r, nil
}

// newNetResponse is a response of a body of bodyLen bytes, without the
// body.
func newNetResponse(requestID, url string, status int, header map[string][]string, bodyLen int) NetResponse {
	h := FilterResponseHeaders(header)
	if _, ok := h["content-length"]; ok {
		h["content-length"] = strconv.Itoa(bodyLen)
	}
	return NetResponse{RequestID: requestID, Status: status, Headers: h, URL: url}
}

// Text is a string that is valid UTF-8. ValidText is the only way to
// make one (the zero Text, "", is valid too), so whatever holds a Text
// holds valid UTF-8 without looking again: a frame built from one never
// carries invalid UTF-8, whoever built it.
type Text struct{ s string }

// ValidText returns s as Text: s itself, not copied, when it is valid
// UTF-8 (one pass over it), else s with each run of invalid bytes
// replaced by U+FFFD (strings.ToValidUTF8).
func ValidText(s string) Text {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return Text{s}
}

// String returns the text.
func (t Text) String() string { return t.s }

// TextBytes is bytes that are valid UTF-8: Text held as the bytes an
// answer was read into. ValidTextBytes is the only way to make one.
type TextBytes struct{ b []byte }

// ValidTextBytes returns b as TextBytes: b itself, not copied, when it
// is valid UTF-8 (one pass over it), else a new slice holding b with
// each run of invalid bytes replaced by U+FFFD (bytes.ToValidUTF8, as
// ValidText does).
func ValidTextBytes(b []byte) TextBytes {
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	return TextBytes{b}
}

// Bytes returns the text. The caller must not modify it.
func (t TextBytes) Bytes() []byte { return t.b }

// NetErrorResponse builds the error net-response for err, with the
// envelope ErrorBodyOf gives (a reserved or unknown code becomes
// HOST_ERROR; err's wrapped cause never appears). url echoes the URL the
// app asked for, or is empty.
func NetErrorResponse(requestID, url string, err error) NetResponse {
	b := ErrorBodyOf(err)
	return NetResponse{RequestID: requestID, URL: url, Error: &b}
}

// Validate reports whether r may be sent: a valid requestId, and either a
// response with a status in 100–599 and only whitelisted, lowercase
// header names, or an error envelope with an emittable code and nothing
// else.
func (r NetResponse) Validate() error {
	p := r.problem()
	if p == "" && r.Error != nil {
		p = r.Error.emitProblem()
	}
	return validationError(TypeNetResponse, p)
}

func (r NetResponse) problem() string {
	if p := checkLen("requestId", r.RequestID, 1, MaxIDChars); p != "" {
		return p
	}
	if r.URL != "" {
		if p := checkLen("url", r.URL, 1, MaxNetURLChars); p != "" {
			return p
		}
	}
	if r.Error != nil {
		if r.Status != 0 || r.Headers != nil || r.BodyLen() != 0 || r.Truncated {
			return "an error net-response carries no status, headers, body or truncated"
		}
		return r.Error.problem()
	}
	if r.Status < 100 || r.Status > 599 {
		return "status must be 100–599"
	}
	for name := range r.Headers {
		if !AllowedResponseHeader(name) || !isToken(name) || strings.ToLower(name) != name {
			return "headers must be whitelisted, lowercase names"
		}
	}
	return ""
}
