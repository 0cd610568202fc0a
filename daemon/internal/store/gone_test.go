package store

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mattn/go-sqlite3"
)

// TestOpenRefusesGoneDatabase: a snugd.db deleted, emptied or replaced by
// a new database while secrets.key stays is refused with ErrDatabaseGone
// and the way out, and Open leaves the file as it found it.
func TestOpenRefusesGoneDatabase(t *testing.T) {
	tests := []struct {
		name  string
		lose  func(t *testing.T, db string)
		after func(t *testing.T, db string) // what must still hold of the file
	}{
		{"deleted", func(t *testing.T, db string) {
			for _, p := range []string{db, db + "-wal", db + "-shm"} {
				os.Remove(p)
			}
		}, func(t *testing.T, db string) {
			if _, err := os.Lstat(db); err == nil {
				t.Errorf("Open created %s", db)
			}
		}},
		{"emptied", func(t *testing.T, db string) {
			os.Remove(db + "-wal")
			os.Remove(db + "-shm")
			if err := os.Truncate(db, 0); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, db string) {
			if fi, err := os.Stat(db); err != nil || fi.Size() != 0 {
				t.Errorf("Open wrote into the emptied %s: %v, %v", db, fi, err)
			}
		}},
		{"emptied, WAL kept", func(t *testing.T, db string) {
			if err := os.Truncate(db, 0); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, db string) {}},
		{"replaced by a new database", func(t *testing.T, db string) {
			for _, p := range []string{db, db + "-wal", db + "-shm"} {
				os.Remove(p)
			}
			newEmptyDB(t, db)
		}, func(t *testing.T, db string) {}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			s, err := Open(t.Context(), Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			update(t, s, func(tx *Tx) error {
				_, err := tx.UpsertConnection(declared("app", "s"))
				return err
			})
			s.Close()
			db := filepath.Join(dir, DBFile)
			tc.lose(t, db)
			s, err = Open(t.Context(), Options{Dir: dir})
			if err == nil {
				s.Close()
				t.Fatal("Open started over on a lost database")
			}
			if !errors.Is(err, ErrDatabaseGone) {
				t.Fatalf("Open = %v, want ErrDatabaseGone", err)
			}
			for _, want := range []string{db, "restore", "snugd ctl reset --yes", filepath.Join(dir, KeyFileName)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open's error %q does not say %q", err, want)
				}
			}
			tc.after(t, db)
			if _, err := os.Stat(filepath.Join(dir, KeyFileName)); err != nil {
				t.Errorf("the key file is gone after the refusal: %v", err)
			}
			// A second try refuses again: nothing was papered over.
			if s, err := Open(t.Context(), Options{Dir: dir}); !errors.Is(err, ErrDatabaseGone) {
				if err == nil {
					s.Close()
				}
				t.Errorf("second Open = %v, want ErrDatabaseGone", err)
			}
		})
	}
}

// TestOpenFirstStart: with neither a database nor a key, Open creates both;
// a key source that holds no key is a first start, too.
func TestOpenFirstStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, err := Open(t.Context(), Options{Dir: dir})
	if err != nil {
		t.Fatalf("first Open = %v", err)
	}
	s.Close()
	for _, name := range []string{DBFile, KeyFileName} {
		os.Remove(filepath.Join(dir, name))
	}
	os.Remove(filepath.Join(dir, DBFile+"-wal"))
	os.Remove(filepath.Join(dir, DBFile+"-shm"))
	s, err = Open(t.Context(), Options{Dir: dir})
	if err != nil {
		t.Fatalf("Open of a directory with neither database nor key = %v", err)
	}
	s.Close()
}

// newEmptyDB writes a valid SQLite database without a table at path.
func newEmptyDB(t *testing.T, path string) {
	t.Helper()
	db := sql.OpenDB(connector{drv: &sqlite3.SQLiteDriver{}, dsn: fileURI(path, "")})
	defer db.Close()
	if _, err := db.Exec("PRAGMA page_size = 4096; VACUUM"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("the new database is %v, %v", fi, err)
	}
}
