// Package store holds every SQL statement snugd runs: the snug_connections
// table of spec §12.2, the sealed snug_secrets table of §13, and snugd's own
// snugd_* tables with their own migration counter.
//
// Imports: the standard library and github.com/mattn/go-sqlite3. Only daemon
// (and its subpackages) can reach it.
package store
