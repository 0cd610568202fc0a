package main

import (
	"bytes"
	"flag"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	name := filepath.Join(dir, configFile)
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, mode); err != nil { // WriteFile's mode passes the umask
		t.Fatal(err)
	}
	return dir
}

func TestLoadConfigDefaults(t *testing.T) {
	c, err := loadConfig(t.TempDir(), configFlags{})
	if err != nil {
		t.Fatalf("loadConfig(no file) error: %v", err)
	}
	if c != defaultConfig() {
		t.Errorf("loadConfig(no file) = %+v, want %+v", c, defaultConfig())
	}
	if got, want := c.listenAddr(), "127.0.0.1:4747"; got != want {
		t.Errorf("listenAddr() = %q, want %q", got, want)
	}
	if c.TransportPolicy != policyDesktop || c.LogLevel != slog.LevelInfo {
		t.Errorf("defaults = %+v, want desktop policy and info level", c)
	}
}

func TestParseConfig(t *testing.T) {
	v6 := defaultConfig()
	v6.Listen = netip.IPv6Loopback()
	full := config{Listen: netip.IPv6Loopback(), Port: 5000, LogLevel: slog.LevelDebug, TransportPolicy: policyBrowser, ConfirmTimeout: 30 * time.Second}
	withTimeout := func(s int) config { c := defaultConfig(); c.ConfirmTimeout = time.Duration(s) * time.Second; return c }
	withPort := func(p int) config { c := defaultConfig(); c.Port = p; return c }
	withLevel := func(l slog.Level) config { c := defaultConfig(); c.LogLevel = l; return c }
	tests := []struct {
		name    string
		in      string
		want    config
		wantErr string // a substring of the error; "" for none
	}{
		{name: "empty object", in: `{}`, want: defaultConfig()},
		{name: "every key", in: `{"listen":"::1","port":5000,"logLevel":"debug","transportPolicy":"browser","confirmTimeoutSeconds":30}`, want: full},
		{name: "shortest confirm timeout", in: `{"confirmTimeoutSeconds":5}`, want: withTimeout(5)},
		{name: "longest confirm timeout", in: `{"confirmTimeoutSeconds":600}`, want: withTimeout(600)},
		{name: "whitespace around", in: " \n{ \"port\" : 1024 }\n\n", want: withPort(1024)},
		{name: "highest port", in: `{"port":65535}`, want: withPort(65535)},
		{name: "ipv6 loopback long form", in: `{"listen":"0:0:0:0:0:0:0:1"}`, want: v6},
		{name: "warn", in: `{"logLevel":"warn"}`, want: withLevel(slog.LevelWarn)},
		{name: "error", in: `{"logLevel":"error"}`, want: withLevel(slog.LevelError)},
		{name: "explicit desktop", in: `{"transportPolicy":"desktop"}`, want: defaultConfig()},

		{name: "unknown key", in: `{"port":4747,"verbose":true}`, wantErr: `unknown key "verbose"`},
		{name: "key in another case", in: `{"Port":4747}`, wantErr: `unknown key "Port"`},
		{name: "duplicate key", in: `{"port":4747,"port":5000}`, wantErr: `"port" appears twice`},
		{name: "duplicate listen hides a bad one", in: `{"listen":"0.0.0.0","listen":"127.0.0.1"}`, wantErr: "must be 127.0.0.1 or ::1"},
		{name: "null", in: `{"port":null}`, wantErr: "null"},
		{name: "array", in: `[]`, wantErr: "not a JSON object"},
		{name: "empty file", in: ``, wantErr: "not a JSON object"},
		{name: "two objects", in: `{}{}`, wantErr: "after the JSON object"},
		{name: "trailing garbage", in: `{} x`, wantErr: "after the JSON object"},
		{name: "truncated", in: `{"port":4747`, wantErr: "invalid JSON"},
		{name: "port 1023", in: `{"port":1023}`, wantErr: "from 1024 to 65535"},
		{name: "port 65536", in: `{"port":65536}`, wantErr: "from 1024 to 65535"},
		{name: "port 0", in: `{"port":0}`, wantErr: "from 1024 to 65535"},
		{name: "port negative", in: `{"port":-4747}`, wantErr: "from 1024 to 65535"},
		{name: "port fraction", in: `{"port":4747.5}`, wantErr: "integer"},
		{name: "port exponent", in: `{"port":4.747e3}`, wantErr: "integer"},
		{name: "port huge", in: `{"port":18446744073709551617}`, wantErr: "integer"},
		{name: "port string", in: `{"port":"4747"}`, wantErr: "must be a number"},
		{name: "level unknown", in: `{"logLevel":"trace"}`, wantErr: "debug, info, warn or error"},
		{name: "level upper case", in: `{"logLevel":"INFO"}`, wantErr: "debug, info, warn or error"},
		{name: "level number", in: `{"logLevel":-4}`, wantErr: "must be a string"},
		{name: "policy unknown", in: `{"transportPolicy":"none"}`, wantErr: "desktop or browser"},
		{name: "policy upper case", in: `{"transportPolicy":"Desktop"}`, wantErr: "desktop or browser"},
		{name: "policy empty", in: `{"transportPolicy":""}`, wantErr: "desktop or browser"},
		{name: "bom", in: "\ufeff{}", wantErr: "not a JSON object"},
		{name: "confirm timeout 4", in: `{"confirmTimeoutSeconds":4}`, wantErr: "from 5 to 600"},
		{name: "confirm timeout 601", in: `{"confirmTimeoutSeconds":601}`, wantErr: "from 5 to 600"},
		{name: "confirm timeout 0", in: `{"confirmTimeoutSeconds":0}`, wantErr: "from 5 to 600"},
		{name: "confirm timeout negative", in: `{"confirmTimeoutSeconds":-1}`, wantErr: "from 5 to 600"},
		{name: "confirm timeout fraction", in: `{"confirmTimeoutSeconds":5.5}`, wantErr: "integer"},
		{name: "confirm timeout string", in: `{"confirmTimeoutSeconds":"60"}`, wantErr: "integer"},
		{name: "confirm timeout in snake case", in: `{"confirm_timeout_seconds":60}`, wantErr: "unknown key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseConfig([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseConfig(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseConfig(%q) error: %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("parseConfig(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

// TestConfigListenLoopbackOnly tries to make the API listen anywhere but
// loopback through config.json.
func TestConfigListenLoopbackOnly(t *testing.T) {
	refused := []string{
		"0.0.0.0", "::", "192.168.1.1", "10.0.0.1", "100.64.0.1", "169.254.169.254",
		"127.0.0.2", "127.1", "2130706433", "0x7f000001", "127.000.000.001",
		"::ffff:127.0.0.1", "::ffff:7f00:1", "::1%lo", "fe80::1%eth0", "fe80::1",
		"localhost", "example.com", "snugd.local", "[::1]", "127.0.0.1:4747", " 127.0.0.1", "",
	}
	for _, addr := range refused {
		t.Run(addr, func(t *testing.T) {
			in := `{"listen":"` + addr + `"}`
			if c, err := parseConfig([]byte(in)); err == nil {
				t.Fatalf("parseConfig(%q) = %+v, want an error", in, c)
			} else if !strings.Contains(err.Error(), "loopback only") {
				t.Errorf("parseConfig(%q) error = %v, want it to say loopback only", in, err)
			}
		})
	}
	for _, addr := range []string{"127.0.0.1", "::1"} {
		c, err := parseConfig([]byte(`{"listen":"` + addr + `"}`))
		if err != nil || c.Listen.String() != addr {
			t.Errorf("parseConfig(listen %q) = %v, %v, want it accepted", addr, c.Listen, err)
		}
	}
}

// TestConfigHasNoGateKnob proves the configuration cannot relax a gate or
// widen the schema: its whole surface is four audited keys, none of them about
// a gate or a requirement kind, and every knob an attacker (or a helpful
// admin) might try is refused by name.
//
// conformance: P3-X14-43, P3-C12.5-33
func TestConfigHasNoGateKnob(t *testing.T) {
	// Each key, and why it cannot weaken a gate.
	audited := map[string]string{
		"listen":          "loopback addresses only (127.0.0.1, ::1)",
		"port":            "a TCP port on that loopback address",
		"logLevel":        "verbosity; logs never carry credentials at any level",
		"transportPolicy": "one of the two defined transport profiles: desktop or browser",
		// An unanswered confirm is denied on expiry: a shorter timeout only
		// denies sooner, and the longest is bounded (600 s).
		"confirmTimeoutSeconds": "how soon an unanswered confirm is denied, 5 to 600 s",
	}
	keys := configKeys()
	if got, want := slices.Sorted(slices.Values(keys)), slices.Sorted(func(yield func(string) bool) {
		for k := range audited {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, want) {
		t.Fatalf("configKeys() = %v, want the audited %v", got, want)
	}
	for _, k := range keys {
		if _, ok := configSetter(k); !ok {
			t.Errorf("configSetter(%q) missing", k)
		}
	}
	var fields []string
	for f := range reflect.TypeFor[config]().Fields() {
		fields = append(fields, f.Name)
	}
	if want := []string{"Listen", "Port", "LogLevel", "TransportPolicy", "ConfirmTimeout"}; !slices.Equal(fields, want) {
		t.Errorf("config fields = %v, want %v (a new field needs an audited key)", fields, want)
	}

	knobs := []string{
		"strict", "strictness", "strictInjection", "ssrf", "ssrfGuard", "allowPrivateNetworks",
		"allowLoopback", "allowHTTP", "lanAdmission", "disableConfirm", "confirm", "autoApprove",
		"scrub", "followRedirects", "maxBodyBytes", "maxResponseBytes", "allowedHosts",
		"allowedOrigins", "cors", "insecure", "insecureSkipVerify", "proxy", "gates",
		"listenAll", "bind", "host", "tcp", "auth", "token", "hostToken", "transport",
		"policy", "profile", "kinds", "extraKinds", "allowKinds", "helpers", "templateHelpers",
	}
	for _, k := range knobs {
		in := `{"` + k + `":true}`
		if _, err := parseConfig([]byte(in)); err == nil || !strings.Contains(err.Error(), `unknown key "`+k+`"`) {
			t.Errorf("parseConfig(%q) error = %v, want unknown key %q", in, err, k)
		}
	}
	for _, p := range []string{"none", "off", "permissive", "lan", "all", "desktop ", "browser,desktop"} {
		in := `{"transportPolicy":"` + p + `"}`
		if _, err := parseConfig([]byte(in)); err == nil {
			t.Errorf("parseConfig(%q) accepted a third transport policy", in)
		}
	}
}

func TestLoadConfigFile(t *testing.T) {
	dir := writeConfig(t, `{"port":5000,"logLevel":"warn"}`, 0o644)
	c, err := loadConfig(dir, configFlags{})
	if err != nil {
		t.Fatalf("loadConfig error: %v", err)
	}
	if c.Port != 5000 || c.LogLevel != slog.LevelWarn {
		t.Errorf("loadConfig = %+v, want port 5000, level warn", c)
	}
	c, err = loadConfig(dir, configFlags{Port: 6000})
	if err != nil || c.Port != 6000 {
		t.Errorf("loadConfig(--port 6000) = %+v, %v, want port 6000", c, err)
	}
	for _, p := range []int{-1, 80, 1023, 65536} {
		if _, err := loadConfig(dir, configFlags{Port: p}); err == nil || !strings.Contains(err.Error(), "--port") {
			t.Errorf("loadConfig(--port %d) error = %v, want a --port error", p, err)
		}
	}
	if _, err := loadConfig(writeConfig(t, `{"port":4747,"x":1}`, 0o600), configFlags{}); err == nil || !strings.Contains(err.Error(), `unknown key "x"`) {
		t.Errorf("loadConfig(unknown key) error = %v, want it named", err)
	}
}

func TestWriteDefaultConfig(t *testing.T) {
	dir := t.TempDir()
	if err := writeDefaultConfig(dir); err != nil {
		t.Fatalf("writeDefaultConfig error: %v", err)
	}
	name := filepath.Join(dir, configFile)
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("config.json mode = %04o, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(name)
	if !bytes.Contains(data, []byte(`"transportPolicy": "desktop"`)) {
		t.Errorf("config.json = %s, want the transport policy written down", data)
	}
	if c, err := loadConfig(dir, configFlags{}); err != nil || c != defaultConfig() {
		t.Errorf("loadConfig(written defaults) = %+v, %v, want the defaults", c, err)
	}

	// An existing file is the admin's: left alone.
	custom := []byte(`{"port":5000}`)
	if err := os.WriteFile(name, custom, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeDefaultConfig(dir); err != nil {
		t.Fatalf("writeDefaultConfig(existing) error: %v", err)
	}
	if data, _ := os.ReadFile(name); !bytes.Equal(data, custom) {
		t.Errorf("writeDefaultConfig replaced an existing config.json with %s", data)
	}
}

func TestConfigEncodeRoundTrip(t *testing.T) {
	for _, c := range []config{
		defaultConfig(),
		{Listen: netip.IPv6Loopback(), Port: 65535, LogLevel: slog.LevelError, TransportPolicy: policyBrowser, ConfirmTimeout: 600 * time.Second},
		{Listen: netip.AddrFrom4([4]byte{127, 0, 0, 1}), Port: 1024, LogLevel: slog.LevelDebug, TransportPolicy: policyDesktop, ConfirmTimeout: 120 * time.Second},
		{Listen: netip.AddrFrom4([4]byte{127, 0, 0, 1}), Port: 4747, LogLevel: slog.LevelWarn, TransportPolicy: policyDesktop, ConfirmTimeout: 5 * time.Second},
	} {
		got, err := parseConfig(c.encode())
		if err != nil || got != c {
			t.Errorf("parseConfig(encode(%+v)) = %+v, %v, want it back", c, got, err)
		}
	}
}

// FuzzParseConfig: whatever config.json holds, a parsed configuration listens
// on loopback only, within the port bounds, with a known level and one of the
// two transport policies, and survives encoding unchanged.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"listen":"::1","port":5000,"logLevel":"debug","transportPolicy":"browser"}`,
		`{"listen":"0.0.0.0"}`, `{"port":4747,"port":1}`, `{"Port":1}`, `{"port":1e3}`, `[]`, `{}{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseConfig(data)
		if err != nil {
			return
		}
		if c.Listen != netip.AddrFrom4([4]byte{127, 0, 0, 1}) && c.Listen != netip.IPv6Loopback() {
			t.Fatalf("parseConfig(%q) listens on %v", data, c.Listen)
		}
		if c.Port < minPort || c.Port > maxPort {
			t.Fatalf("parseConfig(%q) port %d out of bounds", data, c.Port)
		}
		if c.TransportPolicy != policyDesktop && c.TransportPolicy != policyBrowser {
			t.Fatalf("parseConfig(%q) policy %q", data, c.TransportPolicy)
		}
		if c.ConfirmTimeout < minConfirmTimeout*time.Second || c.ConfirmTimeout > maxConfirmTimeout*time.Second {
			t.Fatalf("parseConfig(%q) confirm timeout %v out of bounds", data, c.ConfirmTimeout)
		}
		switch c.LogLevel {
		case slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError:
		default:
			t.Fatalf("parseConfig(%q) level %v", data, c.LogLevel)
		}
		if back, err := parseConfig(c.encode()); err != nil || back != c {
			t.Fatalf("parseConfig(encode(%+v)) = %+v, %v", c, back, err)
		}
	})
}

func TestRunFlags(t *testing.T) {
	var rf runFlags
	fs := flag.NewFlagSet("snugd run", flag.ContinueOnError)
	rf.register(fs)
	dir := writeConfig(t, `{"port":5000}`, 0o600)
	if err := fs.Parse([]string{"--data-dir", dir, "--port", "6000"}); err != nil {
		t.Fatal(err)
	}
	if rf.dataDir != dir || rf.config.Port != 6000 {
		t.Errorf("runFlags = %+v, want data dir %s, port 6000", rf, dir)
	}
	if c, err := loadConfig(rf.dataDir, rf.config); err != nil || c.Port != 6000 {
		t.Errorf("loadConfig(flags) = %+v, %v, want the flag's port", c, err)
	}
}
