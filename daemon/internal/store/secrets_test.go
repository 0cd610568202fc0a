package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func putSecrets(t *testing.T, s *Store, kv map[string]string) {
	t.Helper()
	update(t, s, func(tx *Tx) error {
		for k, v := range kv {
			if err := tx.PutSecret(k, Secret(v)); err != nil {
				return err
			}
		}
		return nil
	})
}

func rawSecret(t *testing.T, s *Store, key string) []byte {
	t.Helper()
	var blob []byte
	view(t, s, func(tx *Tx) error {
		return tx.queryRow("SELECT value FROM snug_secrets WHERE key = ?", key).Scan(&blob)
	})
	return blob
}

func TestSecretRoundTrip(t *testing.T) {
	s := openStore(t)
	key := FieldKey("app", "slot", "api_key")
	putSecrets(t, s, map[string]string{key: "sk-first"})
	putSecrets(t, s, map[string]string{key: "sk-second"})
	view(t, s, func(tx *Tx) error {
		got, err := tx.Secret(key)
		if err != nil || string(got) != "sk-second" {
			t.Errorf("Secret(%q) = %q, %v, want the replaced value", key, string(got), err)
		}
		var updated string
		tx.queryRow("SELECT updated_at FROM snug_secrets WHERE key = ?", key).Scan(&updated)
		if updated != "2026-05-01T10:00:00.123Z" {
			t.Errorf("updated_at = %q, want the transaction's time", updated)
		}
		return nil
	})
	update(t, s, func(tx *Tx) error {
		if err := tx.DeleteSecret(key); err != nil {
			return err
		}
		if err := tx.DeleteSecret(key); !errors.Is(err, ErrNotFound) {
			t.Errorf("second DeleteSecret = %v, want ErrNotFound", err)
		}
		if _, err := tx.Secret(key); !errors.Is(err, ErrNotFound) {
			t.Errorf("Secret after delete = %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestPutSecretRefusesBadInput(t *testing.T) {
	s := openStore(t)
	tests := []struct {
		name  string
		key   string
		value Secret
	}{
		{"empty key", "", Secret("v")},
		{"key not UTF-8", "auth:\xff", Secret("v")},
		{"key with NUL", "auth:a\x00", Secret("v")},
		{"key too long", strings.Repeat("k", MaxSecretKeyBytes+1), Secret("v")},
		{"value too long", "auth:a:s:k", make(Secret, MaxSecretValueBytes+1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Update(t.Context(), func(tx *Tx) error { return tx.PutSecret(tc.key, tc.value) })
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("PutSecret(%q) = %v, want ErrInvalid", tc.key, err)
			}
		})
	}
}

func TestSealedFormat(t *testing.T) {
	s := openStore(t)
	putSecrets(t, s, map[string]string{"auth:a:s:k": "0123456789"})
	blob := rawSecret(t, s, "auth:a:s:k")
	if len(blob) != 1+12+10+16 || blob[0] != 0x01 {
		t.Errorf("sealed value is %d bytes starting %#x, want 39 starting 0x01", len(blob), blob[0])
	}
	if bytes.Contains(blob, []byte("0123456789")) {
		t.Error("sealed value contains the plaintext")
	}
}

func TestFreshNoncePerWrite(t *testing.T) {
	s := openStore(t)
	seen := map[string]bool{}
	for i := range 20 {
		putSecrets(t, s, map[string]string{"auth:a:s:k": "same value"})
		blob := rawSecret(t, s, "auth:a:s:k")
		nonce := string(blob[1:13])
		if seen[nonce] || seen[string(blob)] {
			t.Fatalf("write %d reused a nonce or a blob", i)
		}
		seen[nonce], seen[string(blob)] = true, true
	}
}

func TestSealedValueIsBoundToItsKey(t *testing.T) {
	s := openStore(t)
	a, b := FieldKey("app", "slot", "api_key"), FieldKey("evil", "slot", "api_key")
	putSecrets(t, s, map[string]string{a: "victim-credential", b: "attacker-credential"})
	// Swap the two sealed values behind the store's back.
	blobA, blobB := rawSecret(t, s, a), rawSecret(t, s, b)
	update(t, s, func(tx *Tx) error {
		if _, err := tx.exec("UPDATE snug_secrets SET value = ? WHERE key = ?", blobB, a); err != nil {
			return err
		}
		_, err := tx.exec("UPDATE snug_secrets SET value = ? WHERE key = ?", blobA, b)
		return err
	})
	view(t, s, func(tx *Tx) error {
		for _, k := range []string{a, b} {
			got, err := tx.Secret(k)
			if !errors.Is(err, ErrUnreadableSecret) || got != nil {
				t.Errorf("Secret(%q) after swap = %q, %v, want ErrUnreadableSecret", k, string(got), err)
				continue
			}
			if !strings.Contains(err.Error(), k) || strings.Contains(err.Error(), "credential") {
				t.Errorf("error %q should name the key %q and no value", err, k)
			}
		}
		if _, err := tx.SlotSecrets("app", "slot"); !errors.Is(err, ErrUnreadableSecret) {
			t.Errorf("SlotSecrets after swap = %v, want ErrUnreadableSecret", err)
		}
		return nil
	})
}

func TestTamperedValueFailsToOpen(t *testing.T) {
	s := openStore(t)
	putSecrets(t, s, map[string]string{"auth:a:s:k": "value"})
	blob := rawSecret(t, s, "auth:a:s:k")
	for _, tc := range []struct {
		name string
		blob []byte
	}{
		{"bit flipped in ciphertext", flip(blob, 14)},
		{"bit flipped in nonce", flip(blob, 3)},
		{"bit flipped in tag", flip(blob, len(blob)-1)},
		{"unknown version", flip(blob, 0)},
		{"truncated", blob[:20]},
		{"empty", []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			update(t, s, func(tx *Tx) error {
				_, err := tx.exec("UPDATE snug_secrets SET value = ? WHERE key = 'auth:a:s:k'", tc.blob)
				return err
			})
			view(t, s, func(tx *Tx) error {
				if got, err := tx.Secret("auth:a:s:k"); !errors.Is(err, ErrUnreadableSecret) {
					t.Errorf("Secret(tampered) = %q, %v, want ErrUnreadableSecret", string(got), err)
				}
				return nil
			})
		})
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x01
	return c
}

func TestWrongMasterKeyFailsOnRead(t *testing.T) {
	s := openStore(t)
	putSecrets(t, s, map[string]string{"auth:a:s:token": "the-token-value"})
	other, err := newSealer(&[KeySize]byte{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	s.sealer = other // as if Open had been handed another key and no key check stopped it
	view(t, s, func(tx *Tx) error {
		got, err := tx.Secret("auth:a:s:token")
		if !errors.Is(err, ErrUnreadableSecret) || got != nil || !strings.Contains(err.Error(), `"auth:a:s:token"`) {
			t.Errorf("Secret under another key = %q, %v, want ErrUnreadableSecret naming the key", string(got), err)
		}
		if err != nil && strings.Contains(err.Error(), "the-token-value") {
			t.Errorf("error %q contains the value", err)
		}
		return nil
	})
}

// conformance: P3-C13-01, P3-C13-02
func TestSlotSecretsOneKeyPerField(t *testing.T) {
	s := openStore(t)
	putSecrets(t, s, map[string]string{
		FieldKey("app", "github", "client_id"):     "id-value",
		FieldKey("app", "github", "client_secret"): "secret-value",
		ConnectionStateKey("app", "github"):        `{"status":"connected"}`,
		FieldKey("app", "github2", "client_id"):    "other-slot",
		FieldKey("app:github", "x", "client_id"):   "app-with-a-colon",
		"auth:_flow:f1":                            `{"slot":"github"}`,
		StateHMACKey:                               "hmac-key",
	})
	view(t, s, func(tx *Tx) error {
		got, err := tx.SlotSecrets("app", "github")
		if err != nil {
			return err
		}
		want := map[string]string{"client_id": "id-value", "client_secret": "secret-value", "_connection": `{"status":"connected"}`}
		if len(got) != len(want) {
			t.Errorf("SlotSecrets(app, github) has %d entries, want %d", len(got), len(want))
		}
		for k, v := range want {
			if string(got[k]) != v {
				t.Errorf("SlotSecrets(app, github)[%q] = %q, want %q", k, string(got[k]), v)
			}
		}
		keys, _ := tx.SecretKeys("auth:app:github:")
		wantKeys := []string{"auth:app:github:_connection", "auth:app:github:client_id", "auth:app:github:client_secret", "auth:app:github:x:client_id"}
		if !slices.Equal(keys, wantKeys) {
			t.Errorf("SecretKeys(auth:app:github:) = %q, want %q", keys, wantKeys)
		}
		return nil
	})
	if k := ConnectionStateKey("app", "github"); k != "auth:app:github:_connection" {
		t.Errorf("ConnectionStateKey = %q", k)
	}
}

func TestPrefixWipeIsExact(t *testing.T) {
	keys := []string{
		"auth:a:b:x", "auth:a:b:_connection", "auth:a:b:", // inside auth:a:b:
		"auth:a:bc:x", "auth:a_:b:x", "auth:A:b:x", "auth:a:B:x", "auth:a:b", "auth:a:b;x",
		"auth:a%:b:x", "auth:a:b%", "auth:aXb:x", "auth:a:b\x7fx", "auth:a:b:\u00e9", "auth:_flow:1", StateHMACKey,
		"auth:%:b:x", "auth:_:b:x", "Auth:a:b:x",
	}
	tests := []struct {
		prefix string
		want   []string // keys removed
	}{
		{"auth:a:b:", []string{"auth:a:b:", "auth:a:b:_connection", "auth:a:b:x", "auth:a:b:\u00e9"}},
		{"auth:a_:", []string{"auth:a_:b:x"}},
		{"auth:a%", []string{"auth:a%:b:x"}},
		{"auth:%", []string{"auth:%:b:x"}},
		{"auth:_", []string{"auth:_:b:x", "auth:_flow:1", StateHMACKey}},
		{"auth:a:b:\u00e9", []string{"auth:a:b:\u00e9"}},
		{"nothing:", nil},
	}
	for _, tc := range tests {
		t.Run(tc.prefix, func(t *testing.T) {
			s := openStore(t)
			seed := map[string]string{}
			for _, k := range keys {
				seed[k] = "v-" + k
			}
			putSecrets(t, s, seed)
			update(t, s, func(tx *Tx) error {
				n, err := tx.DeleteSecretsWithPrefix(tc.prefix)
				if err != nil || n != int64(len(tc.want)) {
					t.Errorf("DeleteSecretsWithPrefix(%q) = %d, %v, want %d", tc.prefix, n, err, len(tc.want))
				}
				return nil
			})
			view(t, s, func(tx *Tx) error {
				left, _ := tx.SecretKeys("")
				for _, k := range keys {
					if removed := !slices.Contains(left, k); removed != slices.Contains(tc.want, k) {
						t.Errorf("after wiping %q, key %q removed = %v", tc.prefix, k, removed)
					}
				}
				return nil
			})
		})
	}
}

func TestDeleteSecretsWithEmptyPrefixRefused(t *testing.T) {
	s := openStore(t)
	putSecrets(t, s, map[string]string{"auth:a:s:k": "v"})
	err := s.Update(t.Context(), func(tx *Tx) error { _, err := tx.DeleteSecretsWithPrefix(""); return err })
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("DeleteSecretsWithPrefix(\"\") = %v, want ErrInvalid", err)
	}
}

func TestDeleteSlotSecrets(t *testing.T) {
	// The slice of (a, b) is auth:a:b:<name> with no colon in <name>. App
	// ids may hold colons, so auth:a:b:c:x is app "a:b", slot "c": not ours.
	keys := []string{
		"auth:a:b:x", "auth:a:b:_connection", // the slice
		"auth:a:b:c:x", "auth:a:bc:x", "auth:a_:b:x", "auth:A:b:x", "auth:a:b", "auth:a:b;x", "auth:x:a:b:x",
	}
	s := openStore(t)
	seed := map[string]string{}
	for _, k := range keys {
		seed[k] = "v"
	}
	putSecrets(t, s, seed)
	update(t, s, func(tx *Tx) error {
		n, err := tx.DeleteSlotSecrets("a", "b")
		if err != nil || n != 2 {
			t.Errorf("DeleteSlotSecrets(a, b) = %d, %v, want 2", n, err)
		}
		return nil
	})
	view(t, s, func(tx *Tx) error {
		left, _ := tx.SecretKeys("")
		want := slices.Sorted(slices.Values(keys[2:]))
		if !slices.Equal(left, want) {
			t.Errorf("keys left = %q, want %q", left, want)
		}
		return nil
	})
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		in, want string
		bounded  bool
	}{
		{"auth:a:b:", "auth:a:b;", true},
		{"a\xff", "b", true},
		{"\xff\xff", "", false},
		{"\u00e9", "\xc3\xaa", true},
	}
	for _, tc := range tests {
		got, ok := prefixEnd(tc.in)
		if got != tc.want || ok != tc.bounded {
			t.Errorf("prefixEnd(%q) = %q, %v, want %q, %v", tc.in, got, ok, tc.want, tc.bounded)
		}
	}
}

func TestSecretIsRedacted(t *testing.T) {
	v := Secret("sk-live-value")
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "v", v)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "v", v)
	js, _ := json.Marshal(map[string]any{"v": v})
	outs := []string{
		fmt.Sprint(v), fmt.Sprintf("%s %v %+v %#v %q %x %X %d", v, v, v, v, v, v, v, v),
		fmt.Sprintf("%v", []Secret{v}), fmt.Sprintf("%v", map[string]Secret{"k": v}), v.String(),
		logged.String(), string(js), fmt.Sprintf("%v", struct{ S Secret }{v}),
	}
	for _, out := range outs {
		if strings.Contains(out, "sk-live") || strings.Contains(out, "736b2d6c697665") || strings.Contains(out, "115 107") {
			t.Errorf("output %q shows the secret", out)
		}
	}
}

// FuzzSeal: any value under any key name opens back to itself under the
// same name and under no other, and opening never panics on any bytes.
func FuzzSeal(f *testing.F) {
	f.Add("auth:a:s:k", []byte("value"), "auth:a:s:l", []byte{0x01, 0x02})
	f.Add("", []byte{}, "x", []byte{0x01})
	f.Fuzz(func(t *testing.T, name string, value []byte, other string, junk []byte) {
		s, err := newSealer(&[KeySize]byte{7})
		if err != nil {
			t.Fatal(err)
		}
		blob := s.seal(name, value)
		got, err := s.open(name, blob)
		if err != nil || !bytes.Equal(got, value) {
			t.Fatalf("open(seal(%q)) = %q, %v", name, got, err)
		}
		if other != name {
			if _, err := s.open(other, blob); err == nil {
				t.Fatalf("a value sealed under %q opened under %q", name, other)
			}
		}
		if got, err := s.open(name, junk); err == nil && !bytes.Equal(junk, blob) {
			// Forging a blob needs the key; random bytes never open.
			t.Fatalf("junk %x opened as %q", junk, got)
		}
	})
}

func TestCopiedDatabaseRevealsNoCredential(t *testing.T) {
	values := map[string]string{
		FieldKey("app", "slot", "api_key"):  "sk-LIVE-4f1c2a9d8e7b6a5c",
		FieldKey("app", "slot", "password"): "correct horse battery staple",
		StateHMACKey:                        "state-hmac-key-ab12cd34",
	}
	s := openStore(t)
	putSecrets(t, s, values)
	check := func(when string) {
		t.Helper()
		for _, name := range []string{DBFile, DBFile + "-wal"} {
			b, err := os.ReadFile(filepath.Join(s.Dir(), name))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range values {
				if bytes.Contains(b, []byte(v)) {
					t.Errorf("%s %s contains the credential %q", when, name, v)
				}
			}
		}
	}
	check("before checkpoint:")
	if _, err := s.w.ExecContext(t.Context(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	check("after checkpoint:")

	// Copy the database alone (no key file) and open it.
	s.Close()
	stolen := filepath.Join(t.TempDir(), "stolen")
	os.Mkdir(stolen, 0o700)
	copyFile(t, filepath.Join(s.Dir(), DBFile), filepath.Join(stolen, DBFile))
	_, err := Open(t.Context(), Options{Dir: stolen})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Open(copy without key) = %v, want a missing-key error", err)
	}
	// And with another key that happens to be there.
	os.WriteFile(filepath.Join(stolen, KeyFileName), bytes.Repeat([]byte{9}, KeySize), 0o600)
	_, err = Open(t.Context(), Options{Dir: stolen})
	if err == nil || !strings.Contains(err.Error(), "not the one") {
		t.Errorf("Open(copy with another key) = %v, want a wrong-key error", err)
	}
	// With the right key it opens and reads.
	copyFile(t, filepath.Join(s.Dir(), KeyFileName), filepath.Join(stolen, KeyFileName))
	s2, err := Open(t.Context(), Options{Dir: stolen})
	if err != nil {
		t.Fatalf("Open(copy with its key) = %v", err)
	}
	defer s2.Close()
	view(t, s2, func(tx *Tx) error {
		for k, v := range values {
			if got, err := tx.Secret(k); err != nil || string(got) != v {
				t.Errorf("Secret(%q) = %v, want the stored value", k, err)
			}
		}
		return nil
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(to, 0o600)
}

func TestKeyFileCreatedOnceAndKept(t *testing.T) {
	s := openStore(t)
	p := filepath.Join(s.Dir(), KeyFileName)
	first, err := os.ReadFile(p)
	if err != nil || len(first) != KeySize {
		t.Fatalf("key file = %d bytes, %v, want %d", len(first), err, KeySize)
	}
	if bytes.Equal(first, make([]byte, KeySize)) {
		t.Error("key is all zeros")
	}
	dir := s.Dir()
	s.Close()
	openStore(t, func(o *Options) { o.Dir = dir }).Close()
	second, _ := os.ReadFile(p)
	if !bytes.Equal(first, second) {
		t.Error("reopening changed the key file")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".secrets.key-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary key files left behind: %q", leftovers)
	}
	if _, err := (KeyFile{Path: p}).Create(t.Context()); err == nil {
		t.Error("KeyFile.Create replaced an existing key file")
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, first) {
		t.Error("KeyFile.Create changed an existing key file")
	}
}

func TestKeyFileRefused(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, p string)
		want  []string
	}{
		{"open to group", func(t *testing.T, p string) { os.Chmod(p, 0o640) }, []string{"chmod 600"}},
		{"open to others", func(t *testing.T, p string) { os.Chmod(p, 0o604) }, []string{"chmod 600"}},
		{"short", func(t *testing.T, p string) { os.Truncate(p, KeySize-1) }, []string{"31 bytes, want 32"}},
		{"long", func(t *testing.T, p string) { os.Truncate(p, KeySize+1) }, []string{"33 bytes, want 32"}},
		{"a symlink", func(t *testing.T, p string) {
			real := p + ".real"
			os.Rename(p, real)
			os.Symlink(real, p)
		}, []string{"symlink"}},
		{"a directory", func(t *testing.T, p string) { os.Remove(p); os.Mkdir(p, 0o700) }, []string{"not a regular file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !modesMatter && strings.HasPrefix(tc.name, "open to") {
				t.Skip("no mode bits here")
			}
			s := openStore(t)
			dir := s.Dir()
			s.Close()
			p := filepath.Join(dir, KeyFileName)
			tc.setup(t, p)
			_, err := Open(t.Context(), Options{Dir: dir})
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Fatalf("Open with the key file %s = %v, want an error naming %s", tc.name, err, p)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open error %q does not say %q", err, w)
				}
			}
		})
	}
}

