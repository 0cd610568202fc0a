// Package grants is the grant book: every connection row and what may
// change it.
//
// Where each concern lives:
//
//   - Book (book.go) holds the store, the grant index and the caches, and
//     is what the executor reads (Snapshot) and the ceremonies commit
//     through (CommitIfUnchanged, WriteVerified: commit.go).
//   - The writers (connections.go): the five writers of a row plus
//     reconnect, through one funnel (Write) that checks, commits, publishes
//     the app's index entry and runs the change hooks; a revoke first runs
//     the revoke hooks the pairing families registered.
//   - The grant index (index.go; the start's scan and the first-use load
//     of an app's rows, index_start.go): one immutable snapshot per commit.
//   - Credential custody (custody.go): a slot's secrets, its connection
//     state, the credential cache the executor reads through.
//   - Ownership (owners.go): which host may reach which app (AppVisible,
//     CheckApp), sharing; the caller comes from ctx (hostauth.CallerHost).
//   - Proposers (channels.go): the user, directive, starter and registry
//     channels, the borrow ban and the start's pin re-consent; review
//     (review.go) and the token that binds an approval to it.
//   - Records: import and export (importdb.go), the journal as the caller
//     may read it and the writers' acts (acts.go).
//   - Summaries (Records too): Apps (apps.go) and the chat lane's facts
//     (facts.go); what pairing a row still owes is the Book's (pairing.go).
//
// Imports: daemon/journal, daemon/hints, daemon/hostauth, the store and
// the schema leaves (requirement, registry, starter, template, scrub).
// Never daemon/fetch or daemon/pairing: what grants needs of them it
// declares here (Gates) or receives as hooks (RevokeHook, ChangeHook).
// Domain types carry no JSON tags.
package grants
