package template

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// ErrMissingValue is wrapped by the error Render returns when a field a
// template references has no value (absent or empty). The error text names
// the field key.
var ErrMissingValue = errors.New("field has no value")

// Fields returns the declared field keys the Set's templates reference,
// sorted. These are the values Render reads and the executor must scrub.
func (s *Set) Fields() []string {
	if s == nil {
		return nil
	}
	keys := slices.Clone(s.keys)
	slices.Sort(keys)
	return keys
}

// HeaderNames returns the names of the header templates, sorted.
func (s *Set) HeaderNames() []string { return s.names(false) }

// QueryNames returns the names of the query templates, sorted.
func (s *Set) QueryNames() []string { return s.names(true) }

func (s *Set) names(query bool) []string {
	if s == nil {
		return nil
	}
	es := s.headers
	if query {
		es = s.query
	}
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.name
	}
	return names
}

// sizeHint estimates the bytes the program renders to.
func (p program) sizeHint() int {
	n := 0
	for _, pt := range p.parts {
		if pt.helper == hValue && pt.args[0].kind == opText {
			n += len(pt.args[0].text)
		} else {
			n += dynamicPartHint
		}
	}
	return n
}

// usesTimestamp reports whether the program reads the pass's timestamp.
func (p program) usesTimestamp() bool {
	for _, pt := range p.parts {
		if pt.helper == hTimestamp || pt.helper == hCDPJWT {
			return true
		}
		for _, a := range pt.args {
			if a.kind == opTimestamp {
				return true
			}
		}
	}
	return false
}

// renderer is the state of one render pass.
type renderer struct {
	set  *Set
	vals []string // values of set.keys
	req  Request
	env  Env
	ts   int64  // the pass's one timestamp, unix seconds
	tsb  []byte // ts in decimal
	buf  []byte // every value of the pass, one after another
	tmp  []byte // helper scratch
	src  []byte // helper scratch: a decoder's input
	// derived holds the r.buf span of every helper output that read a
	// field (base64 of user:pass, an HMAC, a cdp_jwt): each is a scrub
	// candidate of its own, since an upstream may echo it without the
	// literal text around it ("Basic ", a prefix).
	derived [][2]int
}

// Scratch sizes of a pass, in bytes: one allocation serves the values and
// the helpers' scratch; a larger pass grows what it needs.
const (
	dynamicPartHint = 96 // a field value, a token, a digest
	scratchHint     = 256
)

// Render runs one render pass with one memoized timestamp over both
// placements: the clock is read once, before the first template, and every
// timestamp() and request.timestamp of both placements reads that value.
// values maps declared field keys to credential values; a
// referenced key whose value is absent or empty is an error wrapping
// ErrMissingValue. A rendered header value holding a CR, LF, NUL, any other
// control byte or a non-ASCII byte is an error. Errors name
// seats and field keys, never a value. Render is safe for concurrent use.
func (s *Set) Render(values map[string]string, req Request, env Env) (Rendered, error) {
	if s == nil {
		return Rendered{}, errors.New("render: no compiled template set")
	}
	n := len(s.headers) + len(s.query)
	if n == 0 {
		return Rendered{}, nil
	}
	// The scrub list starts with the field values, and the pass reads them
	// from there: one allocation for both.
	secrets := make([]string, 0, len(s.keys)+2*n+len(s.query))
	for _, k := range s.keys {
		v := values[k]
		if v == "" {
			return Rendered{}, fmt.Errorf("render: field %s: %w", k, ErrMissingValue)
		}
		secrets = append(secrets, v)
	}
	r := renderer{set: s, vals: secrets[:len(s.keys)], req: req, env: env}

	// One allocation holds the timestamp's digits, every value of the pass
	// (rendered one after another, each header value checked in place) and
	// the helpers' scratch.
	const tsLen = 20 // the digits of any int64
	scratch := make([]byte, 0, tsLen+s.bufHint+2*scratchHint)
	if s.usesTS {
		now := time.Now
		if env.Now != nil {
			now = env.Now
		}
		r.ts = now().Unix()
		r.tsb = strconv.AppendInt(scratch[:0:tsLen], r.ts, 10)
	}
	scratch = scratch[tsLen:tsLen]
	r.buf = scratch[:0:s.bufHint]
	r.tmp = scratch[s.bufHint : s.bufHint : s.bufHint+scratchHint]
	r.src = scratch[s.bufHint+scratchHint : s.bufHint+scratchHint]
	var ends [2 * maxEntries]int // Compile bounds each placement to maxEntries
	for i, e := range s.headers {
		start := len(r.buf)
		err := r.appendValue(e.prog)
		if err == nil {
			err = checkHeaderValue(r.buf[start:])
		}
		if err != nil {
			return Rendered{}, fmt.Errorf("render %s.%s: %w", headerSeat, e.name, err)
		}
		ends[i] = len(r.buf)
	}
	for i, e := range s.query {
		if err := r.appendValue(e.prog); err != nil {
			return Rendered{}, fmt.Errorf("render %s.%s: %w", querySeat, e.name, err)
		}
		ends[len(s.headers)+i] = len(r.buf)
	}
	all := string(r.buf)
	for _, d := range r.derived {
		secrets = append(secrets, all[d[0]:d[1]])
	}

	pairs := make([]Pair, n)
	start := 0
	for i := range pairs {
		var e *entry
		if i < len(s.headers) {
			e = &s.headers[i]
		} else {
			e = &s.query[i-len(s.headers)]
		}
		v := all[start:ends[i]]
		start = ends[i]
		pairs[i] = Pair{Name: e.name, Value: v}
		if !e.prog.usesField {
			continue
		}
		secrets = append(secrets, v)
		if i >= len(s.headers) {
			if enc := escapeComponent(v); enc != v {
				secrets = append(secrets, enc)
			}
		}
	}
	var out Rendered
	if len(s.headers) > 0 {
		out.Headers = pairs[:len(s.headers):len(s.headers)]
	}
	if len(s.query) > 0 {
		out.Query = pairs[len(s.headers):]
	}
	out.Secrets = scrubOrder(secrets)
	return out, nil
}

