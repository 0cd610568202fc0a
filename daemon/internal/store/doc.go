// Package store holds every SQL statement snugd runs: the snug_connections
// table, the sealed snug_secrets table, and snugd's own
// snugd_* tables with their own migration counter. Callers get typed,
// transactional methods (Store.Update, Store.View and the methods of Tx) and
// never write SQL.
//
// Imports: the standard library and github.com/mattn/go-sqlite3. Only daemon
// (and its subpackages) can reach it.
//
// # Storage layout
//
// The data directory (Options.Dir) is 0700 and owned by the user snugd runs
// as; Open creates it so and refuses an existing one that is group or world
// accessible or owned by someone else. It holds:
//
//	snugd.db, -wal, -shm  the database, 0600 (SQLite gives -wal and -shm the
//	                      database file's mode; Open also tightens them)
//	snugd.lock            0600; flock'd while a Store is open, and records
//	                      the holder as "pid=N started=T" (ReadLockHolder)
//	secrets.key           0600; the 32-byte master key (KeyFile)
//
// On Windows the lock is a share-mode lock on snugd.lock (released by the
// OS when the process ends, like flock) and mode bits are neither checked
// nor set: the directory's ACL guards the files. Elsewhere without flock
// (Solaris, Plan 9, …) Open refuses to run.
//
// snugd.db is in WAL mode with foreign_keys=ON, a 5 s busy timeout,
// trusted_schema=OFF, secure_delete=ON and synchronous=FULL: in WAL mode
// NORMAL already survives a crash of snugd, but an acknowledged commit could
// still vanish in a power cut or a kernel crash, and some writes cannot be
// repeated (a helper token is handed over once; a setup token is spent by
// its claim). FULL syncs the WAL at every commit, for the writers, custody
// and pairing alike. The journal's own commits (UpdateJournal) are the one
// exception: they run with synchronous=NORMAL, a WAL append without an
// fsync, because the journal commits before every answer and a crash of
// snugd (the failure that matters for an audit trail: the host saw an
// answer) loses none of them; only a power cut or a kernel crash can drop
// the last moments' entries. The pragma is set on the writer connection
// for that transaction alone and set back to FULL before any other write
// can use it. Writes go through one
// connection with BEGIN IMMEDIATE, so they run one at a time and a
// transaction's reads cannot go stale before its writes; reads go through a
// small pool of query_only connections and see one snapshot each.
//
// # A database that is not the one snugd left
//
// Open creates snugd.db only on a first start: where the key source holds
// no master key either. A snugd.db that is missing, empty (0 bytes) or a
// new database without a table, beside a master key, was deleted, emptied
// or replaced since snugd last ran; Open refuses it (ErrDatabaseGone),
// before writing anything to it, with the ways out: restore a backup, or
// Reset, which sets the database and the key aside so that the next Open
// is a first start. A database damaged past its first pages opens, since
// Open reads only those; Check runs quick_check over every page and
// reports damage as ErrDamaged.
//
// # A full disk, a read-only file system, a damaged file
//
// Update, View and Open mark a failure that SQLite or the OS reports as a
// full disk or a read-only file system (SQLITE_FULL, SQLITE_READONLY, an
// I/O error carrying ENOSPC, EDQUOT or EROFS) ErrStorageFull, and one that
// reports a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB) ErrDamaged, so the
// daemon can answer each with its own code instead of an internal error.
// A write that fails for a full disk is rolled back whole, and the store
// needs nothing to take writes again once space returns: the next Update
// simply succeeds. Damage is another matter: once Check or any
// transaction has found the file damaged, Damaged says so and Update
// refuses until the store is closed, while View still reads; RunChecks
// runs Check at once and on a schedule, beside serving.
//
// # Schema and migrations
//
// The schema is the embedded files schema/NN-name.sql, applied in order,
// each in its own transaction that also records NN as snugd_meta's
// 'schema_version'. PRAGMA user_version is Part II's user-DB version and is
// always 6; it is never the migration counter. A database whose counter is
// higher than this build knows is refused (ErrNewerSchema), as is a file
// that has tables but no snugd_meta.
//
// snug_connections is the USERDB_DDL byte for byte, without CHECK
// constraints; UpsertConnection enforces the spec's value sets and the
// writers' invariants in Go instead. snugd_hosts, snugd_pairings,
// snugd_invitations, snugd_journal and snugd_staged are snugd's own
// (hashed host tokens, pairing requests, hashed pairing invitations, a
// metadata-only journal bounded to its newest
// Options.JournalKeep entries, and the channel each staged change came
// from).
//
// Timestamps are TimeFormat: RFC 3339, UTC, exactly three fractional digits,
// taken from Options.Now once per transaction (Tx.Now).
//
// # Sealing
//
// Every snug_secrets value is sealed with AES-256-GCM under the master key:
//
//	0x01 ‖ nonce (12 bytes, fresh from crypto/rand for every write) ‖ ciphertext ‖ tag (16 bytes)
//
// The leading byte is the format version. The additional data is the row's
// key name, so a value moved or copied to another key does not open. A value
// that does not open is an error naming the key (ErrUnreadableSecret), never
// garbage and never the value. The store remembers, in memory, each key
// seen not to open — by CheckSeals, which the daemon runs with its
// integrity check, or by any read — until a new value or a delete
// replaces it (UnreadableSecrets), so a status read can say so without
// opening anything. Values are Secret, which prints, logs and marshals as
// "REDACTED". The store never logs a value.
//
// The master key never enters the database, so a copied snugd.db alone (or
// a backup of it) discloses no credential. snugd_meta keeps a key check (a
// constant sealed under the key); Open refuses a key that does not open it,
// and refuses to make a new key for a database that already holds sealed
// values, so a lost or swapped key stops the daemon at start instead of
// surfacing later as unreadable credentials.
//
// # The master key and the OS keychain
//
// The key comes from a KeySource. snugd ships KeyFile: secrets.key in the
// data directory, created on first open atomically (a new O_EXCL temporary
// file, written, fsynced, linked into place without replacing anything, the
// directory fsynced); on every later open a key file that is not a regular
// file, is open to group or others, belongs to another user, or is not
// exactly 32 bytes is refused with an error naming the file and the fix.
//
// Decision: no OS keychain for now. snugd's default install is a system
// service, and a Linux system service has no keychain (the Secret Service
// API needs a user's D-Bus session); macOS's login keychain is locked for a
// LaunchDaemon and the System keychain needs root; on Windows DPAPI under
// the service account protects no better than the account's own ACL'd
// directory. In each case the key's real guard is the service account's file
// permissions, which KeyFile already uses, and one mechanism on every
// platform keeps backups and recovery one story ("back up snugd.db together
// with secrets.key"). A per-user install could use the user's keychain: a
// KeySource implementation (Load/Create/String) in its own file, chosen by
// cmd/snugd through Options.Keys, adds it without touching the rest.
//
// # Export and import
//
// Export writes a user DB: VACUUM INTO a temporary file beside the
// destination, delete every snug_secrets row and drop every snugd_* table,
// VACUUM again (no freed page keeps a byte), check, fsync, rename.
// ReadUserDB reads an untrusted user DB read-only and immutable, with
// trusted_schema off and bounds on rows and value sizes, and returns its
// snug_connections rows raw, reporting structurally unusable ones instead of
// failing; it never reads snug_secrets. The daemon reconciles and
// applies the result with UpsertConnection inside one Update.
package store
