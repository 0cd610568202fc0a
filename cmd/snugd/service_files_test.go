package main

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/packaging"
)

// unitFile is a parsed systemd unit: section → key → values in order.
type unitFile map[string]map[string][]string

// parseUnit parses systemd's unit syntax (comments, sections, key=value;
// no continuation lines, which the shipped units do not use).
func parseUnit(t *testing.T, text string) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		case section == "":
			t.Fatalf("unit line %d: %q before any section", n, line)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || strings.HasSuffix(line, `\`) {
				t.Fatalf("unit line %d: %q is not key=value", n, line)
			}
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// one returns the single value of key in section.
func (u unitFile) one(t *testing.T, section, key string) string {
	t.Helper()
	vs := u[section][key]
	if len(vs) != 1 {
		t.Errorf("[%s] %s = %q, want exactly one value", section, key, vs)
		return ""
	}
	return vs[0]
}

func parseSeconds(t *testing.T, v string) time.Duration {
	t.Helper()
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("duration %q: %v", v, err)
	}
	return d
}

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "packaging", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEmbeddedFilesAreTheShippedOnes(t *testing.T) {
	for name, embedded := range map[string]string{
		"systemd/snugd.service":      packaging.SystemdUnit(),
		"systemd/snugd-user.service": packaging.SystemdUserUnit(),
		"launchd/snugd.plist":        packaging.LaunchdPlist(),
	} {
		if embedded != readRepoFile(t, name) {
			t.Errorf("embedded %s differs from packaging/%s", name, name)
		}
	}
}

// checkServiceBasics checks what both units must say about restarts and
// shutdown.
func checkServiceBasics(t *testing.T, u unitFile) {
	t.Helper()
	if got := u.one(t, "Service", "Type"); got != "exec" && got != "simple" {
		t.Errorf("Type = %q, want exec or simple", got)
	}
	if got := u.one(t, "Service", "Restart"); got != "on-failure" {
		t.Errorf("Restart = %q, want on-failure", got)
	}
	if d := parseSeconds(t, u.one(t, "Service", "RestartSec")); d < time.Second || d > 30*time.Second {
		t.Errorf("RestartSec = %v, want a few seconds", d)
	}
	if d := parseSeconds(t, u.one(t, "Unit", "StartLimitIntervalSec")); d <= 0 {
		t.Errorf("StartLimitIntervalSec = %v, want a bound", d)
	}
	if n, err := strconv.Atoi(u.one(t, "Unit", "StartLimitBurst")); err != nil || n < 1 || n > 10 {
		t.Errorf("StartLimitBurst = %d, %v, want a small bound", n, err)
	}
	if got := u.one(t, "Service", "KillSignal"); got != "SIGTERM" {
		t.Errorf("KillSignal = %q, want SIGTERM", got)
	}
	if d := parseSeconds(t, u.one(t, "Service", "TimeoutStopSec")); d < shutdownBound+10*time.Second {
		t.Errorf("TimeoutStopSec = %v, want more than the %v drain bound plus headroom", d, shutdownBound)
	}
	if got := u.one(t, "Service", "UMask"); got != "0077" {
		t.Errorf("UMask = %q, want 0077", got)
	}
	if got := u.one(t, "Service", "NoNewPrivileges"); got != "true" {
		t.Errorf("NoNewPrivileges = %q, want true", got)
	}
	if _, ok := u["Service"]["EnvironmentFile"]; ok {
		t.Error("the unit reads an EnvironmentFile: no secret or setting goes in the environment")
	}
}

func TestSystemdUnitHardening(t *testing.T) {
	u := parseUnit(t, packaging.SystemdUnit())
	checkServiceBasics(t, u)
	want := map[string]string{
		"ExecStart":             "/usr/bin/snugd run --data-dir /var/lib/snugd",
		"ProtectSystem":         "strict",
		"ProtectHome":           "true",
		"PrivateTmp":            "true",
		"StateDirectory":        "snugd",
		"StateDirectoryMode":    "0700",
		"ReadWritePaths":        "/var/lib/snugd",
		"DynamicUser":           "yes",
		"User":                  "snugd",
		"KillMode":              "mixed",
		"RestrictSUIDSGID":      "true",
		"CapabilityBoundingSet": "",
	}
	for k, v := range want {
		if got := u.one(t, "Service", k); got != v {
			t.Errorf("[Service] %s = %q, want %q", k, got, v)
		}
	}
	if got := u.one(t, "Install", "WantedBy"); got != "multi-user.target" {
		t.Errorf("WantedBy = %q, want multi-user.target", got)
	}
	for _, k := range []string{"AmbientCapabilities", "SystemCallFilter", "RestrictAddressFamilies"} {
		if len(u["Service"][k]) == 0 {
			t.Errorf("[Service] %s missing", k)
		}
	}
}

func TestSystemdUserUnit(t *testing.T) {
	u := parseUnit(t, packaging.SystemdUserUnit())
	checkServiceBasics(t, u)
	if got := u.one(t, "Service", "ExecStart"); got != "/usr/bin/snugd run" {
		t.Errorf("ExecStart = %q, want /usr/bin/snugd run (the per-user default data directory)", got)
	}
	if got := u.one(t, "Install", "WantedBy"); got != "default.target" {
		t.Errorf("WantedBy = %q, want default.target", got)
	}
	for _, k := range []string{"User", "DynamicUser", "StateDirectory"} {
		if _, ok := u["Service"][k]; ok {
			t.Errorf("the user unit sets %s, which a user manager cannot honour", k)
		}
	}
}

func TestRenderSystemdUnit(t *testing.T) {
	// The shipped file is what snugd install writes for the packaged binary.
	canonical := serviceOptions{exe: "/usr/bin/snugd", dataDir: "/var/lib/snugd"}
	got, err := renderServiceFile("linux", canonical)
	if err != nil || got != packaging.SystemdUnit() {
		t.Fatalf("renderServiceFile(linux, packaged) = %v, want the shipped unit byte for byte\n%s", err, got)
	}

	o := serviceOptions{exe: "/opt/snug tools/snugd", dataDir: "/var/lib/snug/d-1", port: 5000}
	got, err = renderServiceFile("linux", o)
	if err != nil {
		t.Fatalf("renderServiceFile(linux, %+v) error: %v", o, err)
	}
	u := parseUnit(t, got)
	for k, v := range map[string]string{
		"ExecStart":      `"/opt/snug tools/snugd" run --data-dir /var/lib/snug/d-1 --port 5000`,
		"StateDirectory": "snug/d-1",
		"ReadWritePaths": "/var/lib/snug/d-1",
	} {
		if got := u.one(t, "Service", k); got != v {
			t.Errorf("rendered %s = %q, want %q", k, got, v)
		}
	}
	// Nothing else changed.
	shipped := strings.Split(packaging.SystemdUnit(), "\n")
	rendered := strings.Split(got, "\n")
	if len(shipped) != len(rendered) {
		t.Fatalf("rendered unit has %d lines, shipped %d", len(rendered), len(shipped))
	}
	for i := range shipped {
		if shipped[i] != rendered[i] && !strings.HasPrefix(shipped[i], "ExecStart=") &&
			!strings.HasPrefix(shipped[i], "StateDirectory=") && !strings.HasPrefix(shipped[i], "ReadWritePaths=") {
			t.Errorf("line %d changed: %q → %q", i+1, shipped[i], rendered[i])
		}
	}

	for _, dir := range []string{"/srv/snugd", "/var/lib", "/var/lib/", "/var/lib/../etc", "/var/lib/a/../b", "/var/lib/snug d", "/var/lib/snugd/", "/var/lib//snugd", "/var/lib/$x", "/var/lib/%h", "/var/libsnugd"} {
		if _, err := renderServiceFile("linux", serviceOptions{exe: "/usr/bin/snugd", dataDir: dir}); err == nil {
			t.Errorf("renderServiceFile(linux system, data dir %q) = nil error, want it refused", dir)
		}
	}
	if _, err := renderServiceFile("linux", serviceOptions{exe: "snugd", dataDir: "/var/lib/snugd"}); err == nil {
		t.Error("renderServiceFile(relative binary) = nil error, want it refused")
	}
	for _, bad := range []string{"/x/{{Path}}", "/x/}}", "/x\n[Service]\nExecStartPre=/bin/sh"} {
		if _, err := renderServiceFile("linux", serviceOptions{user: true, exe: "/usr/bin/snugd", dataDir: bad}); err == nil {
			t.Errorf("renderServiceFile(data dir %q) = nil error, want it refused", bad)
		}
	}

	user, err := renderServiceFile("linux", serviceOptions{user: true, exe: "/home/ada/bin/snugd", dataDir: "/home/ada/.local/share/snugd"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := parseUnit(t, user).one(t, "Service", "ExecStart"), "/home/ada/bin/snugd run --data-dir /home/ada/.local/share/snugd"; got != want {
		t.Errorf("user ExecStart = %q, want %q", got, want)
	}
}

func TestSystemdCommandLine(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"/usr/bin/snugd", "run"}, "/usr/bin/snugd run"},
		{[]string{"/a b/snugd", "--data-dir", "/c d"}, `"/a b/snugd" --data-dir "/c d"`},
		{[]string{"/usr/bin/snugd", "/home/%u/$HOME"}, `/usr/bin/snugd /home/%%u/$$HOME`},
		{[]string{"/usr/bin/snugd", `/a"b\c`}, `/usr/bin/snugd "/a\"b\\c"`},
		{[]string{"/usr/bin/snugd", ";", ""}, `/usr/bin/snugd ";" ""`},
		{[]string{"/usr/bin/snugd", "/é"}, `/usr/bin/snugd "/é"`},
	}
	for _, tc := range tests {
		got, err := systemdCommandLine(tc.argv)
		if err != nil || got != tc.want {
			t.Errorf("systemdCommandLine(%q) = %q, %v, want %q", tc.argv, got, err, tc.want)
		}
	}
}

// plistValue is a decoded plist value: string, int, bool, []any or map[string]any.
type plistValue = any

// parsePlist decodes an XML property list with encoding/xml.
func parsePlist(t *testing.T, doc string) map[string]plistValue {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	var root struct {
		XMLName xml.Name `xml:"plist"`
		Version string   `xml:"version,attr"`
		Dict    rawNode  `xml:"dict"`
	}
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("plist is not valid XML: %v", err)
	}
	if root.Version != "1.0" {
		t.Errorf("plist version = %q, want 1.0", root.Version)
	}
	v, err := root.Dict.value("dict")
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]plistValue)
}

type rawNode struct {
	Nodes []rawElem `xml:",any"`
}

type rawElem struct {
	XMLName xml.Name
	Text    string    `xml:",chardata"`
	Nodes   []rawElem `xml:",any"`
}

func (n rawNode) value(kind string) (plistValue, error) {
	return rawElem{XMLName: xml.Name{Local: kind}, Nodes: n.Nodes}.value()
}

func (e rawElem) value() (plistValue, error) {
	switch e.XMLName.Local {
	case "string":
		return e.Text, nil
	case "integer":
		return strconv.Atoi(strings.TrimSpace(e.Text))
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "array":
		var a []any
		for _, c := range e.Nodes {
			v, err := c.value()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		return a, nil
	case "dict":
		m := map[string]plistValue{}
		for i := 0; i < len(e.Nodes); i += 2 {
			if e.Nodes[i].XMLName.Local != "key" || i+1 == len(e.Nodes) {
				return nil, fmt.Errorf("dict entry %d is not a key and a value", i/2)
			}
			k := e.Nodes[i].Text
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("key %q twice", k)
			}
			v, err := e.Nodes[i+1].value()
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, nil
	}
	return nil, fmt.Errorf("unknown plist element <%s>", e.XMLName.Local)
}

func TestLaunchdPlist(t *testing.T) {
	p := parsePlist(t, packaging.LaunchdPlist())
	if p["Label"] != serviceName {
		t.Errorf("Label = %v, want %s (kardianos/service finds the job by its name)", p["Label"], serviceName)
	}
	args, _ := p["ProgramArguments"].([]any)
	if want := []any{"/usr/local/bin/snugd", "run", "--data-dir", "/Library/Application Support/snugd"}; fmt.Sprint(args) != fmt.Sprint(want) {
		t.Errorf("ProgramArguments = %v, want %v", args, want)
	}
	if keep, _ := p["KeepAlive"].(map[string]plistValue); keep["SuccessfulExit"] != false {
		t.Errorf("KeepAlive = %v, want a restart after a crash only ({SuccessfulExit: false})", p["KeepAlive"])
	}
	if n, _ := p["ThrottleInterval"].(int); n < 5 || n > 60 {
		t.Errorf("ThrottleInterval = %v, want a few seconds", p["ThrottleInterval"])
	}
	if n, _ := p["ExitTimeOut"].(int); time.Duration(n)*time.Second < shutdownBound+10*time.Second {
		t.Errorf("ExitTimeOut = %v, want more than the %v drain bound plus headroom", p["ExitTimeOut"], shutdownBound)
	}
	if p["Umask"] != 0o077 {
		t.Errorf("Umask = %v, want %d (0077)", p["Umask"], 0o077)
	}
	if p["RunAtLoad"] != true {
		t.Errorf("RunAtLoad = %v, want true", p["RunAtLoad"])
	}
	for _, k := range []string{"StandardOutPath", "StandardErrorPath"} {
		if p[k] != "/Library/Logs/snugd/snugd.log" {
			t.Errorf("%s = %v, want /Library/Logs/snugd/snugd.log", k, p[k])
		}
	}
	for _, k := range []string{"EnvironmentVariables", "UserName", "Sockets"} {
		if _, ok := p[k]; ok {
			t.Errorf("the plist sets %s", k)
		}
	}
}

func TestRenderLaunchdPlist(t *testing.T) {
	canonical := serviceOptions{exe: "/usr/local/bin/snugd", dataDir: "/Library/Application Support/snugd", logDir: "/Library/Logs/snugd"}
	got, err := renderServiceFile("darwin", canonical)
	if err != nil || got != packaging.LaunchdPlist() {
		t.Fatalf("renderServiceFile(darwin, packaged) = %v, want the shipped plist byte for byte\n%s", err, got)
	}

	o := serviceOptions{user: true, exe: "/Users/a&b/bin/snugd", dataDir: "/Users/a&b/Library/Application Support/<snugd>", logDir: "/Users/a&b/Library/Logs/snugd", port: 5000}
	got, err = renderServiceFile("darwin", o)
	if err != nil {
		t.Fatal(err)
	}
	p := parsePlist(t, got)
	want := append([]string{o.exe}, o.runArgs()...)
	if fmt.Sprint(p["ProgramArguments"]) != fmt.Sprint(want) {
		t.Errorf("ProgramArguments = %v, want %v", p["ProgramArguments"], want)
	}
	if p["StandardErrorPath"] != "/Users/a&b/Library/Logs/snugd/snugd.log" {
		t.Errorf("StandardErrorPath = %v", p["StandardErrorPath"])
	}
	shippedKeys := parsePlist(t, packaging.LaunchdPlist())
	for k, v := range shippedKeys {
		if k != "ProgramArguments" && k != "StandardOutPath" && k != "StandardErrorPath" && fmt.Sprint(p[k]) != fmt.Sprint(v) {
			t.Errorf("rendered %s = %v, shipped %v: only the paths may change", k, p[k], v)
		}
	}
	if _, err := renderServiceFile("darwin", serviceOptions{exe: "/usr/local/bin/snugd", dataDir: "/x"}); err == nil {
		t.Error("renderServiceFile(darwin, no log dir) = nil error, want one")
	}
}
