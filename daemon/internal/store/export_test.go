package store

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"
)

// seedForExport fills a store with connections, secrets and snugd_* rows.
func seedForExport(t *testing.T, s *Store) (values []string, sealed [][]byte) {
	t.Helper()
	values = []string{"sk-LIVE-9a8b7c6d5e4f3a2b", "ghp_0123456789abcdefghijABCDEFGHIJ", "refresh-token-77aa88bb"}
	update(t, s, func(tx *Tx) error {
		for i, v := range values {
			slot := []string{"openai", "github", "spotify"}[i]
			row := declared("app-1", slot)
			row.Status, row.ApprovedAt, row.AllowedHosts = StatusApproved, ptr(time.Now()), `["api.`+slot+`.com"]`
			if _, err := tx.UpsertConnection(row); err != nil {
				return err
			}
			if err := tx.PutSecret(FieldKey("app-1", slot, "token"), Secret(v)); err != nil {
				return err
			}
		}
		if err := tx.PutSecret(StateHMACKey, Secret("state-hmac-secret-1234")); err != nil {
			return err
		}
		if _, err := tx.InsertHost(Host{ID: "h1", Surface: SurfaceWeb, Origin: "https://host.example", TokenHash: []byte("token-hash-bytes-xyz")}); err != nil {
			return err
		}
		_, err := tx.InsertJournal(JournalEntry{AppID: "app-1", Outcome: "sent", Note: "journal-note-marker"})
		return err
	})
	values = append(values, "state-hmac-secret-1234")
	for _, k := range []string{FieldKey("app-1", "openai", "token"), FieldKey("app-1", "github", "token"), StateHMACKey} {
		sealed = append(sealed, rawSecret(t, s, k))
	}
	return values, sealed
}

// conformance: P3-C13-06, P3-C13-07
func TestExportCarriesNoSecret(t *testing.T) {
	s := openStore(t)
	values, sealed := seedForExport(t, s)
	dest := filepath.Join(t.TempDir(), "export.db")
	if err := s.Export(t.Context(), dest); err != nil {
		t.Fatalf("Export = %v", err)
	}
	b, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("export contains the credential %q", v)
		}
	}
	for i, blob := range sealed {
		if bytes.Contains(b, blob) || bytes.Contains(b, blob[13:29]) {
			t.Errorf("export contains sealed value %d", i)
		}
	}
	for _, marker := range []string{"auth:", "snugd_", "token-hash-bytes-xyz", "journal-note-marker", keyCheckPlain} {
		if bytes.Contains(b, []byte(marker)) {
			t.Errorf("export contains %q", marker)
		}
	}
	if !bytes.Contains(b, []byte("api.github.com")) {
		t.Error("export lost the connection rows")
	}
	if got := mode(t, dest); modesMatter && got != 0o600 {
		t.Errorf("export mode = %04o, want 0600", got)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dest), ".export.db.*")); len(left) != 0 {
		t.Errorf("temporary files left: %q", left)
	}

	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: fileURI(dest, "mode=ro")})
	defer db.Close()
	var userVersion, secrets int
	var journal string
	var tables []string
	db.QueryRow("PRAGMA user_version").Scan(&userVersion)
	db.QueryRow("SELECT count(*) FROM snug_secrets").Scan(&secrets)
	db.QueryRow("PRAGMA journal_mode").Scan(&journal)
	rows, _ := db.Query("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	if userVersion != 6 || secrets != 0 || journal != "delete" || strings.Join(tables, ",") != "snug_connections,snug_secrets" {
		t.Errorf("export: user_version %d, %d secrets, journal %s, tables %q; want 6, 0, delete, snug_connections and snug_secrets",
			userVersion, secrets, journal, tables)
	}
	var ddl string
	db.QueryRow("SELECT sql FROM sqlite_schema WHERE name = 'snug_connections'").Scan(&ddl)
	if ddl != strings.Replace(specDDL, "IF NOT EXISTS ", "", 1) {
		t.Errorf("export's snug_connections DDL = %q", ddl)
	}
}

func TestExportReadsBackWithReadUserDB(t *testing.T) {
	s := openStore(t)
	seedForExport(t, s)
	dest := filepath.Join(t.TempDir(), "export.db")
	if err := s.Export(t.Context(), dest); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadUserDB(t.Context(), dest)
	if err != nil {
		t.Fatalf("ReadUserDB(export) = %v", err)
	}
	local, _ := s.AllConnections(t.Context())
	if len(rows) != len(local) {
		t.Fatalf("ReadUserDB read %d rows, want %d", len(rows), len(local))
	}
	byKey := map[string]ImportRow{}
	for _, r := range rows {
		byKey[r.AppID+"/"+r.Slot] = r
	}
	for _, c := range local {
		r := byKey[c.AppID+"/"+c.Slot]
		if r.Unusable != "" || r.RequirementJSON != c.RequirementJSON || r.AllowedHosts != c.AllowedHosts ||
			r.Status != string(c.Status) || r.ApprovedAt == nil || *r.ApprovedAt != FormatTime(*c.ApprovedAt) ||
			r.CreatedAt != FormatTime(c.CreatedAt) {
			t.Errorf("row %s/%s read back as %+v", c.AppID, c.Slot, r)
		}
	}
}

func TestExportReplacesDestinationAtomically(t *testing.T) {
	s := openStore(t)
	dest := filepath.Join(t.TempDir(), "export.db")
	os.WriteFile(dest, []byte("old"), 0o644)
	if err := s.Export(t.Context(), dest); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dest); !bytes.HasPrefix(b, []byte(sqliteMagic)) {
		t.Error("destination was not replaced by the export")
	}
	// A destination in a missing directory fails and leaves nothing.
	if err := s.Export(t.Context(), filepath.Join(t.TempDir(), "missing", "x.db")); err == nil {
		t.Error("Export into a missing directory = nil, want an error")
	}
}
