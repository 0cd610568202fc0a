package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// KeySize is the master key's length: AES-256.
const KeySize = 32

// ErrNoMasterKey: the key source holds no key yet.
var ErrNoMasterKey = errors.New("no master key")

// KeySource keeps the master key that seals snug_secrets, outside the
// database. KeyFile is the one snugd ships; an OS keychain could be another.
type KeySource interface {
	// Load returns the key, or an error wrapping ErrNoMasterKey when the
	// source holds none.
	Load(ctx context.Context) (*[KeySize]byte, error)
	// Create makes, stores and returns a new random key. The store calls it
	// only after Load reported ErrNoMasterKey and only for a database that
	// holds no sealed value yet, under the directory lock.
	Create(ctx context.Context) (*[KeySize]byte, error)
	// String says where the key lives, for logs and diagnostics. It never
	// contains key material.
	String() string
}

// KeyFile keeps the master key in a file of exactly KeySize bytes, mode
// 0600, owned by the user snugd runs as.
type KeyFile struct {
	Path string
}

func (k KeyFile) String() string { return "file " + k.Path }

// Load reads the key file. It refuses a file that is not a regular file,
// that group or others can read, that another user owns, or whose size is
// not KeySize, with an error naming the file and the fix.
func (k KeyFile) Load(context.Context) (*[KeySize]byte, error) {
	if fi, err := os.Lstat(k.Path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("key file %s is a symlink: put the key file itself there", k.Path)
	}
	f, err := os.OpenFile(k.Path, os.O_RDONLY|noFollow, 0) // noFollow: no symlink swapped in since
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("key file %s: %w", k.Path, ErrNoMasterKey)
	}
	if err != nil {
		return nil, fmt.Errorf("open key file %s: %w", k.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat key file %s: %w", k.Path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s is not a regular file: restore the original key file", k.Path)
	}
	if err := checkOwner("key file", k.Path, fi); err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); modesMatter && perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s is open to group or others (mode %04o): run chmod 600 %s, and consider the key exposed if others could read it", k.Path, perm, k.Path)
	}
	if fi.Size() != KeySize {
		return nil, fmt.Errorf("key file %s holds %d bytes, want %d: restore the original key file (a new key cannot open existing secrets)", k.Path, fi.Size(), KeySize)
	}
	key := new([KeySize]byte)
	if _, err := io.ReadFull(f, key[:]); err != nil {
		return nil, fmt.Errorf("read key file %s: %w", k.Path, err)
	}
	return key, nil
}

// Create writes a new random key: to a fresh temporary file (O_EXCL, 0600),
// synced, then moved into place and the directory synced, so a crash leaves
// either no key file or a whole one. It never replaces an existing key file.
func (k KeyFile) Create(context.Context) (*[KeySize]byte, error) {
	dir := filepath.Dir(k.Path)
	key := new([KeySize]byte)
	rand.Read(key[:])                                    // crypto/rand.Read never fails; it crashes the program instead
	tmp, err := os.CreateTemp(dir, ".secrets.key-*.tmp") // O_RDWR|O_CREATE|O_EXCL, 0600
	if err != nil {
		return nil, fmt.Errorf("create key file in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key[:])
	if err == nil && modesMatter {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write key file %s: %w", tmp.Name(), err)
	}
	// A hard link refuses to replace an existing file; fall back to rename
	// only where links are not supported, after checking there is no file.
	if err := os.Link(tmp.Name(), k.Path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("key file %s appeared while a new one was being made: %w", k.Path, err)
		}
		if _, serr := os.Lstat(k.Path); !errors.Is(serr, fs.ErrNotExist) {
			return nil, fmt.Errorf("key file %s: %w", k.Path, err)
		}
		if err := os.Rename(tmp.Name(), k.Path); err != nil {
			return nil, fmt.Errorf("install key file %s: %w", k.Path, err)
		}
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("sync %s: %w", dir, err)
	}
	return key, nil
}

// Sealing format of a snug_secrets value (and of snugd_meta's key check):
//
//	version (1 byte, 0x01) ‖ nonce (12 random bytes) ‖ AES-256-GCM ciphertext ‖ tag (16 bytes)
//
// with the row's key name as the additional data, so a value copied or moved
// to another key does not open.
const sealV1 byte = 0x01

// ErrUnreadableSecret: a sealed value does not open: the master key is not
// the one it was sealed under, or the value was moved to another key, or it
// was altered.
var ErrUnreadableSecret = errors.New("does not open under the master key (another key, or a value moved or altered)")

type sealer struct{ aead cipher.AEAD }

func newSealer(key *[KeySize]byte) (*sealer, error) {
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCMWithRandomNonce(block) // fresh random 96-bit nonce per Seal, prepended
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(name string, plain []byte) []byte {
	out := make([]byte, 1, 1+len(plain)+s.aead.Overhead())
	out[0] = sealV1
	return s.aead.Seal(out, nil, plain, []byte(name))
}

// open returns the plaintext, or an error naming the key (never a value).
func (s *sealer) open(name string, blob []byte) ([]byte, error) {
	if len(blob) == 0 || blob[0] != sealV1 {
		return nil, fmt.Errorf("secret %q: unknown sealing format: %w", name, ErrUnreadableSecret)
	}
	plain, err := s.aead.Open(nil, nil, blob[1:], []byte(name))
	if err != nil {
		return nil, fmt.Errorf("secret %q %w", name, ErrUnreadableSecret)
	}
	return plain, nil
}

// keyCheckName is the additional data of the key check value, a name no
// §13 key has (they all start "auth:"). Even a secret stored under it would
// gain nothing: the check's plaintext is this constant.
const (
	keyCheckName  = "snugd_meta:key_check"
	keyCheckPlain = "snugd master key check v1"
)

// loadMasterKey loads (or, for a database without sealed values, creates)
// the master key and proves it is this database's by opening the key check
// stored beside the schema version, so a wrong or missing key stops Open
// instead of surfacing later as unreadable secrets.
func (s *Store) loadMasterKey(ctx context.Context, src KeySource) error {
	var check []byte
	err := s.w.QueryRowContext(ctx, "SELECT value FROM snugd_meta WHERE key = ?", metaKeyCheck).Scan(&check)
	hasCheck := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read key check: %w", err)
	}
	key, err := src.Load(ctx)
	switch {
	case errors.Is(err, ErrNoMasterKey) && hasCheck:
		return fmt.Errorf("%s holds sealed secrets but its master key (%s) is missing: restore the key from the backup made with the database", s.DBPath(), src)
	case errors.Is(err, ErrNoMasterKey):
		if key, err = src.Create(ctx); err != nil {
			return err
		}
		s.log.Info("created master key", "keys", src.String())
	case err != nil:
		return err
	}
	sl, err := newSealer(key)
	clear(key[:])
	if err != nil {
		return err
	}
	if hasCheck {
		if _, err := sl.open(keyCheckName, check); err != nil {
			return fmt.Errorf("the master key (%s) is not the one %s's secrets were sealed with: restore the key file that belongs to this database", src, s.DBPath())
		}
	} else if _, err := s.w.ExecContext(ctx, "INSERT INTO snugd_meta (key, value) VALUES (?, ?)", metaKeyCheck, sl.seal(keyCheckName, []byte(keyCheckPlain))); err != nil {
		return fmt.Errorf("write key check: %w", err)
	}
	s.sealer = sl
	return nil
}
