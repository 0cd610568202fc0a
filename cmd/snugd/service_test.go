package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kardianos/service"
)

// fakeManager plays a service manager that keeps its service file where
// kardianos/service would: Install writes the file (and refuses to overwrite
// one, like kardianos), Uninstall removes it.
type fakeManager struct {
	platform string
	file     string // "" for a registry (Windows)
	content  string // what Install writes
	// elsewhere: the service is installed, but not from file (a package).
	elsewhere bool
	installed bool // for file == ""
	running   bool
	calls     *[]string
	failWith  error // returned by every action
}

func (m *fakeManager) record(call string) error {
	*m.calls = append(*m.calls, call)
	return m.failWith
}

func (m *fakeManager) Install() error {
	if err := m.record("install"); err != nil {
		return err
	}
	if m.file == "" {
		m.installed = true
		return nil
	}
	if _, err := os.Stat(m.file); err == nil {
		return fmt.Errorf("Init already exists: %s", m.file)
	}
	if err := os.MkdirAll(filepath.Dir(m.file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(m.file, []byte(m.content), 0o644)
}

func (m *fakeManager) Uninstall() error {
	if err := m.record("uninstall"); err != nil {
		return err
	}
	m.installed = false
	if m.file == "" {
		return nil
	}
	return os.Remove(m.file)
}

func (m *fakeManager) Start() error {
	err := m.record("start")
	m.running = err == nil
	return err
}

func (m *fakeManager) Stop() error {
	err := m.record("stop")
	m.running = m.running && err != nil
	return err
}

func (m *fakeManager) Restart() error {
	err := m.record("restart")
	m.running = err == nil
	return err
}

func (m *fakeManager) Status() (service.Status, error) {
	present := m.installed || m.elsewhere
	if m.file != "" {
		if _, err := os.Stat(m.file); err == nil {
			present = true
		}
	}
	switch {
	case !present:
		return service.StatusUnknown, service.ErrNotInstalled
	case m.running:
		return service.StatusRunning, nil
	}
	return service.StatusStopped, nil
}

func (m *fakeManager) Platform() string { return m.platform }

// machine is a test machine: a serviceHost whose manager is a fakeManager
// that keeps its files in a temporary directory.
type machine struct {
	t       *testing.T
	host    serviceHost
	mgr     *fakeManager
	calls   []string
	configs []*service.Config
	env     map[string]string
	dirs    []string // directories the commands created
}

func newMachine(t *testing.T, goos string) *machine {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	m := &machine{t: t, env: map[string]string{"HOME": home}}
	m.mgr = &fakeManager{platform: shippedPlatform(goos), calls: &m.calls}
	m.host = serviceHost{
		mkdirAll: func(dir string, mode os.FileMode) error {
			m.dirs = append(m.dirs, dir)
			return nil
		},
		places:     places{goos: goos, getenv: func(k string) string { return m.env[k] }, home: home},
		platform:   shippedPlatform(goos),
		isRoot:     true,
		executable: func() (string, error) { return "/usr/local/bin/snugd", nil },
		newManager: func(c *service.Config) (manager, error) {
			m.configs = append(m.configs, c)
			user, _ := c.Option["UserService"].(bool)
			m.mgr.file, _ = m.host.unitPath(user)
			m.mgr.content, _ = c.Option["SystemdScript"].(string)
			if s, ok := c.Option["LaunchdConfig"].(string); ok {
				m.mgr.content = s
			}
			return m.mgr, nil
		},
		unitPath: func(user bool) (string, error) {
			p, err := unitPathFor(places{goos: goos, home: home}, user)
			if err != nil || p == "" || user {
				return p, err
			}
			return filepath.Join(root, "system", filepath.Base(p)), nil
		},
	}
	return m
}

// run runs snugd ACTION ARGS… on the machine.
func (m *machine) run(action string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(k string) string { return m.env[k] }}
	code = serviceMain(e, m.host, action, args)
	return code, out.String(), errOut.String()
}

func (m *machine) unitFiles(user bool) []string {
	m.t.Helper()
	p, err := m.host.unitPath(user)
	if err != nil {
		m.t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "*"))
	return matches
}

