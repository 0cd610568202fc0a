package wire

import (
	"encoding/json"
	"fmt"
)

// Moved from decode.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

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

// firstProblem returns the first non-empty problem.
func firstProblem(ps ...string) string {
	for _, p := range ps {
		if p != "" {
			return p
		}
	}
	return ""
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
