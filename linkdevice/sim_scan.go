package linkdevice

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotSimPayload is ScanSim's error for text that is not a simulator
// code: "SNUGSIM1:" and 32 uppercase hex digits.
var ErrNotSimPayload = errors.New("not a simulator code: it reads SNUGSIM1: and 32 hex digits")

// ErrNoSimSession is ScanSim's error when the session directory does not
// exist: no link was ever started for the session, or it was revoked.
var ErrNoSimSession = errors.New("no simulator session: start the link first")

// ScanSim "scans" payload for the simulator session whose directory is
// dir, as a phone reading the code would: it writes the payload whole into
// the file scan (a temporary file renamed into place, so the simulator
// never reads half of it), then waits until ctx is done for the
// simulator's verdict in scan.result and returns it: "linked", or
// "rejected: " and why (not the current code, expired).
//
// The payload is checked first (ErrNotSimPayload) and never written when
// it is not a code. Other errors: ErrNoSimSession; the file system's
// (permission denied for a user who is not snugd's); ctx's when the
// simulator gave no verdict, which means no link attempt is running.
func ScanSim(ctx context.Context, dir, payload string) (string, error) {
	payload = strings.TrimSpace(payload)
	if !isSimPayload(payload) {
		return "", ErrNotSimPayload
	}
	if fi, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", ErrNoSimSession
	} else if err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	result := filepath.Join(dir, simResultFile)
	if err := os.Remove(result); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".scan-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	// Readable by the helper when the scanner is root and snugd another
	// user; the session directory (0700) keeps everyone else out.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", err
	}
	if _, err := tmp.WriteString(payload + "\n"); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, simScanFile)); err != nil {
		return "", err
	}
	t := time.NewTicker(simScanPoll / 2)
	defer t.Stop()
	for {
		raw, err := readSmall(result, 4096)
		if err == nil && len(raw) > 0 && raw[len(raw)-1] == '\n' {
			return strings.TrimSpace(string(raw)), nil
		}
		select {
		case <-ctx.Done():
			// Nobody read it: take it back, so that a later attempt
			// does not link on a code scanned now.
			os.Remove(filepath.Join(dir, simScanFile))
			return "", ctx.Err()
		case <-t.C:
		}
	}
}

// isSimPayload reports whether s is a simulator code.
func isSimPayload(s string) bool {
	hexPart, ok := strings.CutPrefix(s, simPayloadTag)
	if !ok || len(hexPart) != 32 {
		return false
	}
	for _, r := range hexPart {
		if !('0' <= r && r <= '9' || 'A' <= r && r <= 'F') {
			return false
		}
	}
	return true
}