func expect(t *testing.T, what string, code int, stdout, stderr string, wantCode int, wantOut string) {
	t.Helper()
	if code != wantCode || !strings.Contains(stdout+stderr, wantOut) {
		t.Errorf("%s = %d, stdout %q, stderr %q; want %d and %q", what, code, stdout, stderr, wantCode, wantOut)
	}
}

func TestInstallIsIdempotent(t *testing.T) {
	for _, tc := range []struct {
		goos string
		user bool
	}{{"linux", false}, {"linux", true}, {"darwin", false}, {"darwin", true}} {
		t.Run(fmt.Sprintf("%s user=%v", tc.goos, tc.user), func(t *testing.T) {
			m := newMachine(t, tc.goos)
			var args []string
			if tc.user {
				args = []string{"--user"}
			}
			code, out, errOut := m.run("install", args...)
			expect(t, "first install", code, out, errOut, exitOK, "installed")
			file, _ := m.host.unitPath(tc.user)
			want, err := renderServiceFile(tc.goos, serviceOptions{
				user: tc.user, exe: "/usr/local/bin/snugd",
				dataDir: must(m.host.places.dataDir(!tc.user)), logDir: must(m.host.places.logDir(!tc.user)),
			})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(file); string(got) != want {
				t.Errorf("installed file =\n%s\nwant\n%s", got, want)
			}
			if c := m.configs[0]; c.Name != "snugd" || c.Option["UserService"] != tc.user || c.Executable != "/usr/local/bin/snugd" {
				t.Errorf("service.Config = %+v", c)
			}

			code, out, errOut = m.run("install", args...)
			expect(t, "second install", code, out, errOut, exitOK, "already installed")
			if !slices.Equal(m.calls, []string{"install"}) {
				t.Errorf("calls = %v, want one install", m.calls)
			}
			if files := m.unitFiles(tc.user); len(files) != 1 {
				t.Errorf("service files = %v, want one", files)
			}
			if logs := must(m.host.places.logDir(!tc.user)); logs != "" && !slices.Equal(m.dirs, []string{logs}) {
				t.Errorf("created directories %v, want the log directory %s", m.dirs, logs)
			}
		})
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

func TestInstallUpdatesChangedSettings(t *testing.T) {
	m := newMachine(t, "linux")
	m.run("install", "--user")
	code, out, errOut := m.run("install", "--user", "--port", "5000")
	expect(t, "install --port 5000", code, out, errOut, exitOK, "updated")
	file, _ := m.host.unitPath(true)
	if got, _ := os.ReadFile(file); !strings.Contains(string(got), "--port 5000") {
		t.Errorf("unit after update =\n%s\nwant --port 5000", got)
	}
	if want := []string{"install", "uninstall", "install"}; !slices.Equal(m.calls, want) {
		t.Errorf("calls = %v, want %v", m.calls, want)
	}
	if files := m.unitFiles(true); len(files) != 1 {
		t.Errorf("service files = %v, want one", files)
	}

	// A running service is restarted so the change takes effect.
	m.mgr.running = true
	m.calls = nil
	code, out, errOut = m.run("install", "--user", "--port", "5001")
	expect(t, "install --port 5001 while running", code, out, errOut, exitOK, "restarted")
	if want := []string{"uninstall", "install", "restart"}; !slices.Equal(m.calls, want) {
		t.Errorf("calls = %v, want %v", m.calls, want)
	}

	// On macOS, uninstalling unloads the job: it is started again.
	d := newMachine(t, "darwin")
	d.run("install", "--user")
	d.mgr.running = true
	d.calls = nil
	code, out, errOut = d.run("install", "--user", "--data-dir", "/Users/ada/snugd")
	expect(t, "darwin install --data-dir while running", code, out, errOut, exitOK, "restarted")
	if want := []string{"uninstall", "install", "start"}; !slices.Equal(d.calls, want) {
		t.Errorf("darwin calls = %v, want %v", d.calls, want)
	}
}

func TestInstallLeavesOtherInstallsAlone(t *testing.T) {
	m := newMachine(t, "linux")
	m.mgr.elsewhere = true // e.g. the .deb's /usr/lib/systemd/system/snugd.service
	code, out, errOut := m.run("install")
	expect(t, "install over a packaged unit", code, out, errOut, exitOK, "not by snugd install")
	if len(m.calls) != 0 {
		t.Errorf("calls = %v, want none", m.calls)
	}
	code, out, errOut = m.run("uninstall")
	expect(t, "uninstall of a packaged unit", code, out, errOut, exitNo, "package manager")

	w := newMachine(t, "windows")
	w.env["ProgramData"] = `C:\ProgramData`
	code, out, errOut = w.run("install")
	expect(t, "windows install", code, out, errOut, exitOK, "installed windows-service")
	code, out, errOut = w.run("install")
	expect(t, "windows install again", code, out, errOut, exitOK, "already installed")
	if !slices.Equal(w.calls, []string{"install"}) {
		t.Errorf("windows calls = %v, want one install", w.calls)
	}
	c := w.configs[0]
	if c.Option["OnFailure"] != "restart" || !slices.Equal(c.Arguments, []string{"run", "--data-dir", `C:\ProgramData\snugd`}) {
		t.Errorf("windows service.Config = %+v", c)
	}
}

func TestServiceWithoutServiceManager(t *testing.T) {
	m := newMachine(t, "linux")
	m.host.newManager = func(*service.Config) (manager, error) { return nil, service.ErrNoServiceSystemDetected }
	for _, action := range []string{"install", "uninstall", "start", "stop", "restart"} {
		code, out, errOut := m.run(action)
		expect(t, action, code, out, errOut, exitNo, "systemd is not running on this machine")
	}
	// Without a service manager there is no service: status says so in
	// the one line it prints anywhere else.
	code, out, errOut := m.run("status")
	if code != exitNo || out != "not installed\n" || errOut != "" {
		t.Errorf("status without systemd = %d, %q, %q; want %d, \"not installed\\n\", no stderr", code, out, errOut, exitNo)
	}

	// kardianos/service falls back to System V on a Linux box without systemd.
	m = newMachine(t, "linux")
	m.mgr.platform = "unix-systemv"
	code, out, errOut = m.run("install")
	expect(t, "install under System V", code, out, errOut, exitNo, `run "snugd run" under your own supervisor`)
	code, out, errOut = m.run("status")
	if code != exitNo || out != "not installed\n" || errOut != "" {
		t.Errorf("status under System V = %d, %q, %q; want %d, \"not installed\\n\", no stderr", code, out, errOut, exitNo)
	}
	if len(m.calls) != 0 {
		t.Errorf("calls = %v, want none", m.calls)
	}

	f := newMachine(t, "freebsd")
	code, out, errOut = f.run("install")
	expect(t, "install on freebsd", code, out, errOut, exitNo, `run "snugd run" under your own supervisor`)
}

func TestServiceRefusals(t *testing.T) {
	tests := []struct {
		name     string
		goos     string
		setup    func(*machine)
		action   string
		args     []string
		wantCode int
		wantOut  string
	}{
		{name: "system service as a user", goos: "linux", setup: func(m *machine) { m.host.isRoot = false }, action: "install", wantCode: exitNo, wantOut: "needs root"},
		{name: "user service as a user", goos: "linux", setup: func(m *machine) { m.host.isRoot = false }, action: "install", args: []string{"--user"}, wantCode: exitOK, wantOut: "installed"},
		{name: "status as a user", goos: "linux", setup: func(m *machine) { m.host.isRoot = false }, action: "status", wantCode: exitNo, wantOut: "not installed"},
		{name: "go run binary", goos: "linux", setup: func(m *machine) {
			m.host.executable = func() (string, error) { return "/tmp/go-build123/b001/exe/snugd", nil }
		}, action: "install", wantCode: exitNo, wantOut: "temporary build"},
		// go run on Go 1.24+ keeps the binary in the build cache.
		{name: "go run binary in the build cache", goos: "linux", setup: func(m *machine) {
			m.host.executable = func() (string, error) {
				return "/root/.cache/go-build/e6/e6cd8c78e1f4890c430e127e1f7eae497ab7b487bcc3c97e27bbd9a2e6c8bf93-d/snugd", nil
			}
		}, action: "install", wantCode: exitNo, wantOut: "go build -o /usr/local/bin/snugd ./cmd/snugd"},
		// A directory that only looks hex-ish is an ordinary install place.
		{name: "binary beside a -d directory", goos: "linux", setup: func(m *machine) {
			m.host.executable = func() (string, error) { return "/opt/ab/abc-d/snugd", nil }
		}, action: "install", wantCode: exitOK, wantOut: "installed"},
		{name: "system data dir outside /var/lib", goos: "linux", action: "install", args: []string{"--data-dir", "/srv/snugd"}, wantCode: exitNo, wantOut: "under /var/lib"},
		{name: "user on windows", goos: "windows", action: "install", args: []string{"--user"}, wantCode: exitUsage, wantOut: "no per-user services"},
		{name: "port out of range", goos: "linux", action: "install", args: []string{"--port", "80"}, wantCode: exitUsage, wantOut: "--port"},
		{name: "port not a number", goos: "linux", action: "install", args: []string{"--port", "x"}, wantCode: exitUsage, wantOut: "invalid value"},
		{name: "port on start", goos: "linux", action: "start", args: []string{"--port", "5000"}, wantCode: exitUsage, wantOut: "not defined"},
		{name: "extra argument", goos: "linux", action: "status", args: []string{"now"}, wantCode: exitUsage, wantOut: "unexpected argument"},
		{name: "help", goos: "linux", action: "install", args: []string{"-h"}, wantCode: exitOK, wantOut: "-data-dir"},
		{name: "permission denied", goos: "linux", setup: func(m *machine) { m.mgr.failWith = fs.ErrPermission }, action: "install", wantCode: exitNo, wantOut: "needs root or an administrator"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t, tc.goos)
			if tc.setup != nil {
				tc.setup(m)
			}
			code, out, errOut := m.run(tc.action, tc.args...)
			expect(t, tc.action, code, out, errOut, tc.wantCode, tc.wantOut)
		})
	}
}

