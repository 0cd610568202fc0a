package store

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"unicode/utf8"
)

// Secret is a credential value. Printing, logging or JSON-encoding it shows
// "REDACTED"; only an explicit conversion ([]byte(s), string(s)) reaches the
// bytes.
type Secret []byte

const redacted = "REDACTED"

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) Format(f fmt.State, _ rune)   { io.WriteString(f, redacted) }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// Bounds on snug_secrets rows.
const (
	MaxSecretKeyBytes   = 1024    // auth:<appId ≤128 chars, ≤512 bytes>:<slot ≤40>:<fieldKey ≤40> fits
	MaxSecretValueBytes = 1 << 20 // a PEM key or an OAuth token set is a few KiB
)

// Key names of the secrets table.
const (
	// StateHMACKey holds the app-agnostic OAuth state-signing key.
	StateHMACKey = "auth:_state_hmac"
	// ConnectionStateField is the field name of a slot's dynamic state.
	ConnectionStateField = "_connection"
)

// FieldKey names one credential value: auth:<appId>:<slot>:<fieldKey>.
func FieldKey(appID, slot, field string) string {
	return "auth:" + appID + ":" + slot + ":" + field
}

// ConnectionStateKey names a slot's dynamic connection state:
// auth:<appId>:<slot>:_connection.
func ConnectionStateKey(appID, slot string) string {
	return FieldKey(appID, slot, ConnectionStateField)
}

func checkSecretKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty secret key", ErrInvalid)
	case len(key) > MaxSecretKeyBytes:
		return fmt.Errorf("%w: secret key longer than %d bytes", ErrInvalid, MaxSecretKeyBytes)
	case !utf8.ValidString(key) || strings.ContainsRune(key, 0):
		return fmt.Errorf("%w: secret key is not valid UTF-8 text", ErrInvalid)
	}
	return nil
}

