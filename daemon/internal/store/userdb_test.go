package store

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// validRow is an INSERT of one well-formed row.
func validRow(app, slot string) string {
	return fmt.Sprintf(`INSERT INTO snug_connections VALUES ('%s', '%s', '{"slot":"%s"}', 1, 'user', 0.5, 'approved', NULL, 0, '["api.example.com"]', '2026-01-01T00:00:00.000Z', NULL, '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z');`, app, slot, slot)
}

// userDB writes a user DB built by stmts and returns its path.
func userDB(t *testing.T, stmts string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "user.db")
	writeRaw(t, p, stmts, true)
	return p
}

// looseDDL has the 14 columns without types or constraints, so a hostile
// file can store anything in them.
const looseDDL = `CREATE TABLE snug_connections (app_id, slot, requirement_json, requirement_version, provenance, confidence,
	status, pending_requirement_json, imported, allowed_hosts, approved_at, revoked_at, created_at, updated_at);`

func TestReadUserDBReadsRowsRaw(t *testing.T) {
	p := userDB(t, specDDL+"; PRAGMA user_version = 6;"+validRow("app-1", "github")+
		`INSERT INTO snug_connections (app_id, slot, requirement_json, requirement_version, provenance, status, created_at, updated_at)
		 VALUES ('app:2', 'Mixed-Case', '{ "a" : 1 }', 7, 'assistant', 'pending', 'yesterday', 'today');
		 CREATE TABLE snug_secrets (key TEXT PRIMARY KEY, value BLOB NOT NULL, updated_at TEXT NOT NULL);
		 INSERT INTO snug_secrets VALUES ('auth:app-1:github:token', 'plaintext', 'x');`)
	rows, err := ReadUserDB(t.Context(), p)
	if err != nil {
		t.Fatalf("ReadUserDB = %v", err)
	}
	if len(rows) != 2 {
		t.Fatalf("ReadUserDB read %d rows, want 2", len(rows))
	}
	r := rows[0]
	if r.Unusable != "" || r.AppID != "app-1" || r.Slot != "github" || r.RequirementJSON != `{"slot":"github"}` ||
		r.RequirementVersion != 1 || r.Confidence == nil || *r.Confidence != 0.5 || r.Status != "approved" ||
		r.PendingRequirementJSON != nil || r.AllowedHosts != `["api.example.com"]` || *r.ApprovedAt != "2026-01-01T00:00:00.000Z" ||
		r.RevokedAt != nil || r.UpdatedAt != "2026-01-02T00:00:00.000Z" {
		t.Errorf("row 0 = %+v", r)
	}
	// Semantically wrong but structurally sound rows come back as they are:
	// judging them is the reconciler's job.
	r = rows[1]
	if r.Unusable != "" || r.Index != 1 || r.Slot != "Mixed-Case" || r.RequirementJSON != `{ "a" : 1 }` || r.Provenance != "assistant" ||
		r.Status != "pending" || r.AllowedHosts != "[]" || r.Confidence != nil || r.CreatedAt != "yesterday" {
		t.Errorf("row 1 = %+v", r)
	}
}

