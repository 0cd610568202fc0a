package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/snug/snugd/api"
)

// runEnv runs snugd args in-process with stdin and an environment.
func runEnv(t *testing.T, stdin any, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := env{stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	switch in := stdin.(type) {
	case string:
		e.stdin = strings.NewReader(in)
	case *os.File:
		e.stdin = in
	}
	code := dispatch(t.Context(), e, args)
	return code, out.String(), errb.String()
}

func TestVersionFlags(t *testing.T) {
	for _, arg := range []string{"--version", "-v", "version"} {
		code, out, errOut := runCmd(t, "", arg)
		if code != exitOK || !strings.HasPrefix(out, "snugd ") || errOut != "" {
			t.Errorf("snugd %s = %d, %q, %q; want the version on stdout", arg, code, out, errOut)
		}
	}
}

// TestHelpPerCommand: every command's -h and --help print a synopsis, the
// flags and an example on stdout, and exit 0.
func TestHelpPerCommand(t *testing.T) {
	var cases [][]string
	for _, d := range topDocs() {
		if d.name != "help" {
			cases = append(cases, []string{d.name, "-h"}, []string{d.name, "--help"})
		}
	}
	for _, c := range ctlCommands() {
		cases = append(cases, []string{"ctl", c.name, "-h"}, []string{"ctl", c.name, "x", "--help"}, []string{"help", "ctl", c.name})
	}
	for _, args := range cases {
		code, out, errOut := runCmd(t, "", args...)
		if code != exitOK || !strings.HasPrefix(out, "usage: snugd ") || errOut != "" {
			t.Errorf("snugd %q = %d, stdout %q, stderr %q; want usage on stdout", args, code, out, errOut)
			continue
		}
		if args[0] != "ctl" || len(args) > 2 && args[1] != "" {
			if args[0] != "ctl" && args[0] != "help" && !strings.Contains(out, "example:\n  snugd ") && !strings.Contains(out, "example:\n  sudo snugd ") {
				t.Errorf("snugd %q lacks an example:\n%s", args, out)
			}
		}
		if (args[0] == "ctl" || args[0] == "help") && !strings.Contains(out, "example:\n") {
			if args[0] == "ctl" && len(args) == 2 {
				continue // snugd ctl -h is the command list
			}
			t.Errorf("snugd %q lacks an example:\n%s", args, out)
		}
	}
	code, out, _ := runCmd(t, "", "ctl", "credentials", "--help")
	if code != exitOK || !strings.Contains(out, "--file string") || !strings.Contains(out, "--data-dir string") {
		t.Errorf("ctl credentials --help = %d, %q; want its flags", code, out)
	}
}

func TestDidYouMean(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"isntall"}, `did you mean "snugd install"?`},
		{[]string{"stauts"}, `did you mean "snugd status"?`},
		{[]string{"ctl", "stauts"}, `did you mean "snugd ctl status"?`},
		{[]string{"ctl", "credential"}, `did you mean "snugd ctl credentials"?`},
		{[]string{"ctl", "conf"}, `did you mean "snugd ctl confirms"?`},
		// A pair ceremony typed as a command of its own.
		{[]string{"ctl", "claim"}, `did you mean "snugd ctl pair claim"?`},
		{[]string{"ctl", "clam"}, `did you mean "snugd ctl pair claim"?`},
		{[]string{"ctl", "link"}, `did you mean "snugd ctl pair link"?`},
	}
	for _, tc := range tests {
		code, _, errOut := runCmd(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("snugd %q = %d, %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
	if code, _, errOut := runCmd(t, "", "ctl", "zzzzzzzz"); code != exitUsage || strings.Contains(errOut, "did you mean") {
		t.Errorf("ctl zzzzzzzz = %d, %q; want no suggestion", code, errOut)
	}
}

// TestDataDirEverywhere: --data-dir before or after the command, and
// SNUGD_DATA_DIR when there is none.
func TestDataDirEverywhere(t *testing.T) {
	td := startDaemon(t)
	for _, tc := range []struct {
		vars map[string]string
		args []string
	}{
		{nil, []string{"ctl", "--data-dir", td.dir, "status"}},
		{nil, []string{"ctl", "status", "--data-dir", td.dir}},
		{nil, []string{"ctl", "status", "--data-dir=" + td.dir, "--json"}},
		{map[string]string{dataDirEnv: td.dir}, []string{"ctl", "status"}},
		{map[string]string{dataDirEnv: "/nonexistent"}, []string{"ctl", "status", "--data-dir", td.dir}},
	} {
		code, out, errOut := runEnv(t, "", tc.vars, tc.args...)
		if code != exitOK || !strings.Contains(out, td.dir) {
			t.Errorf("%v snugd %q = %d, %q, %q; want the daemon's status", tc.vars, tc.args, code, out, errOut)
		}
	}
	if code, _, errOut := runCmd(t, "", "ctl", "status", "--data-dir"); code != exitUsage || !strings.Contains(errOut, "needs an argument") {
		t.Errorf("ctl status --data-dir = %d, %q; want a usage error", code, errOut)
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runCmd(t, "", "completion", shell)
		if code != exitOK || errOut != "" {
			t.Fatalf("completion %s = %d, %q", shell, code, errOut)
		}
		for _, want := range []string{"credentials", "apps", "install", "completion"} {
			if !strings.Contains(out, want) {
				t.Errorf("completion %s lacks %q", shell, want)
			}
		}
		// The shell itself checks the syntax, where it is installed.
		if path, err := exec.LookPath(shell); err == nil {
			f := filepath.Join(t.TempDir(), "snugd."+shell)
			os.WriteFile(f, []byte(out), 0o600)
			if b, err := exec.Command(path, "-n", f).CombinedOutput(); err != nil {
				t.Errorf("%s -n on the completion script: %v\n%s", shell, err, b)
			}
		}
	}
	if code, _, _ := runCmd(t, "", "completion", "tcsh"); code != exitUsage {
		t.Errorf("completion tcsh = %d, want a usage error", code)
	}
}

// TestManPageCurrent: packaging/man/snugd.1, which the .deb ships, is
// what snugd help --man prints. Regenerate it with
//
//	go run ./cmd/snugd help --man > packaging/man/snugd.1
func TestManPageCurrent(t *testing.T) {
	want, err := os.ReadFile("../../packaging/man/snugd.1")
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCmd(t, "", "help", "--man")
	if code != exitOK || out != string(want) {
		t.Errorf("packaging/man/snugd.1 is not current: run go run ./cmd/snugd help --man > packaging/man/snugd.1")
	}
	for _, c := range ctlCommands() {
		if !strings.Contains(out, "snugd ctl "+roff(c.name)) {
			t.Errorf("the man page lacks ctl %s", c.name)
		}
	}
}

// TestExportToStdout: export - writes the database to standard output.
func TestExportToStdout(t *testing.T) {
	td := startDaemon(t)
	code, out, errOut := td.ctl(t, "", "export", "-")
	if code != exitOK || !strings.HasPrefix(out, "SQLite format 3\x00") {
		t.Fatalf("export - = %d, %d bytes, %q; want an SQLite file on stdout", code, len(out), errOut)
	}
	if _, err := os.Stat("-"); err == nil {
		os.Remove("-")
		t.Fatal("export - wrote a file named -")
	}
}

// TestCredentialInput: a values file others can read is refused the same
// way whether it is named by --file or redirected to stdin; a private one
// and a pipe are taken; a partial set is stored and its missing fields
// named.
func TestCredentialInput(t *testing.T) {
	td := startDaemon(t)
	td.propose(t, "trader")
	td.ctl(t, "", "approve", "trader", "coinbase-exchange", "--yes")
	dir := t.TempDir()
	all := `{"api_key":"k-123","api_secret":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=","passphrase":"p"}`
	open := writeFile(t, dir, "open.json", all, 0o644)
	private := writeFile(t, dir, "private.json", all, 0o600)
	stdinFile := func(name string) *os.File {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	args := []string{"ctl", "--data-dir", td.dir, "credentials", "set", "trader", "coinbase-exchange"}
	code, out, errOut := runEnv(t, `{"api_key":"k-123"}`, nil, args...)
	if code != exitOK || !strings.Contains(out, "not connected yet: missing required fields: api_secret, passphrase: snugd ctl credentials set trader coinbase-exchange") {
		t.Errorf("a partial set = %d, %q, %q; want the missing fields named", code, out, errOut)
	}
	code, out, _ = runEnv(t, `{"api_key":"k-123"}`, nil, append(args, "--json")...)
	var j struct {
		State struct{ Status, LastError string } `json:"state"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &j) != nil || j.State.Status != "pending" {
		t.Errorf("a partial set --json = %d, %q; want state pending", code, out)
	}
	if code, _, errOut := runEnv(t, "", nil, append(args, "--file", open)...); code != exitNo || !strings.Contains(errOut, "mode 0644") {
		t.Errorf("--file 0644 = %d, %q; want a refusal", code, errOut)
	}
	if code, _, errOut := runEnv(t, stdinFile(open), nil, args...); code != exitNo || !strings.Contains(errOut, "standard input is a file with mode 0644") {
		t.Errorf("< 0644 file = %d, %q; want the same refusal", code, errOut)
	}
	if code, out, errOut := runEnv(t, stdinFile(private), nil, args...); code != exitOK || strings.Contains(out, "not connected") {
		t.Errorf("< 0600 file = %d, %q, %q; want stored and connected", code, out, errOut)
	}
	if strings.Contains(out, "k-123") {
		t.Error("credentials set --json shows a value")
	}
}

// TestCtlApps: every app with its connections, and what needs attention.
func TestCtlApps(t *testing.T) {
	td := startDaemon(t)
	code, out, _ := td.ctl(t, "", "apps")
	if code != exitOK || !strings.Contains(out, "no apps yet") {
		t.Errorf("apps with none = %d, %q", code, out)
	}
	td.propose(t, "trader")
	code, out, _ = td.ctl(t, "", "apps")
	for _, want := range []string{"APP", "SLOT", "CREDENTIALS", "trader", "coinbase-exchange", "declared", "needs attention:", "trader/coinbase-exchange: a proposal waits: snugd ctl review trader coinbase-exchange"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("apps lacks %q:\n%s", want, out)
		}
	}
	td.ctl(t, "", "approve", "trader", "coinbase-exchange", "--yes")
	td.ctl(t, `{"api_key":"k"}`, "credentials", "set", "trader", "coinbase-exchange")
	code, out, _ = td.ctl(t, "", "apps")
	if code != exitOK || !strings.Contains(out, "pending") || !strings.Contains(out, "missing required fields: api_secret, passphrase: snugd ctl credentials set trader coinbase-exchange") {
		t.Errorf("apps after a partial set:\n%s", out)
	}
	code, out, _ = td.ctl(t, "", "status")
	if code != exitOK || !strings.Contains(out, "needs attention:\n  trader/coinbase-exchange: missing required fields") {
		t.Errorf("status does not name what needs attention:\n%s", out)
	}
	code, out, _ = td.ctl(t, "", "apps", "--json")
	var j struct {
		Apps []struct {
			AppID       string `json:"appId"`
			Connections []struct {
				Slot        string  `json:"slot"`
				Credentials *string `json:"credentials"`
			} `json:"connections"`
			Attention []struct{ Kind string } `json:"attention"`
		} `json:"apps"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &j) != nil || len(j.Apps) != 1 || j.Apps[0].Attention[0].Kind != "credentials" || *j.Apps[0].Connections[0].Credentials != "pending" {
		t.Errorf("apps --json = %d, %s", code, out)
	}
	if code, _, errOut := td.ctl(t, "", "apps", "frob"); code != exitUsage || !strings.Contains(errOut, "unknown subcommand") {
		t.Errorf("apps frob = %d, %q", code, errOut)
	}
}

func TestBodyPreview(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"json", `{"size":"1","side":"buy"}`, []string{"{", `  "size": "1",`, `  "side": "buy"`, "}"}},
		{"text", "a=1&b=2", []string{"a=1&b=2"}},
		{"control characters", "x\x1b[2Jy", []string{`x\x1b[2Jy`}},
		{"long", strings.Repeat("z", 30), []string{strings.Repeat("z", 10), "… (20 more characters not shown)"}},
	}
	for _, tc := range tests {
		got := bodyPreview(tc.body, 20, 10)
		if tc.name != "long" {
			got = bodyPreview(tc.body, 20, 2000)
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: bodyPreview = %q, want %q", tc.name, got, tc.want)
		}
	}
	many := strings.Repeat("[1,\n", 30)
	if got := bodyPreview(many, 3, 2000); len(got) != 4 || !strings.Contains(got[3], "more characters not shown") {
		t.Errorf("bodyPreview of 30 lines, 3 shown = %q", got)
	}
}

// TestFailedStartCreatesNothing: a start that fails on a taken port
// leaves no data directory, no key, no database, no config.json.
func TestFailedStartCreatesNothing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	missing := filepath.Join(shortDir(t), "data")
	empty := shortDir(t)
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{missing, empty} {
		code, _, errOut := runCmd(t, "", "run", "--data-dir", dir, "--port", strconv.Itoa(port))
		if code != exitNo || !strings.Contains(errOut, "in use") {
			t.Errorf("run on a taken port = %d, %q", code, errOut)
		}
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed start created %s: %v", missing, err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("a failed start left %v in %s", ents, empty)
	}
}

