package store

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// specDDL is USERDB_DDL as spec Part III §12.2 prints it, byte for byte.
const specDDL = `CREATE TABLE IF NOT EXISTS snug_connections (
  app_id TEXT NOT NULL,
  slot TEXT NOT NULL,
  requirement_json TEXT NOT NULL,
  requirement_version INTEGER NOT NULL,
  provenance TEXT NOT NULL,
  confidence REAL,
  status TEXT NOT NULL,
  pending_requirement_json TEXT,
  imported INTEGER NOT NULL DEFAULT 0,
  allowed_hosts TEXT NOT NULL DEFAULT '[]',
  approved_at TEXT,
  revoked_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (app_id, slot)
)`

// conformance: P3-C12.2-02
func TestConnectionsDDLIsTheSpecText(t *testing.T) {
	b, err := schemaFiles.ReadFile("schema/02-snug-connections.sql")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), specDDL+";\n") {
		t.Errorf("schema/02-snug-connections.sql does not hold the spec's DDL byte for byte")
	}
	s := openStore(t)
	var stored string
	view(t, s, func(tx *Tx) error {
		return tx.queryRow("SELECT sql FROM sqlite_schema WHERE name = 'snug_connections'").Scan(&stored)
	})
	// SQLite keeps the statement as written, minus "IF NOT EXISTS ".
	if want := strings.Replace(specDDL, "IF NOT EXISTS ", "", 1); stored != want {
		t.Errorf("sqlite_schema.sql = %q, want %q", stored, want)
	}
}

