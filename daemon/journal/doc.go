// Package journal is the journal: one metadata-only entry per executor
// request, standing approval act and person's act. An entry never holds a
// URL, a body or a header value. Every entry is committed before the
// answer it records leaves (group commit, no linger), and a mutating
// request's row before its send; while the journal cannot be written
// (a full or read-only disk) the executor refuses credentialed requests.
//
// Imports: the store, daemon/errcode and daemon/hostauth (who acted).
// A leaf of the core: grants, fetch and pairing write to it.
package journal
