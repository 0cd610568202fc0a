package wire

import (
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

// offerRequestID records a requestId candidate for recovery.
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
