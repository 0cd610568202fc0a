// Package journal is the journal: one metadata-only entry per executor
// request, standing approval act and person's act. An entry never holds a
// URL, a body or a header value. Ordinary entries are batched off the
// request path by a service the daemon runs; acts and unattended sends are
// written at once.
//
// Imports: the store, daemon/errcode and daemon/hostauth (who acted).
// A leaf of the core: grants, fetch and pairing write to it.
package journal
