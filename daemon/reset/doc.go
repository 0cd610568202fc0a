// Package reset starts a stopped snugd's data directory over, for snugd
// ctl reset: it counts what a reset loses (paired hosts, connections,
// sealed credentials), and sets snugd.db, its WAL files, secrets.key and
// the linked-device helpers' sessions aside so that the next start
// creates a new database and a new key. It
// is the way out that a start refusing a lost database names.
//
// Imports: daemon/internal/store and the standard library. cmd/snugd
// imports it; nothing else does.
package reset
