package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// configFile is the name of snugd's configuration file in the data directory.
const configFile = "config.json"

// maxConfigSize bounds config.json; the whole file is four short values.
const maxConfigSize = 64 << 10

// Port bounds: unprivileged ports only, since the system service runs
// without privileges and a low port would only fail at start.
const (
	defaultPort = 4747
	minPort     = 1024
	maxPort     = 65535
)

// Confirm timeout bounds (seconds). A parked confirm that nobody answers in
// time is denied (NET_CONFIRM_DENIED): a shorter timeout denies sooner and
// never admits anything, so no value of it weakens the confirm gate.
const (
	defaultConfirmTimeout = 120
	minConfirmTimeout     = 5
	maxConfirmTimeout     = 600
)

// transportPolicy chooses between the two transport profiles the spec
// defines.
type transportPolicy string

const (
	// policyDesktop is the explicit desktop transport policy: the LAN
	// device admission and gate 4/5's RFC-1918 stand-down apply. It is the
	// default, since snugd runs on the user's own machine.
	policyDesktop transportPolicy = "desktop"
	// policyBrowser has no LAN admission: behaviour byte-identical to the
	// browser profile.
	policyBrowser transportPolicy = "browser"
)

// config is snugd's configuration: config.json in the data directory, then
// the command-line flags on top.
//
// It is deliberately small, and nothing in it can weaken a gate: it chooses
// where on loopback the API listens, how much snugd logs, which of the two
// spec-defined transport profiles applies, and how long a
// confirmation waits for the user before it is denied. There is no option
// for strictness, SSRF, confirmation, scrubbing, redirects, size limits or the
// API's own checks (P3-X14-43); a key that is not listed here is refused.
type config struct {
	// Listen is the API's address: 127.0.0.1 or ::1, never anything else
	// (DESIGN.md, loopback API security).
	Listen netip.Addr
	// Port is the API's TCP port, minPort to maxPort.
	Port int
	// LogLevel is debug, info, warn or error.
	LogLevel slog.Level
	// TransportPolicy is desktop or browser.
	TransportPolicy transportPolicy
	// ConfirmTimeout is how long a parked confirm waits for the user's
	// decision before it is denied: 5 to 600 seconds. Expiry only ever
	// denies, so a shorter value is stricter, never weaker.
	ConfirmTimeout time.Duration
}

// defaultConfig is the configuration of a data directory without config.json.
func defaultConfig() config {
	return config{
		Listen:          netip.AddrFrom4([4]byte{127, 0, 0, 1}),
		Port:            defaultPort,
		LogLevel:        slog.LevelInfo,
		TransportPolicy: policyDesktop,
		ConfirmTimeout:  defaultConfirmTimeout * time.Second,
	}
}

// listenAddr returns the API's host:port.
func (c config) listenAddr() string {
	return netip.AddrPortFrom(c.Listen, uint16(c.Port)).String()
}

// configFlags are the flags that override config.json. The zero value
// overrides nothing.
type configFlags struct {
	Port int // 0: not given
}

// runFlags are the flags snugd run (and snugd install, which passes them on
// to it) accept: --data-dir and --port.
type runFlags struct {
	dataDir string
	config  configFlags
}

// register adds --data-dir and --port to fs.
func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dataDir, "data-dir", "", "the data directory (default: the per-OS location, see README.md)")
	fs.IntVar(&f.config.Port, "port", 0, fmt.Sprintf("the API's loopback port (default: config.json's, else %d)", defaultPort))
}

// loadConfig reads config.json from dataDir and applies the flags. A missing
// file means the defaults. The file must be a regular file of at most 64 KiB
// that no one but its owner can write, owned by this user or root; its keys
// are exactly those of config (any other key is refused by name) and its
// values are checked against their bounds.
func loadConfig(dataDir string, flags configFlags) (config, error) {
	c := defaultConfig()
	name := filepath.Join(dataDir, configFile)
	data, err := readConfigFile(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return config{}, err
	default:
		if c, err = parseConfig(data); err != nil {
			return config{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	if flags.Port != 0 {
		if err := checkPort(flags.Port); err != nil {
			return config{}, fmt.Errorf("--port: %w", err)
		}
		c.Port = flags.Port
	}
	return c, nil
}

func readConfigFile(name string) ([]byte, error) {
	f, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkConfigFileMode(fi); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxConfigSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxConfigSize)
	}
	return data, nil
}

// configKeys lists the keys config.json may hold. This list is the whole
// configuration surface (P3-X14-43): adding to it needs a reason why the new
// key cannot weaken a gate.
func configKeys() []string {
	return []string{"listen", "port", "logLevel", "transportPolicy", "confirmTimeoutSeconds"}
}

// configSetter returns the decoder of one config.json key.
func configSetter(key string) (func(*config, json.RawMessage) error, bool) {
	switch key {
	case "listen":
		return setListen, true
	case "port":
		return setPort, true
	case "logLevel":
		return setLogLevel, true
	case "transportPolicy":
		return setTransportPolicy, true
	case "confirmTimeoutSeconds":
		return setConfirmTimeout, true
	}
	return nil, false
}

// parseConfig decodes config.json strictly: one JSON object, keys matched
// exactly (no case folding), each at most once, no null values, nothing
// after the object. Keys not given keep their defaults.
func parseConfig(data []byte) (config, error) {
	c := defaultConfig()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return config{}, errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return config{}, fmt.Errorf("invalid JSON: %w", err)
		}
		key := tok.(string) // inside an object, a token before a value is its key
		set, ok := configSetter(key)
		if !ok {
			return config{}, fmt.Errorf("unknown key %q (known: %s)", key, strings.Join(configKeys(), ", "))
		}
		if seen[key] {
			return config{}, fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return config{}, fmt.Errorf("invalid JSON: %w", err)
		}
		if bytes.Equal(raw, []byte("null")) {
			return config{}, fmt.Errorf("%q is null", key)
		}
		if err := set(&c, raw); err != nil {
			return config{}, fmt.Errorf("%q: %w", key, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return config{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return config{}, errors.New("data after the JSON object")
	}
	return c, nil
}

func setListen(c *config, raw json.RawMessage) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return errors.New("must be a string")
	}
	a, err := parseListen(s)
	if err != nil {
		return err
	}
	c.Listen = a
	return nil
}

