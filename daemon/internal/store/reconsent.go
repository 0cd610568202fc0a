package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// metaReconsent is the snugd_meta key of the pin re-consent's record
// (schema/11-snugd-meta-reconsent.sql).
const metaReconsent = "reconsent_registry"

// ReconsentRecord returns the digest the last completed pin re-consent
// pass recorded, or "" when none did (a new database, a database migrated
// from before schema 11, or a writer forgot it since).
func (tx *Tx) ReconsentRecord() (string, error) {
	var v string
	err := tx.queryRow("SELECT CAST(value AS TEXT) FROM snugd_meta WHERE key = ?", metaReconsent).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read the re-consent record: %w", err)
	}
	return v, nil
}

// PutReconsentRecord records digest as the registry a pin re-consent pass
// has just completed under. Call it only after the pass's last write.
func (tx *Tx) PutReconsentRecord(digest string) error {
	if digest == "" {
		return fmt.Errorf("%w: an empty re-consent digest", ErrInvalid)
	}
	_, err := tx.exec(`INSERT INTO snugd_meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, metaReconsent, digest)
	if err != nil {
		return fmt.Errorf("write the re-consent record: %w", err)
	}
	return nil
}

// ForgetReconsentRecord drops the record, so the next start runs the pin
// re-consent pass over every row: a writer that leaves a row the pass
// would act on (one it did not resolve against the registry) calls it in
// its own transaction.
func (tx *Tx) ForgetReconsentRecord() error {
	if _, err := tx.exec("DELETE FROM snugd_meta WHERE key = ?", metaReconsent); err != nil {
		return fmt.Errorf("forget the re-consent record: %w", err)
	}
	return nil
}