// TestDoctorWithPortFlag: a daemon started with --port listens elsewhere
// than config.json says; doctor checks the port it listens on and passes.
func TestDoctorWithPortFlag(t *testing.T) {
	td := startDaemon(t)
	other := freePort(t)
	if err := os.WriteFile(filepath.Join(td.dir, configFile), []byte(`{"port": `+strconv.Itoa(other)+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := td.ctl(t, "", "doctor")
	if code != exitOK || !strings.Contains(out, "OK    port") || !strings.Contains(out, "started with --port: config.json says 127.0.0.1:"+strconv.Itoa(other)) {
		t.Errorf("doctor of a daemon started with --port = %d:\n%s%s", code, out, errOut)
	}
}

func TestTopHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"help", "-h"}} {
		code, out, errOut := runCmd(t, "", args...)
		if code != exitOK || !strings.HasPrefix(out, "usage: snugd ") || !strings.Contains(out, "SNUGD_DATA_DIR") || errOut != "" {
			t.Errorf("snugd %q = %d, %q, %q; want the usage on stdout", args, code, out, errOut)
		}
	}
}

// TestCtlHintsAtTheSystemService: a user's ctl that finds no socket, while
// a snugd answers on the system service's port, says to use sudo.
func TestCtlHintsAtTheSystemService(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Snugd-Version", "1.2.0")
		io.WriteString(w, `{"ok":true,"version":"1.2.0"}`)
	}))
	defer srv.Close()
	var errb bytes.Buffer
	c := &ctl{e: env{stderr: &errb}, dataDir: filepath.Join(t.TempDir(), "mine"), name: "snugd ctl status", systemAddr: srv.Listener.Addr().String()}
	if code := c.fail(api.ErrUnreachable); code != exitNo || !strings.Contains(errb.String(), `probably the system service`) || !strings.Contains(errb.String(), `run "sudo snugd ctl status"`) {
		t.Errorf("fail = %d, %q; want the sudo hint", code, errb.String())
	}
	srv.Close()
	errb.Reset()
	if c.fail(api.ErrUnreachable); !strings.Contains(errb.String(), `hint: start it with "snugd start"`) {
		t.Errorf("fail with nothing on the port = %q; want the start hint", errb.String())
	}
}

// FuzzBodyPreview: an app's request body, whatever it holds, previews in
// at most maxLines+1 lines with no control character left raw.
func FuzzBodyPreview(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "plain", "x\x1b[2J\x07", "\u202eabc", `[1,2,{"b":"\u0000"}]`, strings.Repeat("é\n", 40), "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		lines := bodyPreview(body, 5, 100)
		if len(lines) > 6 {
			t.Fatalf("%d lines, want at most 6", len(lines))
		}
		for _, l := range lines {
			for _, r := range l {
				if hidden(r) {
					t.Fatalf("line %q holds %U", l, r)
				}
			}
		}
	})
}
