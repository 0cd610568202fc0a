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
	alter := func(key string) {
		t.Helper()
		blob := flip(rawSecret(t, s, key), 14)
		update(t, s, func(tx *Tx) error {
			_, err := tx.exec("UPDATE snug_secrets SET value = ? WHERE key = ?", blob, key)
			return err
		})
	}
	alter("auth:a:s:k")
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
	alter("auth:b:s:k")
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