func TestReadUserDBReportsUnusableRows(t *testing.T) {
	big := "replace(hex(zeroblob(600000)), '0', 'a')" // 1,200,000 characters
	tests := []struct {
		name, values, want string
	}{
		{"blob app_id", `x'0102', 's', '{}', 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "app_id is blob, want text"},
		{"NULL slot", `'a', NULL, '{}', 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "slot is NULL"},
		{"integer requirement_json", `'a', 's', 42, 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "requirement_json is integer, want text"},
		{"text requirement_version", `'a', 's', '{}', 'one', 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "requirement_version is text, want integer"},
		{"real requirement_version", `'a', 's', '{}', 1.5, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "requirement_version is real, want integer"},
		{"text confidence", `'a', 's', '{}', 1, 'user', 'high', 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "confidence is text, want real"},
		{"infinite confidence", `'a', 's', '{}', 1, 'user', 1e999, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "confidence is not a finite number"},
		{"NULL imported", `'a', 's', '{}', 1, 'user', NULL, 'declared', NULL, NULL, '[]', NULL, NULL, 't', 't'`, "imported is NULL"},
		{"NULL allowed_hosts", `'a', 's', '{}', 1, 'user', NULL, 'declared', NULL, 0, NULL, NULL, NULL, 't', 't'`, "allowed_hosts is NULL"},
		{"blob pending", `'a', 's', '{}', 1, 'user', NULL, 'approved', x'00', 0, '[]', NULL, NULL, 't', 't'`, "pending_requirement_json is blob, want text"},
		{"integer approved_at", `'a', 's', '{}', 1, 'user', NULL, 'approved', NULL, 0, '[]', 5, NULL, 't', 't'`, "approved_at is integer, want text"},
		{"NULL updated_at", `'a', 's', '{}', 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', NULL`, "updated_at is NULL"},
		{"text not UTF-8", `'a', CAST(x'ff' AS TEXT), '{}', 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "slot is not valid UTF-8"},
		{"text with NUL", `'a', 's', CAST(x'7b007d' AS TEXT), 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "requirement_json is not valid UTF-8"},
		{"oversized requirement", `'a', 's', ` + big + `, 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't'`, "requirement_json is 1200000 bytes, over the 1048576-byte bound"},
		{"oversized blob", `'a', 's', '{}', 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, zeroblob(3000000), 't'`, "created_at is 3000000 bytes"},
		{"value past SQLite's length limit", `'a', 's', '{}', 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', zeroblob(6000000)`, "updated_at is 6000000 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := userDB(t, looseDDL+"PRAGMA user_version = 6;"+validRow("ok-1", "a")+
				"INSERT INTO snug_connections VALUES ("+tc.values+");"+validRow("ok-2", "b"))
			rows, err := ReadUserDB(t.Context(), p)
			if err != nil {
				t.Fatalf("ReadUserDB = %v, want the rows with one unusable", err)
			}
			if len(rows) != 3 || rows[0].Unusable != "" || rows[2].Unusable != "" || rows[2].AppID != "ok-2" {
				t.Fatalf("ReadUserDB = %+v, want three rows, the outer two usable", rows)
			}
			bad := rows[1]
			if !strings.Contains(bad.Unusable, tc.want) {
				t.Errorf("Unusable = %q, want %q", bad.Unusable, tc.want)
			}
			if bad.Index != 1 || bad.RequirementJSON != "" || bad.Status != "" || len(bad.Unusable) > 200 {
				t.Errorf("unusable row = %+v, want only its index, app id, slot and reason", bad)
			}
		})
	}
}

func TestReadUserDBRefusesFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// corrupt writes a 30-page user DB (512-byte pages: the schema in pages
	// 1 and 4, the table and its index after) with the given pages
	// scribbled over.
	corrupt := func(name string, pages ...int) string {
		p := userDB(t, specDDL+"; PRAGMA user_version = 6; PRAGMA page_size = 512; VACUUM;"+
			"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 200) INSERT INTO snug_connections SELECT 'app'||i, 's', '{}', 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't' FROM n;")
		b, _ := os.ReadFile(p)
		for _, pg := range pages {
			for i := (pg - 1) * 512; i < pg*512; i++ {
				b[i] = byte(i * 7)
			}
		}
		return write(name, b)
	}
	tests := []struct {
		name string
		path func() string
		want string
	}{
		{"missing file", func() string { return filepath.Join(dir, "nope.db") }, "no such file"},
		{"a directory", func() string { return dir }, "not a regular file"},
		{"empty file", func() string { return write("empty.db", nil) }, "not an SQLite database"},
		{"text file", func() string { return write("text.db", []byte("app_id,slot\nx,y\n")) }, "not an SQLite database"},
		{"magic then garbage", func() string {
			return write("garbage.db", append([]byte(sqliteMagic), bytes.Repeat([]byte{0xAB}, 4096)...))
		}, "not a readable SQLite database"},
		{"user_version 5", func() string { return userDB(t, specDDL+"; PRAGMA user_version = 5;") }, "user_version is 5"},
		{"user_version 7", func() string { return userDB(t, specDDL+"; PRAGMA user_version = 7;") }, "user_version is 7"},
		{"user_version 0", func() string { return userDB(t, specDDL) }, "user_version is 0"},
		{"no snug_connections", func() string { return userDB(t, "CREATE TABLE t (x); PRAGMA user_version = 6;") }, "no snug_connections table"},
		{"snug_connections a view", func() string {
			return userDB(t, "CREATE TABLE t (x); CREATE VIEW snug_connections AS SELECT * FROM t; PRAGMA user_version = 6;")
		}, "is a view"},
		{"snug_connections a virtual table", func() string {
			return userDB(t, "CREATE VIRTUAL TABLE snug_connections USING fts3(app_id, slot, requirement_json, requirement_version, provenance, confidence, status, pending_requirement_json, imported, allowed_hosts, approved_at, revoked_at, created_at, updated_at); PRAGMA user_version = 6;")
		}, "virtual table"},
		{"a column missing", func() string {
			return userDB(t, mustReplace(t, looseDDL, " revoked_at,", "")+"PRAGMA user_version = 6;")
		}, "no revoked_at column"},
		{"a generated column", func() string {
			return userDB(t, mustReplace(t, looseDDL, "\tstatus,", "\tstatus AS (upper(provenance)),")+"PRAGMA user_version = 6;")
		}, "generated or hidden column"},
		{"too many rows", func() string {
			return userDB(t, looseDDL+fmt.Sprintf("PRAGMA user_version = 6; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d) INSERT INTO snug_connections (app_id) SELECT i FROM n;", MaxImportRows+1))
		}, "over the bound"},
		{"too many bytes", func() string {
			// Each value is under the per-value bound; together they are
			// over the file's.
			n := MaxImportBytes/1000000 + 1
			return userDB(t, looseDDL+fmt.Sprintf("PRAGMA user_version = 6; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < %d) INSERT INTO snug_connections SELECT 'app', 's'||i, replace(hex(zeroblob(500000)), '0', 'a'), 1, 'user', NULL, 'declared', NULL, 0, '[]', NULL, NULL, 't', 't' FROM n;", n))
		}, "over the bound"},
		{"damaged schema", func() string { return corrupt("schema.db", 4) }, "malformed database schema"},
		{"damaged table pages", func() string { return corrupt("table.db", 12, 13) }, "integrity check"},
		{"damaged table and index pages", func() string { return corrupt("pages.db", 25, 26, 27, 28) }, "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := ReadUserDB(t.Context(), tc.path())
			if !errors.Is(err, ErrNotUserDB) || !strings.Contains(err.Error(), tc.want) || rows != nil {
				t.Errorf("ReadUserDB = %d rows, %v, want ErrNotUserDB saying %q", len(rows), err, tc.want)
			}
		})
	}
}