// scrubOrder sorts secrets longest first and drops duplicates and empty
// strings.
func scrubOrder(s []string) []string {
	slices.SortFunc(s, func(a, b string) int {
		if c := cmp.Compare(len(b), len(a)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	s = slices.Compact(s)
	if n := len(s); n > 0 && s[n-1] == "" {
		s = s[:n-1]
	}
	if len(s) == 0 {
		return nil
	}
	return s
}

// appendValue evaluates one program onto r.buf.
func (r *renderer) appendValue(p program) error {
	for i := range p.parts {
		pt := &p.parts[i]
		var err error
		start := len(r.buf)
		switch pt.helper {
		case hValue:
			r.buf = r.appendOperand(r.buf, pt.args[0])
		case hTimestamp:
			r.buf = append(r.buf, r.tsb...)
		case hBase64:
			r.buf = r.appendBase64(r.buf, pt.args[0])
		case hHMACSHA256:
			r.buf = r.appendHMACHex(r.buf, pt.args[0], pt.args[1])
		case hHMACSHA256B64:
			r.buf, err = r.appendHMACB64(r.buf, pt.args[0], pt.args[1:])
		case hCDPJWT:
			r.buf, err = r.appendCDPJWT(r.buf, pt.args[0], pt.args[1])
		default:
			err = errors.New("unknown part") // unreachable: Compile emits only the kinds above
		}
		if err != nil {
			return err
		}
		if pt.helper != hValue && pt.helper != hTimestamp && readsField(pt.args) {
			r.derived = append(r.derived, [2]int{start, len(r.buf)})
		}
	}
	return nil
}

// readsField reports whether any operand is a field.
func readsField(args []operand) bool {
	for _, a := range args {
		if a.kind == opField {
			return true
		}
	}
	return false
}

// appendOperand appends an operand's text. A quoted literal is copied
// verbatim: it is never looked up as a field or a token.
func (r *renderer) appendOperand(dst []byte, o operand) []byte {
	switch o.kind {
	case opText:
		return append(dst, o.text...)
	case opField:
		return append(dst, r.vals[o.field]...)
	case opMethod:
		return append(dst, r.req.Method...)
	case opURL:
		return append(dst, r.req.URL...)
	case opPathAndQuery:
		return append(dst, r.req.PathAndQuery...)
	case opBody:
		return append(dst, r.req.Body...)
	case opTimestamp:
		return append(dst, r.tsb...)
	}
	return dst // unreachable: Compile emits no opNone operand
}

// describe names an operand for an error message without its value.
func (r *renderer) describe(o operand) string {
	switch o.kind {
	case opField:
		return "field " + r.set.keys[o.field]
	case opText:
		return "a quoted literal"
	case opMethod, opURL, opPathAndQuery, opBody, opTimestamp:
		return requestTokens()[o.kind-opMethod]
	}
	return "an operand"
}

func (r *renderer) rand() io.Reader {
	if r.env.Rand != nil {
		return r.env.Rand
	}
	return rand.Reader
}

// checkHeaderValue refuses a rendered header value that could split or
// smuggle a header: CR, LF, NUL, any other control byte
// (tab included) and any byte outside ASCII.
func checkHeaderValue(v []byte) error {
	for _, c := range v {
		switch {
		case c == '\r':
			return errors.New("rendered header value contains a carriage return")
		case c == '\n':
			return errors.New("rendered header value contains a line feed")
		case c == 0:
			return errors.New("rendered header value contains a NUL byte")
		case c >= 0x80:
			return errors.New("rendered header value contains a non-ASCII byte")
		case c < 0x20 || c == 0x7f:
			return errors.New("rendered header value contains a control byte")
		}
	}
	return nil
}
