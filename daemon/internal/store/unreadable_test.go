package store

import (
	"slices"
	"testing"
)

// TestUnreadableSecrets: CheckSeals finds a value altered in the file
// (and only it), a read that fails to open a value marks it too, and a
// new value or a delete takes the mark away. UnreadableSecrets reads the
// marks only: a value altered after the last check or read is not known.
func TestUnreadableSecrets(t *testing.T) {
	s := openStore(t)
	putSecrets(t, s, map[string]string{"auth:a:s:k": "value", "auth:a:s:j": "other", "auth:b:s:k": "third"})
	alterSecret(t, s, "auth:a:s:k")
	if got := s.UnreadableSecrets(""); len(got) != 0 {
		t.Errorf("UnreadableSecrets before any check or read = %q, want none", got)
	}
	bad, err := s.CheckSeals(t.Context())
	if err != nil || !slices.Equal(bad, []string{"auth:a:s:k"}) {
		t.Fatalf("CheckSeals = %q, %v; want the altered key", bad, err)
	}
	if got := s.UnreadableSecrets("auth:a:"); !slices.Equal(got, []string{"auth:a:s:k"}) {
		t.Errorf("UnreadableSecrets(auth:a:) = %q", got)
	}
	if got := s.UnreadableSecrets("auth:b:"); len(got) != 0 {
		t.Errorf("UnreadableSecrets(auth:b:) = %q, want none", got)
	}
	putSecrets(t, s, map[string]string{"auth:a:s:k": "value again"})
	if got := s.UnreadableSecrets(""); len(got) != 0 {
		t.Errorf("after a new value: %q, want none", got)
	}

	// A read that fails marks; a delete unmarks.
	alterSecret(t, s, "auth:b:s:k")
	view(t, s, func(tx *Tx) error {
		if _, err := tx.SlotSecrets("b", "s"); err == nil {
			t.Error("SlotSecrets of an altered value: no error")
		}
		return nil
	})
	if got := s.UnreadableSecrets(""); !slices.Equal(got, []string{"auth:b:s:k"}) {
		t.Errorf("after a failed read: %q", got)
	}
	update(t, s, func(tx *Tx) error { return tx.DeleteSecret("auth:b:s:k") })
	if got := s.UnreadableSecrets(""); len(got) != 0 {
		t.Errorf("after the delete: %q, want none", got)
	}
}

// TestUnreadableNotMarkedFromAReplacedValue: a read that began before a
// new value of its key committed meets the old, altered value on its
// snapshot; it must not mark the key, or a slow check that started before
// a person stored the credential again would call the new one unreadable.
// A read that began after the commit and meets an altered value still
// marks it; so does one that began before an unrelated write.
func TestUnreadableNotMarkedFromAReplacedValue(t *testing.T) {
	s := openStore(t)
	putSecrets(t, s, map[string]string{"auth:a:s:k": "value", "auth:a:s:j": "other"})
	alterSecret(t, s, "auth:a:s:k")
	alterSecret(t, s, "auth:a:s:j")
	view(t, s, func(tx *Tx) error {
		if _, err := tx.SecretKeys(""); err != nil { // the snapshot begins
			return err
		}
		putSecrets(t, s, map[string]string{"auth:a:s:k": "stored again"}) // commits meanwhile
		if _, err := tx.Secret("auth:a:s:k"); err == nil {
			t.Error("the snapshot's altered value opened")
		}
		if _, err := tx.Secret("auth:a:s:j"); err == nil {
			t.Error("the altered value of the other key opened")
		}
		return nil
	})
	if got := s.UnreadableSecrets(""); !slices.Equal(got, []string{"auth:a:s:j"}) {
		t.Errorf("UnreadableSecrets after a read of a replaced value = %q, want only the key not written meanwhile", got)
	}
	alterSecret(t, s, "auth:a:s:k")
	if bad, err := s.CheckSeals(t.Context()); err != nil || !slices.Equal(bad, []string{"auth:a:s:j", "auth:a:s:k"}) {
		t.Fatalf("CheckSeals = %q, %v", bad, err)
	}
	if got := s.UnreadableSecrets(""); !slices.Equal(got, []string{"auth:a:s:j", "auth:a:s:k"}) {
		t.Errorf("UnreadableSecrets after a check that began after the write = %q", got)
	}
}

// alterSecret flips one bit of the sealed value stored under key, in
// the file, as a disk error would: the value no longer opens.
func alterSecret(t *testing.T, s *Store, key string) {
	t.Helper()
	blob := flip(rawSecret(t, s, key), 14)
	update(t, s, func(tx *Tx) error {
		_, err := tx.exec("UPDATE snug_secrets SET value = ? WHERE key = ?", blob, key)
		return err
	})
}
