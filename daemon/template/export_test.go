package template

import "fmt"

// WellFormed reports, for tests, why a compiled Set could reach a fallback:
// an unresolved operand, a part that is not a pinned helper, a call with an
// arity outside the helper's, or a field index out of range. A Set from
// Compile is always well formed.
func WellFormed(s *Set) error {
	for _, e := range append(append([]entry{}, s.headers...), s.query...) {
		for _, pt := range e.prog.parts {
			least, most := pt.helper.arity()
			if pt.helper > hCDPJWT || len(pt.args) < least || len(pt.args) > most {
				return fmt.Errorf("%s: part %v with %d arguments", e.name, pt.helper, len(pt.args))
			}
			for _, a := range pt.args {
				if a.kind == opNone || a.kind > opTimestamp || a.kind == opField && (a.field < 0 || a.field >= len(s.keys)) {
					return fmt.Errorf("%s: operand %+v", e.name, a)
				}
				if pt.helper == hCDPJWT && a.kind != opField {
					return fmt.Errorf("%s: cdp_jwt reads a %v operand", e.name, a.kind)
				}
			}
		}
	}
	return nil
}
