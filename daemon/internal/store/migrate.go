package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// schemaFiles are the migrations, applied in file-name order:
// schema/NN-name.sql, NN counting up from 01 without gaps.
//
//go:embed schema/*.sql
var schemaFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded schema files in order.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(schemaFiles, "schema")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for i, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "-")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || len(num) != 2 || v != i+1 {
			return nil, fmt.Errorf("schema file %s: want the name %02d-name.sql", e.Name(), i+1)
		}
		b, err := schemaFiles.ReadFile(path.Join("schema", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	return ms, nil
}

// Keys of snugd_meta.
const (
	metaSchemaVersion = "schema_version"
	metaKeyCheck      = "key_check"
)

// migrate brings snugd.db up to the newest schema this build knows, one
// migration per transaction, and returns the resulting schema version. The
// counter lives in snugd_meta, never in PRAGMA user_version, which is Part
// II's and stays 6.
func (s *Store) migrate(ctx context.Context) (int, error) {
	ms, err := migrations()
	if err != nil {
		return 0, err
	}
	current, err := s.schemaVersion(ctx)
	if err != nil {
		return 0, err
	}
	if current > len(ms) {
		return 0, fmt.Errorf("%w: %s has schema %d, this snugd knows %d: run the newer snugd, or restore a backup this version wrote", ErrNewerSchema, s.DBPath(), current, len(ms))
	}
	for _, m := range ms[current:] {
		if err := s.apply(ctx, m); err != nil {
			return 0, fmt.Errorf("migrate %s to schema %d (%s): %w", s.DBPath(), m.version, m.name, err)
		}
		s.log.Info("applied schema migration", "version", m.version, "file", m.name)
	}
	return len(ms), nil
}

func (s *Store) apply(ctx context.Context, m migration) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO snugd_meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, metaSchemaVersion, m.version); err != nil {
		return err
	}
	return tx.Commit()
}

// schemaVersion reads the migration counter, refusing a file that is not a
// snugd database (tables but no snugd_meta) or whose user_version is not
// Part II's.
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	var objects, hasMeta, userVersion int
	err := s.w.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE type = 'table' AND name = 'snugd_meta') FROM sqlite_schema`).Scan(&objects, &hasMeta)
	if err == nil {
		err = s.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&userVersion)
	}
	if err != nil {
		return 0, fmt.Errorf("read schema of %s: %w", s.DBPath(), err)
	}
	if hasMeta == 0 {
		if objects > 0 || userVersion != 0 {
			return 0, fmt.Errorf("%s is not a snugd database (it has no snugd_meta table): move it away, and bring a Snug user DB in through import", s.DBPath())
		}
		return 0, nil
	}
	var version int
	err = s.w.QueryRowContext(ctx, "SELECT value FROM snugd_meta WHERE key = ?", metaSchemaVersion).Scan(&version)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && version < 1) {
		return 0, fmt.Errorf("%s has no schema version in snugd_meta: restore a backup", s.DBPath())
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", s.DBPath(), err)
	}
	// user_version arrives with migration 2; from then on it is exactly 6.
	if version >= 2 && userVersion != UserVersion {
		return 0, fmt.Errorf("%s has user_version %d, want %d: it was changed outside snugd; restore a backup", s.DBPath(), userVersion, UserVersion)
	}
	return version, nil
}