func TestServiceLifecycle(t *testing.T) {
	m := newMachine(t, "linux")
	steps := []struct {
		action   string
		wantCode int
		wantOut  string
	}{
		{"status", exitNo, "not installed"},
		{"start", exitNo, "not installed; run snugd install first"},
		{"stop", exitNo, "not installed"},
		{"uninstall", exitOK, "not installed"},
		{"install", exitOK, "start it with: snugd start"},
		{"status", exitNo, "stopped"},
		{"stop", exitOK, "already stopped"},
		{"start", exitOK, "started"},
		{"status", exitOK, "running"},
		{"start", exitOK, "already running"},
		{"restart", exitOK, "restarted"},
		{"stop", exitOK, "stopped"},
		{"start", exitOK, "started"},
		{"uninstall", exitOK, "uninstalled"},
		{"status", exitNo, "not installed"},
	}
	for _, s := range steps {
		code, out, errOut := m.run(s.action)
		expect(t, s.action, code, out, errOut, s.wantCode, s.wantOut)
	}
	want := []string{"install", "start", "restart", "stop", "start", "stop", "uninstall"}
	if !slices.Equal(m.calls, want) {
		t.Errorf("calls = %v, want %v (uninstall stops a running service first)", m.calls, want)
	}
	if files := m.unitFiles(false); len(files) != 0 {
		t.Errorf("service files after uninstall = %v, want none", files)
	}
}

func TestStatusOfAFailedService(t *testing.T) {
	m := newMachine(t, "linux")
	m.run("install")
	m.host.newManager = func(*service.Config) (manager, error) { return failedManager{m.mgr}, nil }
	code, out, errOut := m.run("status")
	expect(t, "status", code, out, errOut, exitNo, "unknown (service in failed state)")
	code, out, errOut = m.run("start")
	expect(t, "start", code, out, errOut, exitOK, "started")
}

// failedManager is a service in systemd's failed state, which kardianos
// reports as an error.
type failedManager struct{ *fakeManager }

func (failedManager) Status() (service.Status, error) {
	return service.StatusUnknown, errors.New("service in failed state")
}

func TestServiceCommandsAreDispatched(t *testing.T) {
	for _, action := range []string{"install", "uninstall", "start", "stop", "restart", "status"} {
		var out, errOut bytes.Buffer
		e := env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
		if code := dispatch(context.Background(), e, []string{action, "--no-such-flag"}); code != exitUsage {
			t.Errorf("snugd %s --no-such-flag = %d, want %d; stderr %q", action, code, exitUsage, errOut.String())
		}
	}
}
