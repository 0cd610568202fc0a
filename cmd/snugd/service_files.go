package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/snug/snugd/packaging"
)

// serviceOptions say what snugd install installs.
type serviceOptions struct {
	user    bool   // a per-user service rather than the system's
	exe     string // the absolute path of the snugd binary the service runs
	dataDir string // absolute
	port    int    // 0: the port of config.json, else the default
	logDir  string // launchd's log directory; "" elsewhere
}

// runArgs returns the arguments the service passes to exe.
func (o serviceOptions) runArgs() []string {
	args := []string{"run", "--data-dir", o.dataDir}
	if o.port != 0 {
		args = append(args, "--port", fmt.Sprint(o.port))
	}
	return args
}

// renderServiceFile returns the service file snugd install writes on goos:
// the shipped file (package packaging) with only the lines that name the
// binary, the data directory and the logs changed. Windows keeps its service
// definition in the registry: "" there.
func renderServiceFile(goos string, o serviceOptions) (string, error) {
	for _, s := range append([]string{o.exe, o.logDir}, o.runArgs()...) {
		// kardianos/service renders the file as a template of its own.
		if strings.Contains(s, "{{") || strings.Contains(s, "}}") || strings.ContainsAny(s, "\x00\n\r") {
			return "", fmt.Errorf("%q cannot appear in a service file", s)
		}
	}
	switch goos {
	case "linux":
		if o.user {
			return renderSystemdUnit(packaging.SystemdUserUnit(), o, false)
		}
		return renderSystemdUnit(packaging.SystemdUnit(), o, true)
	case "darwin":
		return renderLaunchdPlist(packaging.LaunchdPlist(), o)
	}
	return "", nil
}

// isStateDir reports whether dir can be the system unit's data directory: a
// clean path under /var/lib, which systemd creates for the service's
// DynamicUser (StateDirectory=), made of characters that need no quoting.
func isStateDir(dir string) bool {
	rel, ok := strings.CutPrefix(dir, "/var/lib/")
	if !ok || path.Clean(dir) != dir {
		return false
	}
	for _, elem := range strings.Split(rel, "/") {
		if elem == "" || elem == "." || elem == ".." || strings.ContainsFunc(elem, func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '.' || r == '-')
		}) {
			return false
		}
	}
	return true
}

// renderSystemdUnit sets ExecStart in unit and, for the system unit,
// StateDirectory and ReadWritePaths.
func renderSystemdUnit(unit string, o serviceOptions, system bool) (string, error) {
	exec, err := systemdCommandLine(append([]string{o.exe}, o.runArgs()...))
	if err != nil {
		return "", err
	}
	if unit, err = setUnitValue(unit, "ExecStart", exec); err != nil {
		return "", err
	}
	if !system {
		return unit, nil
	}
	if !isStateDir(o.dataDir) {
		return "", fmt.Errorf("the system service keeps its data in a directory under /var/lib that systemd creates for it (StateDirectory=), not in %q; choose one there, or use --user", o.dataDir)
	}
	if unit, err = setUnitValue(unit, "StateDirectory", strings.TrimPrefix(o.dataDir, "/var/lib/")); err != nil {
		return "", err
	}
	return setUnitValue(unit, "ReadWritePaths", o.dataDir)
}

// setUnitValue replaces the value of the one line "key=…" in unit.
func setUnitValue(unit, key, value string) (string, error) {
	lines := strings.SplitAfter(unit, "\n")
	found := -1
	for i, l := range lines {
		if strings.HasPrefix(l, key+"=") {
			if found >= 0 {
				return "", fmt.Errorf("unit sets %s twice", key)
			}
			found = i
		}
	}
	if found < 0 {
		return "", fmt.Errorf("unit has no %s line", key)
	}
	lines[found] = key + "=" + value + "\n"
	return strings.Join(lines, ""), nil
}

// systemdCommandLine quotes argv for ExecStart: a word of plain characters
// stays as it is; any other is double-quoted with \ and " escaped. % and $
// are doubled everywhere, so systemd expands no specifier or variable.
func systemdCommandLine(argv []string) (string, error) {
	if len(argv) == 0 || !strings.HasPrefix(argv[0], "/") {
		return "", errors.New("the service needs the absolute path of snugd")
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		a = strings.NewReplacer("%", "%%", "$", "$$").Replace(a)
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return !isPlainUnitRune(r) }) {
			a = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(a) + `"`
		}
		words[i] = a
	}
	return strings.Join(words, " "), nil
}

func isPlainUnitRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("/._-+,:=@%$", r)
}

// renderLaunchdPlist sets ProgramArguments, StandardOutPath and
// StandardErrorPath in plist.
func renderLaunchdPlist(plist string, o serviceOptions) (string, error) {
	if !strings.HasPrefix(o.exe, "/") {
		return "", errors.New("the service needs the absolute path of snugd")
	}
	if o.logDir == "" {
		return "", errors.New("launchd needs a log directory")
	}
	items := make([]string, 0, 4)
	for _, a := range append([]string{o.exe}, o.runArgs()...) {
		items = append(items, "\t\t<string>"+xmlEscape(a)+"</string>\n")
	}
	plist, err := setPlistValue(plist, "ProgramArguments", "<array>\n"+strings.Join(items, "")+"\t</array>")
	if err != nil {
		return "", err
	}
	logFile := "<string>" + xmlEscape(path.Join(o.logDir, "snugd.log")) + "</string>"
	if plist, err = setPlistValue(plist, "StandardOutPath", logFile); err != nil {
		return "", err
	}
	return setPlistValue(plist, "StandardErrorPath", logFile)
}

// setPlistValue replaces the value element (a <string> or an <array>) that
// follows the one <key>key</key> of plist.
func setPlistValue(plist, key, value string) (string, error) {
	k := "<key>" + key + "</key>"
	if strings.Count(plist, k) != 1 {
		return "", fmt.Errorf("plist needs exactly one %s", k)
	}
	at := strings.Index(plist, k) + len(k)
	rest := plist[at:]
	start := len(rest) - len(strings.TrimLeft(rest, " \t\n"))
	var end string
	switch {
	case strings.HasPrefix(rest[start:], "<string>"):
		end = "</string>"
	case strings.HasPrefix(rest[start:], "<array>"):
		end = "</array>"
	default:
		return "", fmt.Errorf("plist: %s is neither a string nor an array", key)
	}
	n := strings.Index(rest[start:], end)
	if n < 0 {
		return "", fmt.Errorf("plist: %s is not closed", key)
	}
	return plist[:at] + rest[:start] + value + rest[start+n+len(end):], nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
