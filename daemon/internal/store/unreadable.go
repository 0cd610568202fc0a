package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// unreadableKeys is the set of snug_secrets keys whose value was seen not
// to open (ErrUnreadableSecret): by CheckSeals, or by any read of it since.
// It is kept in memory, so a status read learns of them without opening a
// single value. A read that opens the value, a write of a new one and a
// delete each take the key out; a write in a transaction that then rolls
// back has taken it out too early, until the next read of the key puts it
// back. Safe for concurrent use.
type unreadableKeys struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// note records what opening key's value found: err matching
// ErrUnreadableSecret marks it, nil clears it, any other error (the row
// could not be read at all) leaves it as it was.
func (u *unreadableKeys) note(key string, err error) {
	switch {
	case err == nil:
		u.forget(key)
	case errors.Is(err, ErrUnreadableSecret):
		u.mu.Lock()
		if u.keys == nil {
			u.keys = map[string]struct{}{}
		}
		u.keys[key] = struct{}{}
		u.mu.Unlock()
	}
}

func (u *unreadableKeys) forget(key string) {
	u.mu.Lock()
	delete(u.keys, key)
	u.mu.Unlock()
}

// UnreadableSecrets lists, in byte order, the keys starting with prefix
// (compared byte for byte) whose value was seen not to open under the
// master key: at the last CheckSeals, or by a read since. It opens
// nothing and reads no SQL. Safe for concurrent use.
func (s *Store) UnreadableSecrets(prefix string) []string {
	u := &s.unreadable
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for k := range u.keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// CheckSeals opens every snug_secrets value once, on a read snapshot,
// and records each that does not open (UnreadableSecrets), so a sealed
// value altered on disk is known before a request meets it. It returns
// the keys that do not open, in byte order; values are dropped as soon
// as they are opened. The daemon runs it with the integrity check, at
// start and on a schedule. Safe for concurrent use.
func (s *Store) CheckSeals(ctx context.Context) ([]string, error) {
	var bad []string
	err := s.View(ctx, func(tx *Tx) error {
		bad = bad[:0] // a retried read starts over
		rows, err := tx.prefixRows("key, value", "")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var key string
			var blob []byte
			if err := rows.Scan(&key, &blob); err != nil {
				return err
			}
			plain, err := s.sealer.open(key, blob)
			clear(plain)
			s.unreadable.note(key, err)
			if err != nil {
				bad = append(bad, key)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return bad, nil
}