// staticKeys is a KeySource for tests: a key in memory.
type staticKeys struct{ key *[KeySize]byte }

func (k *staticKeys) Load(context.Context) (*[KeySize]byte, error) {
	if k.key == nil {
		return nil, ErrNoMasterKey
	}
	c := *k.key
	return &c, nil
}

func (k *staticKeys) Create(context.Context) (*[KeySize]byte, error) {
	k.key = &[KeySize]byte{42}
	c := *k.key
	return &c, nil
}

func (k *staticKeys) String() string { return "memory" }

func TestKeySourceIsPluggable(t *testing.T) {
	keys := &staticKeys{}
	s := openStore(t, func(o *Options) { o.Keys = keys })
	if keys.key == nil {
		t.Fatal("Open did not ask the key source to create a key")
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), KeyFileName)); err == nil {
		t.Error("Open wrote secrets.key though another key source was given")
	}
	putSecrets(t, s, map[string]string{"auth:a:s:k": "v"})
	dir := s.Dir()
	s.Close()
	s = openStore(t, func(o *Options) { o.Dir, o.Keys = dir, keys })
	view(t, s, func(tx *Tx) error {
		if v, err := tx.Secret("auth:a:s:k"); err != nil || string(v) != "v" {
			t.Errorf("Secret after reopen = %v", err)
		}
		return nil
	})
}
