package wire

import (
	"math"
)

// Moved from json.go: the parts of the frame library the
// daemon never runs, kept as the tests' oracle.

// intValue parses a raw JSON number that is a mathematical integer in
// [lo, hi]. Like JSON Schema's "integer", 200.0 and 2e2 count.
func intValue(v []byte, lo, hi int) (int, bool) {
	f, ok := numberValue(v)
	if !ok || f < float64(lo) || f > float64(hi) || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}
