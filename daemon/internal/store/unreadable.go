package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// unreadableKeys is the set of snug_secrets keys whose value was seen not
// to open (ErrUnreadableSecret): by CheckSeals, or by any read of it since.
// It is kept in memory, so a status read learns of them without opening a
// single value. A read that opens the value, a write of a new one and a
// delete each take the key out. A read runs on a snapshot, so it can meet
// a value that a write has replaced since it began: each transaction
// starts at the set's sequence number (begin), every committed write of a
// key moves it on and stamps the key (written), and a read that found a
// value not opening marks its key only when no write of the key committed
// since its transaction began. So a slow check (CheckSeals walks every
// value) never marks a credential a person stored again meanwhile. Safe
// for concurrent use.
type unreadableKeys struct {
	mu   sync.Mutex
	keys map[string]struct{}
	// seq counts committed writes of secrets; changed holds, per key,
	// the seq of its last committed write at or after floor (keys written
	// earlier are dropped when the map grows past maxChanged, and every
	// transaction older than floor is then treated as stale for all).
	// seq is read without mu (begin runs at every transaction's start)
	// and moved only under it.
	seq     atomic.Uint64
	floor   uint64
	changed map[string]uint64
}

// maxChanged bounds unreadableKeys.changed: past it the map is cleared
// and floor moves up to seq.
const maxChanged = 4096

// begin returns the sequence number a transaction starts at: taken before
// its snapshot, so a write stamped later may or may not be in it.
func (u *unreadableKeys) begin() uint64 {
	return u.seq.Load()
}

// note records what opening key's value found in a transaction that began
// at since: err matching ErrUnreadableSecret marks it, unless a write of
// key committed after since (the value read may be the replaced one); nil
// clears it; any other error (the row could not be read at all) leaves it
// as it was.
func (u *unreadableKeys) note(key string, err error, since uint64) {
	switch {
	case err == nil:
		u.forget(key)
	case errors.Is(err, ErrUnreadableSecret):
		u.mu.Lock()
		defer u.mu.Unlock()
		if since < u.floor || u.changed[key] > since {
			return
		}
		if u.keys == nil {
			u.keys = map[string]struct{}{}
		}
		u.keys[key] = struct{}{}
	}
}

func (u *unreadableKeys) forget(key string) {
	u.mu.Lock()
	delete(u.keys, key)
	u.mu.Unlock()
}

// written records a committed write (or delete) of key: the mark goes,
// and reads that began before it cannot bring it back.
func (u *unreadableKeys) written(key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.keys, key)
	seq := u.seq.Add(1)
	if len(u.changed) >= maxChanged {
		u.changed, u.floor = nil, seq
	}
	if u.changed == nil {
		u.changed = map[string]uint64{}
	}
	u.changed[key] = seq
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
			s.unreadable.note(key, err, tx.since)
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