// conformance: P3-C12.2-02
func TestConnectionsTableInfo(t *testing.T) {
	type column struct {
		name, typ string
		notNull   bool
		dflt      sql.NullString
		pk        int
	}
	want := []column{
		{"app_id", "TEXT", true, sql.NullString{}, 1},
		{"slot", "TEXT", true, sql.NullString{}, 2},
		{"requirement_json", "TEXT", true, sql.NullString{}, 0},
		{"requirement_version", "INTEGER", true, sql.NullString{}, 0},
		{"provenance", "TEXT", true, sql.NullString{}, 0},
		{"confidence", "REAL", false, sql.NullString{}, 0},
		{"status", "TEXT", true, sql.NullString{}, 0},
		{"pending_requirement_json", "TEXT", false, sql.NullString{}, 0},
		{"imported", "INTEGER", true, sql.NullString{String: "0", Valid: true}, 0},
		{"allowed_hosts", "TEXT", true, sql.NullString{String: "'[]'", Valid: true}, 0},
		{"approved_at", "TEXT", false, sql.NullString{}, 0},
		{"revoked_at", "TEXT", false, sql.NullString{}, 0},
		{"created_at", "TEXT", true, sql.NullString{}, 0},
		{"updated_at", "TEXT", true, sql.NullString{}, 0},
	}
	s := openStore(t)
	var got []column
	view(t, s, func(tx *Tx) error {
		rows, err := tx.query("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('snug_connections') ORDER BY cid")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c column
			if err := rows.Scan(&c.name, &c.typ, &c.notNull, &c.dflt, &c.pk); err != nil {
				return err
			}
			got = append(got, c)
		}
		return rows.Err()
	})
	if len(got) != len(want) {
		t.Fatalf("table_info has %d columns, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("column %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// conformance: P3-C12.2-01
func TestUserVersionIsSix(t *testing.T) {
	s := openStore(t)
	var v int
	view(t, s, func(tx *Tx) error { return tx.queryRow("PRAGMA user_version").Scan(&v) })
	if v != 6 {
		t.Errorf("PRAGMA user_version = %d, want 6", v)
	}
	// Reopening (no migration left to run) keeps it.
	dir := s.Dir()
	s.Close()
	s = openStore(t, func(o *Options) { o.Dir = dir })
	view(t, s, func(tx *Tx) error { return tx.queryRow("PRAGMA user_version").Scan(&v) })
	if v != 6 {
		t.Errorf("PRAGMA user_version after reopen = %d, want 6", v)
	}
}

// conformance: P3-C12.2-03
func TestConnectionPrimaryKey(t *testing.T) {
	s := openStore(t)
	insert := `INSERT INTO snug_connections (app_id, slot, requirement_json, requirement_version, provenance, status, created_at, updated_at)
		VALUES (?, ?, '{}', 1, 'user', 'declared', 'x', 'x')`
	update(t, s, func(tx *Tx) error {
		_, err := tx.exec(insert, "app", "slot")
		return err
	})
	err := s.Update(t.Context(), func(tx *Tx) error {
		_, err := tx.exec(insert, "app", "slot")
		return err
	})
	var se sqlite3.Error
	if !errors.As(err, &se) || se.ExtendedCode != sqlite3.ErrConstraintPrimaryKey {
		t.Errorf("second insert of (app, slot) = %v, want a primary key violation", err)
	}
	// Either half alone differs: both inserts succeed.
	update(t, s, func(tx *Tx) error {
		if _, err := tx.exec(insert, "app", "other"); err != nil {
			return err
		}
		_, err := tx.exec(insert, "other", "slot")
		return err
	})
}

func TestConnectionPragmas(t *testing.T) {
	s := openStore(t)
	update(t, s, func(tx *Tx) error {
		for _, tc := range []struct {
			pragma string
			want   string
		}{
			{"journal_mode", "wal"},
			{"synchronous", "2"}, // FULL
			{"foreign_keys", "1"},
			{"busy_timeout", "5000"},
			{"trusted_schema", "0"},
			{"secure_delete", "1"},
		} {
			var got string
			if err := tx.queryRow("PRAGMA " + tc.pragma).Scan(&got); err != nil {
				return err
			}
			if got != tc.want {
				t.Errorf("PRAGMA %s = %s, want %s", tc.pragma, got, tc.want)
			}
		}
		return nil
	})
	view(t, s, func(tx *Tx) error {
		var q int
		if err := tx.queryRow("PRAGMA query_only").Scan(&q); err != nil || q != 1 {
			t.Errorf("PRAGMA query_only on a read connection = %d, %v, want 1", q, err)
		}
		return nil
	})
}

func TestMigrationsAreNumberedInOrder(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatalf("migrations() = %v", err)
	}
	for i, m := range ms {
		if m.version != i+1 {
			t.Errorf("migration %s has version %d, want %d", m.name, m.version, i+1)
		}
	}
	s := openStore(t)
	var v int
	view(t, s, func(tx *Tx) error {
		return tx.queryRow("SELECT value FROM snugd_meta WHERE key = 'schema_version'").Scan(&v)
	})
	if v != len(ms) {
		t.Errorf("snugd_meta schema_version = %d, want %d", v, len(ms))
	}
}

func TestMigrationsResumeFromTheCounter(t *testing.T) {
	// A database left at schema 3 (by an older build) gets 4 to the newest on open.
	s := openStore(t)
	dir := s.Dir()
	update(t, s, func(tx *Tx) error {
		_, err := tx.exec("DROP TABLE snugd_invitations; DROP TABLE snugd_journal_size; DROP TABLE snugd_journal_counts; DROP TABLE snugd_replaced; DROP TABLE snugd_app_shares; DROP TABLE snugd_app_owners; DROP TABLE snugd_staged; DROP TABLE snugd_journal; DROP TABLE snugd_pairings; DROP TABLE snugd_hosts; UPDATE snugd_meta SET value = 3 WHERE key = 'schema_version'")
		return err
	})
	s.Close()
	s = openStore(t, func(o *Options) { o.Dir = dir })
	var n, v int
	view(t, s, func(tx *Tx) error {
		err := tx.queryRow("SELECT count(*) FROM sqlite_schema WHERE name IN ('snugd_hosts', 'snugd_pairings', 'snugd_journal', 'snugd_staged')").Scan(&n)
		if err != nil {
			return err
		}
		return tx.queryRow("SELECT value FROM snugd_meta WHERE key = 'schema_version'").Scan(&v)
	})
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 || v != len(ms) {
		t.Errorf("after reopening a schema-3 database: %d of 4 tables, schema_version %d, want 4 and %d", n, v, len(ms))
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	s := openStore(t)
	dir := s.Dir()
	update(t, s, func(tx *Tx) error {
		_, err := tx.exec("UPDATE snugd_meta SET value = 99 WHERE key = 'schema_version'")
		return err
	})
	s.Close()
	_, err := Open(t.Context(), Options{Dir: dir})
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "schema 99") {
		t.Errorf("Open of a schema-99 database = %v, want ErrNewerSchema naming 99", err)
	}
	// The refused Open let go of the directory.
	if _, err := ReadLockHolder(dir); !errors.Is(err, ErrNoLockHolder) {
		t.Errorf("ReadLockHolder after a refused Open = %v, want ErrNoLockHolder", err)
	}
}

func TestOpenRefusesForeignDatabase(t *testing.T) {
	tests := []struct {
		name  string
		setup string
		want  string
	}{
		{"a Snug user DB", specDDL + "; PRAGMA user_version = 6", "not a snugd database"},
		{"some other database", "CREATE TABLE t (x)", "not a snugd database"},
		{"only a user_version", "PRAGMA user_version = 3", "not a snugd database"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			s := openStore(t, func(o *Options) { o.Dir = dir })
			s.Close()
			writeRaw(t, filepath.Join(dir, DBFile), tc.setup, true)
			_, err := Open(t.Context(), Options{Dir: dir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	t.Run("user_version changed", func(t *testing.T) {
		s := openStore(t)
		dir := s.Dir()
		update(t, s, func(tx *Tx) error { _, err := tx.exec("PRAGMA user_version = 7"); return err })
		s.Close()
		_, err := Open(t.Context(), Options{Dir: dir})
		if err == nil || !strings.Contains(err.Error(), "user_version 7") {
			t.Errorf("Open = %v, want an error naming user_version 7", err)
		}
	})
}

// writeRaw replaces the file at path with a fresh database built by stmts
// (fresh: the old file and its WAL are removed first).
func writeRaw(t *testing.T, path, stmts string, fresh bool) {
	t.Helper()
	if fresh {
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			removeIfExists(t, p)
		}
	}
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: fileURI(path, "")})
	defer db.Close()
	if _, err := db.Exec(stmts); err != nil {
		t.Fatalf("build %s: %v", path, err)
	}
}
