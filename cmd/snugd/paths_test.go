package main

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaultPlaces(t *testing.T) {
	tests := []struct {
		name          string
		goos, home    string
		env           map[string]string
		system        bool
		data, logs    string
		wantNoHomeErr bool
	}{
		{name: "linux root", goos: "linux", home: "/root", system: true, data: "/var/lib/snugd", logs: ""},
		{name: "linux user", goos: "linux", home: "/home/ada", data: "/home/ada/.local/share/snugd", logs: ""},
		{name: "linux user xdg", goos: "linux", home: "/home/ada", env: map[string]string{"XDG_DATA_HOME": "/data/ada/"}, data: "/data/ada/snugd", logs: ""},
		{name: "linux user relative xdg ignored", goos: "linux", home: "/home/ada", env: map[string]string{"XDG_DATA_HOME": "data"}, data: "/home/ada/.local/share/snugd", logs: ""},
		{name: "linux user without home", goos: "linux", wantNoHomeErr: true},
		{name: "linux root without home", goos: "linux", system: true, data: "/var/lib/snugd", logs: ""},
		{name: "darwin system", goos: "darwin", home: "/var/root", system: true, data: "/Library/Application Support/snugd", logs: "/Library/Logs/snugd"},
		{name: "darwin user", goos: "darwin", home: "/Users/ada", data: "/Users/ada/Library/Application Support/snugd", logs: "/Users/ada/Library/Logs/snugd"},
		{name: "darwin user xdg not used", goos: "darwin", home: "/Users/ada", env: map[string]string{"XDG_DATA_HOME": "/x"}, data: "/Users/ada/Library/Application Support/snugd", logs: "/Users/ada/Library/Logs/snugd"},
		{name: "windows system", goos: "windows", home: `C:\Users\ada`, system: true, env: map[string]string{"ProgramData": `D:\ProgramData`}, data: `D:\ProgramData\snugd`, logs: `D:\ProgramData\snugd\logs`},
		{name: "windows system default", goos: "windows", system: true, data: `C:\ProgramData\snugd`, logs: `C:\ProgramData\snugd\logs`},
		{name: "windows system relative ProgramData ignored", goos: "windows", system: true, env: map[string]string{"ProgramData": `ProgramData`}, data: `C:\ProgramData\snugd`, logs: `C:\ProgramData\snugd\logs`},
		{name: "windows user", goos: "windows", home: `C:\Users\ada`, env: map[string]string{"LOCALAPPDATA": `C:\Users\ada\AppData\Local\`}, data: `C:\Users\ada\AppData\Local\snugd`, logs: `C:\Users\ada\AppData\Local\snugd\logs`},
		{name: "windows user without LOCALAPPDATA", goos: "windows", home: `C:\Users\ada`, data: `C:\Users\ada\AppData\Local\snugd`, logs: `C:\Users\ada\AppData\Local\snugd\logs`},
		{name: "freebsd root", goos: "freebsd", home: "/root", system: true, data: "/var/lib/snugd", logs: ""},
		{name: "openbsd user", goos: "openbsd", home: "/home/ada", data: "/home/ada/.local/share/snugd", logs: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := places{goos: tc.goos, getenv: envOf(tc.env), home: tc.home}
			data, err := p.dataDir(tc.system)
			if tc.wantNoHomeErr {
				if !errors.Is(err, errNoHome) {
					t.Fatalf("dataDir(%v) = %q, %v, want errNoHome", tc.system, data, err)
				}
				return
			}
			if err != nil || data != tc.data {
				t.Errorf("dataDir(%v) = %q, %v, want %q", tc.system, data, err, tc.data)
			}
			logs, err := p.logDir(tc.system)
			if err != nil || logs != tc.logs {
				t.Errorf("logDir(%v) = %q, %v, want %q", tc.system, logs, err, tc.logs)
			}
		})
	}
}

func TestHostPlaces(t *testing.T) {
	home := t.TempDir()
	p := hostPlaces(envOf(map[string]string{"HOME": home, "USERPROFILE": home}))
	if p.goos != runtime.GOOS || p.home != home {
		t.Errorf("hostPlaces = %+v, want goos %s, home %s", p, runtime.GOOS, home)
	}
	if runtime.GOOS == "linux" {
		if got := defaultDataDir(true); got != "/var/lib/snugd" {
			t.Errorf("defaultDataDir(true) = %q, want /var/lib/snugd", got)
		}
		if got, err := hostPlaces(os.Getenv).logDir(true); err != nil || got != "" {
			t.Errorf("logDir(true) = %q, %v, want \"\" (journald)", got, err)
		}
		if got, want := defaultDataDir(false), func() string { d, _ := hostPlaces(os.Getenv).dataDir(false); return d }(); got != want {
			t.Errorf("defaultDataDir(false) = %q, want %q", got, want)
		}
	}
}

func TestResolveDataDir(t *testing.T) {
	home := t.TempDir()
	getenv := envOf(map[string]string{"HOME": home, "USERPROFILE": home})
	t.Chdir(home)
	got, err := resolveDataDir(getenv, "rel/dir")
	if want := filepath.Join(home, "rel", "dir"); err != nil || got != want {
		t.Errorf("resolveDataDir(rel/dir) = %q, %v, want %q", got, err, want)
	}
	got, err = resolveDataDir(getenv, "")
	want, _ := hostPlaces(getenv).dataDir(runsAsSystem())
	if err != nil || got != want {
		t.Errorf("resolveDataDir(\"\") = %q, %v, want %q", got, err, want)
	}
}

func TestEnsureDataDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "b", "snugd")
	if err := ensureDataDir(fresh); err != nil {
		t.Fatalf("ensureDataDir(fresh) error: %v", err)
	}
	if fi, err := os.Stat(fresh); err != nil || !fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700) {
		t.Errorf("ensureDataDir(fresh) made %v, %v, want a 0700 directory", fi.Mode(), err)
	}

	loose := filepath.Join(base, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := ensureDataDir(loose); runtime.GOOS != "windows" && (err == nil || !strings.Contains(err.Error(), "must be 0700")) {
		t.Errorf("ensureDataDir(existing 0777) error = %v, want it refused", err)
	}
	if fi, _ := os.Stat(loose); fi.Mode().Perm() != 0o777 {
		t.Errorf("ensureDataDir(existing 0777) changed its mode to %04o", fi.Mode().Perm())
	}
	if err := os.Chmod(loose, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := ensureDataDir(loose); err != nil {
		t.Errorf("ensureDataDir(existing 0700) error: %v", err)
	}

	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ensureDataDir(file); err == nil {
		t.Error("ensureDataDir(a file) = nil, want an error")
	}
}