// PutSecret seals value under key (a fresh nonce every time) and stores it,
// replacing any earlier value.
func (tx *Tx) PutSecret(key string, value Secret) error {
	if err := checkSecretKey(key); err != nil {
		return err
	}
	if len(value) > MaxSecretValueBytes {
		return fmt.Errorf("%w: secret %q is longer than %d bytes", ErrInvalid, key, MaxSecretValueBytes)
	}
	_, err := tx.exec(`INSERT INTO snug_secrets (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, tx.s.sealer.seal(key, value), FormatTime(tx.now))
	if err != nil {
		return fmt.Errorf("put secret %q: %w", key, err)
	}
	tx.forgetUnreadable(key)
	return nil
}

// Secret opens the value stored under key. It returns ErrNotFound when there
// is none, and an error wrapping ErrUnreadableSecret, naming the key, when
// the value does not open (never garbage).
func (tx *Tx) Secret(key string) (Secret, error) {
	var blob []byte
	err := tx.queryRow("SELECT value FROM snug_secrets WHERE key = ?", key).Scan(&blob)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("secret %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get secret %q: %w", key, err)
	}
	v, err := tx.s.sealer.open(key, blob)
	tx.s.unreadable.note(key, err, tx.since)
	return v, err
}

// SecretKeys lists, in byte order, the keys that start with prefix (all keys
// for ""). The prefix is compared byte for byte: no character in it is a
// wildcard, and case matters.
func (tx *Tx) SecretKeys(prefix string) ([]string, error) {
	rows, err := tx.prefixRows("key", prefix)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanString)
}

// DeleteSecret removes key. It returns ErrNotFound when there was none.
func (tx *Tx) DeleteSecret(key string) error {
	res, err := tx.exec("DELETE FROM snug_secrets WHERE key = ?", key)
	if err != nil {
		return fmt.Errorf("delete secret %q: %w", key, err)
	}
	tx.forgetUnreadable(key)
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("secret %q: %w", key, ErrNotFound)
	}
	return nil
}

// DeleteSecretsWithPrefix removes every key that starts with prefix, byte
// for byte as SecretKeys compares, and returns how many it removed. An empty
// prefix is refused: wiping everything is never a prefix operation.
func (tx *Tx) DeleteSecretsWithPrefix(prefix string) (int64, error) {
	if prefix == "" {
		return 0, fmt.Errorf("%w: empty prefix", ErrInvalid)
	}
	if !tx.writable {
		return 0, ErrReadOnly
	}
	keys, err := tx.SecretKeys(prefix)
	if err != nil {
		return 0, err
	}
	return tx.deleteKeys(keys)
}

// SlotSecrets opens the credential slice of (appID, slot): every
// auth:<appId>:<slot>:<name> value, the _connection state included, keyed by
// <name>. Keys of another app whose id merely extends appID with a colon
// (auth:<appId>:<slot>:x:y belongs to app "<appId>:<slot>") are not part of
// the slice: slots and field keys hold no colon, app ids may.
func (tx *Tx) SlotSecrets(appID, slot string) (map[string]Secret, error) {
	prefix := FieldKey(appID, slot, "")
	rows, err := tx.prefixRows("key, value", prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Secret{}
	for rows.Next() {
		var key string
		var blob []byte
		if err := rows.Scan(&key, &blob); err != nil {
			return nil, err
		}
		name := key[len(prefix):]
		if strings.Contains(name, ":") {
			continue
		}
		v, err := tx.s.sealer.open(key, blob)
		tx.s.unreadable.note(key, err, tx.since)
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	return out, rows.Err()
}

// DeleteSlotSecrets wipes the credential slice of (appID, slot) (spec §13,
// revocation), exactly the keys SlotSecrets reads, and returns how many it
// removed.
func (tx *Tx) DeleteSlotSecrets(appID, slot string) (int64, error) {
	if !tx.writable {
		return 0, ErrReadOnly
	}
	prefix := FieldKey(appID, slot, "")
	all, err := tx.SecretKeys(prefix)
	if err != nil {
		return 0, err
	}
	var keys []string
	for _, k := range all {
		if !strings.Contains(k[len(prefix):], ":") {
			keys = append(keys, k)
		}
	}
	return tx.deleteKeys(keys)
}

func (tx *Tx) deleteKeys(keys []string) (int64, error) {
	var n int64
	for _, k := range keys {
		res, err := tx.exec("DELETE FROM snug_secrets WHERE key = ?", k)
		if err != nil {
			return n, fmt.Errorf("delete secret %q: %w", k, err)
		}
		tx.forgetUnreadable(k)
		d, _ := res.RowsAffected()
		n += d
	}
	return n, nil
}

// prefixRows selects cols of the snug_secrets rows whose key starts with
// prefix, in key order. It compares ranges, never LIKE or GLOB, whose
// wildcards ('_', '%', '*', '?', '[') and ASCII case folding would reach keys
// outside the prefix: key >= prefix AND key < the next string after every
// string with that prefix. TEXT compares as bytes (BINARY collation) and a
// key is valid UTF-8, so the primary key index serves the range.
func (tx *Tx) prefixRows(cols, prefix string) (*sql.Rows, error) {
	if prefix == "" {
		return tx.query("SELECT " + cols + " FROM snug_secrets ORDER BY key")
	}
	if !utf8.ValidString(prefix) {
		return nil, fmt.Errorf("%w: secret key prefix is not valid UTF-8", ErrInvalid)
	}
	upper, bounded := prefixEnd(prefix)
	if !bounded {
		return tx.query("SELECT "+cols+" FROM snug_secrets WHERE key >= ? ORDER BY key", prefix)
	}
	return tx.query("SELECT "+cols+" FROM snug_secrets WHERE key >= ? AND key < ? ORDER BY key", prefix, upper)
}

// prefixEnd returns the smallest byte string greater than every string that
// starts with prefix: prefix with its last byte below 0xff incremented and
// what follows dropped. bounded is false when no such string exists (prefix
// is all 0xff bytes, which UTF-8 never is).
func prefixEnd(prefix string) (upper string, bounded bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// forgetUnreadable takes key out of the unreadable set for a write of it:
// at once, for reads later in this transaction, and once more when the
// transaction commits, stamping the key so that a read which began before
// the commit (and may have met the replaced value) cannot mark it again.
func (tx *Tx) forgetUnreadable(key string) {
	tx.s.unreadable.forget(key)
	tx.OnCommit(func() { tx.s.unreadable.written(key) })
}
