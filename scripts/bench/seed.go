package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// userDDL is the user DB's USERDB_DDL, the table snugd ctl import reads.
const userDDL = `CREATE TABLE IF NOT EXISTS snug_connections (
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

// importBatch is how many rows one user DB holds: snugd imports at most
// 10,000 rows from one file (store.MaxImportRows).
const importBatch = 10_000

// slotsPerApp is AUTH_MAX_SLOTS_PER_APP.
const slotsPerApp = 8

// writeUserDB writes rows [from, to) of the seed as a user DB at path: an
// api_key connection per row like the bench's own, 8 slots per app, each
// app its own host so the index holds distinct hosts.
func writeUserDB(path string, from, to int) error {
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(userDDL + "; PRAGMA user_version = 6;"); err != nil {
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.Prepare(`INSERT INTO snug_connections VALUES (?, ?, ?, 1, 'user', NULL, 'approved', NULL, 0, ?, ?, NULL, ?, ?)`)
	if err != nil {
		return err
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	for i := from; i < to; i++ {
		app := fmt.Sprintf("seed-%06d", i/slotsPerApp)
		slot := fmt.Sprintf("s%d", i%slotsPerApp)
		host := fmt.Sprintf("api%06d.bench.test", i/slotsPerApp)
		req := strings.NewReplacer(`"slot": "api"`, `"slot": "`+slot+`"`, "api.bench.test", host).Replace(benchRequirement)
		if _, err := st.Exec(app, slot, req, `["`+host+`"]`, now, now, now); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// seed makes a data directory holding rows connection rows, imported
// through the real daemon's snugd ctl import in files of 10,000 rows.
func seed(cfg config, name string, rows int, hostsFile, caFile, emptyDir string) (string, int, error) {
	dataDir, port, err := newDataDir(filepath.Join(cfg.dir, name))
	if err != nil {
		return "", 0, err
	}
	s, _, err := startSnugd(cfg.snugd, dataDir, "0-1", hostsFile, caFile, emptyDir, port)
	if err != nil {
		return "", 0, err
	}
	defer s.stop()
	began := time.Now()
	for from := 0; from < rows; from += importBatch {
		to := min(from+importBatch, rows)
		f := filepath.Join(cfg.dir, fmt.Sprintf("%s-%d.db", name, from))
		if err := writeUserDB(f, from, to); err != nil {
			return "", 0, fmt.Errorf("write user DB: %w", err)
		}
		out, err := s.ctl("", "import", f)
		if err != nil {
			return "", 0, err
		}
		if !strings.Contains(out, fmt.Sprintf("%d demoted", to-from)) {
			return "", 0, fmt.Errorf("import of rows %d–%d: %s", from, to, strings.TrimSpace(out))
		}
		os.Remove(f)
		fmt.Fprintf(os.Stderr, "bench: %s: %d rows imported (%v)\n", name, to, time.Since(began).Round(time.Second))
	}
	return dataDir, port, nil
}
