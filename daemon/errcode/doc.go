// Package errcode is the registry of stable error codes snugd sends to
// clients: the frame protocol's codes and the NET_* codes of the executor,
// each with its retryable flag, whether it is reserved, and a one-line
// meaning.
//
// The registry is one ordered, append-only list (the table in codes.go,
// read with Lookup). A code is
// part of the public API: it is never renamed, reordered or deleted, and a
// retired code stays listed as reserved. Reserved codes are never emitted;
// Emittable says whether a code may be sent. Other folders add
// their own API-level codes (INTERNAL, BAD_REQUEST, …) by appending a
// constant and an entry at the end of the table in codes.go and running
// `go test ./daemon/errcode -update`; testdata/codes.golden shows the change
// in review, and the test refuses any change that is not an append.
//
// Failures carry a code as a bare Code or as an *Error, whose Msg is safe to
// show and whose Err is only logged; errors.Is(err, errcode.NetHostBlocked)
// and CodeOf(err) find it through wrapping.
//
// Imports: the standard library only. Every folder may import it.
package errcode
