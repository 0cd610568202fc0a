//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestLoadConfigRefusesUnsafeFiles(t *testing.T) {
	for _, mode := range []os.FileMode{0o664, 0o646, 0o666, 0o622, 0o777} {
		dir := writeConfig(t, `{}`, mode)
		if _, err := loadConfig(dir, configFlags{}); err == nil || !strings.Contains(err.Error(), "lets others write it") {
			t.Errorf("loadConfig(mode %04o) error = %v, want it refused", mode, err)
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o644, 0o400, 0o444} {
		if _, err := loadConfig(writeConfig(t, `{}`, mode), configFlags{}); err != nil {
			t.Errorf("loadConfig(mode %04o) error: %v", mode, err)
		}
	}

	big := writeConfig(t, `{"port":4747}`+strings.Repeat(" ", maxConfigSize), 0o600)
	if _, err := loadConfig(big, configFlags{}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("loadConfig(oversized) error = %v, want it refused", err)
	}

	asDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(asDir, configFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(asDir, configFlags{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("loadConfig(config.json a directory) error = %v, want it refused", err)
	}

	fifo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, configFile), 0o600); err != nil {
		t.Fatal(err)
	}
	// Opening a FIFO would block until a writer comes: this ends only if
	// loadConfig refuses it unopened.
	if _, err := loadConfig(fifo, configFlags{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("loadConfig(config.json a FIFO) error = %v, want it refused", err)
	}

	if os.Geteuid() == 0 {
		dir := writeConfig(t, `{}`, 0o600)
		if err := os.Chown(filepath.Join(dir, configFile), 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, err := loadConfig(dir, configFlags{}); err == nil || !strings.Contains(err.Error(), "owned by uid 4242") {
			t.Errorf("loadConfig(someone else's file) error = %v, want it refused", err)
		}
	}
}
