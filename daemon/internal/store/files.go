package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// ensurePrivateDir creates dir 0700 when it is missing and otherwise refuses
// one that group or others can reach or that another user owns: every file
// the store keeps is only as private as this directory.
func ensurePrivateDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create data directory %s: %w", dir, err)
		}
		// MkdirAll's mode passes through the umask; say 0700 outright.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("data directory %s: %w", dir, err)
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s is not a directory: pick another data directory", dir)
	}
	if err := checkOwner("data directory", dir, fi); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); modesMatter && perm&0o077 != 0 {
		return fmt.Errorf("data directory %s is open to group or others (mode %04o): run chmod 700 %s", dir, perm, dir)
	}
	return nil
}

// ensurePrivateFile makes path (inside the private data directory) a regular
// file of this user with mode 0600, creating it when create is set; a
// missing file is left missing otherwise. A wider mode is tightened, since
// the directory already kept others out; a foreign owner is refused.
func ensurePrivateFile(path string, create bool, log *slog.Logger) error {
	flags := os.O_RDWR | noFollow
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if !create && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: move it out of the data directory", path)
	}
	if err := checkOwner("file", path, fi); err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); modesMatter && perm != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("chmod 600 %s: %w", path, err)
		}
		if perm&0o077 != 0 {
			log.Warn("tightened file mode to 0600", "path", path, "was", fmt.Sprintf("%04o", perm))
		}
	}
	return nil
}

// checkOwner refuses a file or directory the effective user does not own.
func checkOwner(what, path string, fi fs.FileInfo) error {
	uid, ok := fileOwner(fi)
	if !ok || uid == os.Geteuid() {
		return nil
	}
	return fmt.Errorf("%s %s is owned by uid %d, not by uid %d that snugd runs as: chown it to that account, or use another data directory", what, path, uid, os.Geteuid())
}
