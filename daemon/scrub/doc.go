// Package scrub holds the pure text scrubs the executor and the chat lane
// apply to what leaves snugd: gate 10's value scrub (§14, §14.1) as a Set
// of the values one request injected, the RFC-1918 literal scrub of
// model-bound text (§14.2, §16), the resolved-host scrub of a
// connection-relative request's error text (§15), and the bounded
// provider error extract (§14.3). They are functions of their input only: no clock, no log, no I/O.
//
// Imports: the standard library and the leaf daemon/internal/multimatch.
// Any daemon package may import it.
package scrub