func TestReadUserDBIgnoresTriggersViewsAndSecrets(t *testing.T) {
	// The file's triggers never fire (nothing is written), its views are
	// never read, and snug_secrets is never touched: here it is a view that
	// fails if anyone reads it.
	p := userDB(t, specDDL+"; PRAGMA user_version = 6;"+validRow("app", "s")+`
		CREATE TABLE log (x);
		CREATE TRIGGER t1 AFTER INSERT ON snug_connections BEGIN INSERT INTO log VALUES (1); END;
		CREATE TRIGGER t2 BEFORE DELETE ON snug_connections BEGIN SELECT RAISE(ABORT, 'no'); END;
		CREATE VIEW snug_secrets AS SELECT load_extension('/nonexistent') AS key;
		CREATE VIEW v AS SELECT 1/0;`)
	before, _ := os.ReadFile(p)
	rows, err := ReadUserDB(t.Context(), p)
	if err != nil || len(rows) != 1 || rows[0].Unusable != "" {
		t.Fatalf("ReadUserDB = %+v, %v, want the one row", rows, err)
	}
	after, _ := os.ReadFile(p)
	if !bytes.Equal(before, after) {
		t.Error("ReadUserDB changed the file")
	}
	if _, err := os.Stat(p + "-wal"); err == nil {
		t.Error("ReadUserDB created a WAL beside the file")
	}
}

func TestReadUserDBReadsWALModeAndOddNames(t *testing.T) {
	// A file written in WAL mode and fully checkpointed, under a path that
	// needs URI escaping, with the table named in another case.
	dir := filepath.Join(t.TempDir(), "a?b#c%d e")
	os.Mkdir(dir, 0o700)
	p := filepath.Join(dir, "user.db")
	writeRaw(t, p, "PRAGMA journal_mode = WAL;"+mustReplace(t, specDDL, "snug_connections", "SNUG_Connections")+
		"; PRAGMA user_version = 6;"+validRow("app", "s")+"PRAGMA wal_checkpoint(TRUNCATE);", true)
	rows, err := ReadUserDB(t.Context(), p)
	if err != nil || len(rows) != 1 || rows[0].AppID != "app" {
		t.Fatalf("ReadUserDB = %+v, %v, want the one row", rows, err)
	}
}

// A user DB still open in another program keeps its newest transactions in
// its -wal file, which an immutable read ignores: the file is refused, never
// read without them.
func TestReadUserDBRefusesPendingWAL(t *testing.T) {
	p := filepath.Join(t.TempDir(), "user.db")
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: fileURI(p, "")})
	defer db.Close()
	db.SetMaxOpenConns(1)
	// The table reaches the file; the row stays in the log.
	if _, err := db.Exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;" + specDDL + "; PRAGMA user_version = 6; PRAGMA wal_checkpoint(TRUNCATE);" + validRow("app", "s")); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadUserDB(t.Context(), p)
	if !errors.Is(err, ErrNotUserDB) || !strings.Contains(err.Error(), "-wal") {
		t.Fatalf("ReadUserDB(open WAL-mode file) = %d rows, %v; want a refusal naming the -wal file", len(rows), err)
	}
	db.Close()
	if rows, err := ReadUserDB(t.Context(), p); err != nil || len(rows) != 1 {
		t.Fatalf("ReadUserDB after the writer closed = %d rows, %v; want the row", len(rows), err)
	}
}

func mustReplace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%q not in %q", old, s)
	}
	return strings.Replace(s, old, new, 1)
}