// parseListen accepts exactly the two loopback addresses the API's Host check
// knows (127.0.0.1 and ::1, in any spelling netip accepts for them). Every
// other address, a zone, an IPv4-mapped form and any host name (which would
// need a lookup) is refused: the API must never listen elsewhere.
func parseListen(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err == nil && a.Zone() == "" && (a == netip.AddrFrom4([4]byte{127, 0, 0, 1}) || a == netip.IPv6Loopback()) {
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("must be 127.0.0.1 or ::1, not %q: the API listens on loopback only", s)
}

func setPort(c *config, raw json.RawMessage) error {
	var n json.Number // which would also take a string holding a number
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') || json.Unmarshal(raw, &n) != nil {
		return errors.New("must be a number")
	}
	p, err := n.Int64()
	if err != nil || p < minPort || p > maxPort {
		return fmt.Errorf("must be an integer from %d to %d, not %s", minPort, maxPort, n)
	}
	c.Port = int(p)
	return nil
}

func setConfirmTimeout(c *config, raw json.RawMessage) error {
	n, ok := parseInteger(raw)
	if !ok || n < minConfirmTimeout || n > maxConfirmTimeout {
		return fmt.Errorf("must be an integer from %d to %d (seconds)", minConfirmTimeout, maxConfirmTimeout)
	}
	c.ConfirmTimeout = time.Duration(n) * time.Second
	return nil
}

// parseInteger reads a JSON number that is a plain integer (no fraction,
// no exponent, no string).
func parseInteger(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	v, err := n.Int64()
	return v, err == nil
}

func checkPort(p int) error {
	if p < minPort || p > maxPort {
		return fmt.Errorf("must be from %d to %d, not %d", minPort, maxPort, p)
	}
	return nil
}

func setLogLevel(c *config, raw json.RawMessage) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return errors.New("must be a string")
	}
	switch s {
	case "debug":
		c.LogLevel = slog.LevelDebug
	case "info":
		c.LogLevel = slog.LevelInfo
	case "warn":
		c.LogLevel = slog.LevelWarn
	case "error":
		c.LogLevel = slog.LevelError
	default:
		return fmt.Errorf("must be debug, info, warn or error, not %q", s)
	}
	return nil
}

func setTransportPolicy(c *config, raw json.RawMessage) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return errors.New("must be a string")
	}
	switch p := transportPolicy(s); p {
	case policyDesktop, policyBrowser:
		c.TransportPolicy = p
		return nil
	}
	return fmt.Errorf("must be desktop or browser, not %q", s)
}

// encode returns c as config.json: every key explicit, so the transport
// policy is written down, indented, newline-terminated.
func (c config) encode() []byte {
	file := struct {
		Listen          string `json:"listen"`
		Port            int    `json:"port"`
		LogLevel        string `json:"logLevel"`
		TransportPolicy string `json:"transportPolicy"`
		ConfirmTimeout  int64  `json:"confirmTimeoutSeconds"`
	}{c.Listen.String(), c.Port, strings.ToLower(c.LogLevel.String()), string(c.TransportPolicy), int64(c.ConfirmTimeout / time.Second)}
	b, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		panic(err) // four strings and two integers always marshal
	}
	return append(b, '\n')
}

// writeDefaultConfig writes config.json with the defaults spelled out (mode
// 0600) unless the file exists. snugd run calls it on a fresh data directory
// so the transport policy in force is written down.
func writeDefaultConfig(dataDir string) error {
	name := filepath.Join(dataDir, configFile)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(defaultConfig().encode()); err != nil {
		f.Close()
		os.Remove(name)
		return err
	}
	return f.Close()
}
