// Package scrub holds the pure text scrubs the executor and the chat lane
// apply to what leaves snugd: gate 10's value scrub as a Set
// of the values one request injected, the RFC-1918 literal scrub of
// model-bound text, the resolved-host scrub of a
// connection-relative request's error text, and the bounded
// provider error extract. They are functions of their input only: no clock, no log, no I/O.
//
// Imports: the standard library and the leaf daemon/internal/multimatch.
// Any daemon package may import it.
package scrub
