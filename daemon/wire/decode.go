package wire

import (
	"encoding/json"
	"fmt"

	"github.com/snug/snugd/daemon/errcode"
)

// decoder collects what a frame parser learns on its one pass: whether v
// was 1, the first problem with the frame's shape, and the requestId to
// recover if the frame is refused.
type decoder struct {
	typ          string
	code         errcode.Code // the code a shape failure answers with
	problem      string       // the first shape problem, "" when none
	typeSeen     bool
	vSeen, vOK   bool
	rid          string
	ridAmbiguous bool
}

func newDecoder(typ string) decoder { return decoder{typ: typ, code: shapeCode(typ)} }

// fail records msg unless an earlier problem was recorded.
func (d *decoder) fail(msg string) {
	if d.problem == "" {
		d.problem = msg
	}
}

// common handles the two keys every frame has, and reports whether m was
// one of them.
func (d *decoder) common(m member) bool {
	switch string(m.key) {
	case "type":
		d.typeSeen = true
		if !rawStringIs(m.val, d.typ) {
			d.fail("type must be " + d.typ)
		}
	case "v":
		// A v that appears twice must be 1 both times.
		f, ok := numberValue(m.val)
		one := ok && f == protocolVersion
		d.vOK = one && (d.vOK || !d.vSeen)
		d.vSeen = true
	default:
		return false
	}
	return true
}

// offerRequestID records a requestId candidate for recovery (R1).
func (d *decoder) offerRequestID(m member) {
	if m.kind() != kindString {
		d.ridAmbiguous = true
		return
	}
	s := stringValue(m.val)
	if n := chars(s); n < 1 || n > MaxIDChars || (d.rid != "" && d.rid != s) {
		d.ridAmbiguous = true
		return
	}
	d.rid = s
}

func (d *decoder) recovered() string {
	if d.ridAmbiguous {
		return ""
	}
	return d.rid
}

// versionErr is the UNSUPPORTED_VERSION error when v was absent or not 1.
func (d *decoder) versionErr() *ParseError {
	if d.vSeen && d.vOK {
		return nil
	}
	return &ParseError{Code: errcode.UnsupportedVersion, Type: d.typ, RequestID: d.recovered(), Message: "v must be 1"}
}

// err is the error for the frame: the version first (a frame of another
// version may have another shape), then the first shape problem.
func (d *decoder) err() error {
	if e := d.versionErr(); e != nil {
		return e
	}
	if d.problem != "" {
		return &ParseError{Code: d.code, Type: d.typ, RequestID: d.recovered(), Message: d.problem}
	}
	return nil
}

// str decodes a string member, recording a problem when it is not one.
func (d *decoder) str(m member, field string) string {
	if m.kind() != kindString {
		d.fail(field + " must be a string")
		return ""
	}
	return stringValue(m.val)
}

func (d *decoder) boolean(m member, field string) bool {
	switch m.kind() {
	case kindTrue:
		return true
	case kindFalse:
	default:
		d.fail(field + " must be a boolean")
	}
	return false
}

func (d *decoder) integer(m member, field string, lo, hi int) int {
	n, ok := intValue(m.val, lo, hi)
	if !ok {
		d.fail(fmt.Sprintf("%s must be an integer in %d–%d", field, lo, hi))
	}
	return n
}

// raw keeps a member's value as it came, when its kind is one of kinds.
func (d *decoder) raw(m member, field string, kinds string, what string) json.RawMessage {
	for i := 0; i < len(kinds); i++ {
		if m.kind() == kinds[i] {
			return json.RawMessage(m.val)
		}
	}
	d.fail(field + " must be " + what)
	return nil
}

// require records a problem for each required field not seen.
func (d *decoder) require(seen bool, field string) {
	if !seen {
		d.fail(field + " is required")
	}
}

// checkLen returns the problem when s is not lo–hi characters.
func checkLen(field, s string, lo, hi int) string {
	if n := chars(s); n < lo || n > hi {
		if lo == 0 {
			return fmt.Sprintf("%s must be at most %d characters", field, hi)
		}
		return fmt.Sprintf("%s must be %d–%d characters", field, lo, hi)
	}
	return ""
}

// firstProblem returns the first non-empty problem.
func firstProblem(ps ...string) string {
	for _, p := range ps {
		if p != "" {
			return p
		}
	}
	return ""
}

// truncateChars cuts s to at most n characters.
func truncateChars(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// checked is a frame with value rules of its own.
type checked interface {
	Frame
	problem() string
}

// finish ends a decoder's pass: the type key is required, v's own rules
// apply when its shape held, and the result is v or the zero value and
// the frame's error.
func finish[T checked](v T, d *decoder) (T, error) {
	d.require(d.typeSeen, "type")
	if d.problem == "" {
		d.fail(v.problem())
	}
	if err := d.err(); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}
