package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/linkdevice"
)

// The files of a data directory, as daemon/internal/store and api name
// them. doctor only looks at them; it never creates or changes one.
const (
	dbFileName     = "snugd.db"
	lockFileName   = "snugd.lock"
	secretsKeyName = "secrets.key"
)

// A check is one line of snugd ctl doctor. Detail is secret-free by
// construction: modes, owners, process ids, versions, addresses and fixed
// sentences, never a value read from the store or a request.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok | warn | fail | skip
	Detail string `json:"detail"`
}

// doctorReport is snugd ctl doctor --json.
type doctorReport struct {
	OK     bool    `json:"ok"` // no check failed
	Checks []check `json:"checks"`
}

type doctor struct {
	c      *ctl
	checks []check
	// Learned along the way.
	status    *api.StatusResponse
	daemonPID int // from the socket's peer credentials; 0 when unknown
}

func (d *doctor) add(name, status, format string, a ...any) {
	d.checks = append(d.checks, check{Name: name, Status: status, Detail: fmt.Sprintf(format, a...)})
}

// ctlDoctor is snugd ctl doctor [--json]: what the administrator checks when
// something is wrong. It reads and asks; it creates nothing and changes
// nothing, and prints no credential. Exit 1 when any check fails.
func ctlDoctor(ctx context.Context, c *ctl, args []string) int {
	fs := c.flags("doctor [--json]")
	if _, code, ok := c.args(fs, args); !ok {
		return code
	}
	d := &doctor{c: c}
	if d.checkDataDir() {
		d.checkFiles()
		d.checkDaemon(ctx)
		d.checkLock()
		d.checkDatabase(ctx)
		d.checkDisk()
		d.checkPort(ctx)
		d.checkRefusals(ctx)
	}
	d.checkHelpers()
	d.checkClock(ctx)
	rep := doctorReport{OK: true, Checks: d.checks}
	for _, ch := range d.checks {
		if ch.Status == "fail" {
			rep.OK = false
		}
	}
	if c.json {
		if code := c.printJSON(rep); code != exitOK {
			return code
		}
	} else {
		for _, ch := range d.checks {
			c.out("%-5s %-16s %s", strings.ToUpper(ch.Status), ch.Name, ch.Detail)
		}
		if rep.OK {
			c.out("\nno problems found")
		}
	}
	if !rep.OK {
		return exitNo
	}
	return exitOK
}

// checkDataDir reports whether the data directory exists (the other file
// checks need it).
func (d *doctor) checkDataDir() bool {
	dir := d.c.dataDir
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.add("data directory", "fail", "%s does not exist: snugd has not run with this data directory (pass the --data-dir it uses)", dir)
		return false
	case err != nil:
		d.add("data directory", "fail", "%s: %v", dir, err)
		return false
	case !fi.IsDir():
		d.add("data directory", "fail", "%s is not a directory", dir)
		return false
	}
	owner := fileOwner(fi)
	switch {
	case runtime.GOOS == "windows":
		d.add("data directory", "ok", "%s (its ACL decides who may enter; see packaging/windows.md)", dir)
	case fi.Mode().Perm() != 0o700:
		d.add("data directory", "fail", "%s has mode %04o; it must be 0700 (chmod 700 %s)", dir, fi.Mode().Perm(), dir)
	default:
		d.add("data directory", "ok", "%s, mode 0700%s", dir, owner)
	}
	return true
}

// checkFiles checks the mode of every file snugd keeps in the data
// directory: the database and its WAL files, the key file, the lock file
// and the socket are for the service's user alone (0600); config.json must
// not be writable by others.
func (d *doctor) checkFiles() {
	type want struct {
		name    string
		mask    fs.FileMode // permission bits that must be clear
		socket  bool
		missing string // status when absent
		whyNone string
	}
	files := []want{
		{name: dbFileName, mask: 0o077, missing: "fail", whyNone: "no database: snugd has not started here"},
		{name: dbFileName + "-wal", mask: 0o077, missing: "ok", whyNone: "absent (the daemon is stopped, or checkpointed)"},
		{name: dbFileName + "-shm", mask: 0o077, missing: "ok", whyNone: "absent (the daemon is stopped)"},
		{name: secretsKeyName, mask: 0o077, missing: "warn", whyNone: "absent: the master key is in the OS keychain, or snugd has not started here"},
		{name: lockFileName, mask: 0o077, missing: "warn", whyNone: "absent: snugd has not started here"},
		{name: api.CtlSocket, mask: 0o077, socket: true, missing: "warn", whyNone: "absent: the daemon is not running"},
		{name: configFile, mask: 0o022, missing: "ok", whyNone: "absent: the defaults apply"},
	}
	for _, w := range files {
		p := filepath.Join(d.c.dataDir, w.name)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			d.add(w.name, w.missing, "%s", w.whyNone)
			continue
		case err != nil:
			d.add(w.name, "fail", "%v", err)
			continue
		}
		isSock := fi.Mode()&fs.ModeSocket != 0
		switch {
		case w.socket && !isSock:
			d.add(w.name, "fail", "%s is not a socket", p)
		case !w.socket && !fi.Mode().IsRegular():
			d.add(w.name, "fail", "%s is not a regular file", p)
		case runtime.GOOS == "windows":
			d.add(w.name, "ok", "present (its ACL decides who may read it)")
		case fi.Mode().Perm()&w.mask != 0:
			d.add(w.name, "fail", "mode %04o lets others in; it must be %s (chmod %s %s)", fi.Mode().Perm(), modeWant(w.mask), modeWant(w.mask), p)
		default:
			d.add(w.name, "ok", "mode %04o%s", fi.Mode().Perm(), fileOwner(fi))
		}
	}
}

func modeWant(mask fs.FileMode) string {
	if mask == 0o022 {
		return "go-w"
	}
	return "600"
}

// checkDaemon asks the daemon for its status over the ctl socket, and its
// process id from the socket's peer credentials where the OS gives them.
func (d *doctor) checkDaemon(ctx context.Context) {
	st, err := d.c.client.Status(ctx)
	if err != nil {
		if errors.Is(err, api.ErrUnreachable) {
			d.add("daemon", "fail", "nothing answers on %s: start it with \"snugd start\" or \"snugd run --data-dir %s\"", filepath.Join(d.c.dataDir, api.CtlSocket), d.c.dataDir)
		} else {
			d.add("daemon", "fail", "status: %v", err)
		}
		return
	}
	d.status = &st
	pid, err := socketPeerPID(filepath.Join(d.c.dataDir, api.CtlSocket))
	who := ""
	if err == nil && pid > 0 {
		d.daemonPID = pid
		who = fmt.Sprintf(", pid %d", pid)
	}
	d.add("daemon", "ok", "snugd %s%s, up %s, %s policy", st.Version, who, time.Duration(st.UptimeSeconds)*time.Second, st.TransportPolicy)
	if v := buildVersion(); v != st.Version {
		d.add("version", "warn", "snugd ctl is %s but the daemon is %s: restart the daemon after an upgrade", v, st.Version)
	}
}

// checkLock reports the data directory's lock holder, as recorded in the
// lock file, and whether it is the daemon answering on the socket.
func (d *doctor) checkLock() {
	pid, startedAt, recorded, err := daemon.LockHolder(d.c.dataDir)
	started := startedAt.UTC().Format(time.RFC3339)
	switch {
	case err == nil && !recorded:
		if d.status != nil {
			d.add("lock", "warn", "the daemon answers but the lock file records no holder")
		} else {
			d.add("lock", "ok", "no holder recorded: no daemon has the directory open")
		}
	case err != nil:
		d.add("lock", "fail", "%v", err)
	case d.status == nil:
		d.add("lock", "warn", "the record names pid %d (started %s), but no daemon answers: a daemon that was killed leaves its record; the next start replaces it", pid, started)
	case d.daemonPID != 0 && d.daemonPID != pid:
		d.add("lock", "fail", "held by pid %d, but the daemon answering on the socket is pid %d", pid, d.daemonPID)
	case d.daemonPID != 0:
		d.add("lock", "ok", "held by pid %d (started %s), the daemon answering on the socket", pid, started)
	default:
		d.add("lock", "ok", "held by pid %d (started %s)", pid, started)
	}
}

// checkDatabase runs SQLite's quick_check on a read-only connection. With
// the daemon running the WAL is shared with it; without, the file is
// opened immutable so that not even a -shm file is created.
func (d *doctor) checkDatabase(ctx context.Context) {
	if _, err := os.Stat(filepath.Join(d.c.dataDir, dbFileName)); err != nil {
		d.add("database", "skip", "no database to check")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	problems, err := daemon.CheckDatabase(ctx, d.c.dataDir, d.status != nil)
	switch {
	case err != nil:
		d.add("database", "fail", "%v", err)
	case len(problems) > 0:
		// quick_check names pages and indexes, never row contents.
		d.add("database", "fail", "quick_check found %d %s, first: %s", len(problems), plural(len(problems), "problem", "problems"), problems[0])
	default:
		d.add("database", "ok", "quick_check ok (read-only)")
	}
}

// checkDisk reports what the running daemon saw of its disk: whether its
// journal can be written, and the free space. Without a daemon there is
// nothing to ask.
func (d *doctor) checkDisk() {
	switch st := d.status; {
	case st == nil:
		d.add("disk", "skip", "the daemon is down")
	case st.Database == "unwritable":
		d.add("disk", "fail", "%s (%s free on its disk): credentialed requests are refused until a write succeeds: free space on the disk of %s (or make it writable)", st.DatabaseMessage, bytesHuman(st.DiskFree), d.c.dataDir)
	case st.DiskFree > 0:
		d.add("disk", "ok", "the journal can be written, %s free on its disk", bytesHuman(st.DiskFree))
	default:
		d.add("disk", "ok", "the journal can be written")
	}
}

// checkPort checks that the configured loopback port is this daemon's: the
// daemon reports listening there (two listeners cannot share it), it
// answers health over TCP with the same version, and on Linux the socket
// listening on it belongs to the daemon's process.
func (d *doctor) checkPort(ctx context.Context) {
	cfg, err := loadConfig(d.c.dataDir, configFlags{})
	if err != nil {
		d.add("port", "fail", "config.json: %v", err)
		return
	}
	want := cfg.listenAddr()
	if d.status == nil {
		d.checkPortWithoutStatus(ctx, want)
		return
	}
	// The daemon's own address is the one to check: a daemon started with
	// --port (a service installed with it) listens elsewhere than
	// config.json says, and that is not a fault.
	note := ""
	if d.status.Listen != want {
		if d.status.Listen == "" {
			d.add("port", "fail", "the daemon reports no TCP address (config.json says %s)", want)
			return
		}
		note = fmt.Sprintf(" (started with --port: config.json says %s)", want)
		want = d.status.Listen
	}
	host, portText, err := net.SplitHostPort(want)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil {
		d.add("port", "fail", "the daemon reports the address %q, which is not host:port", want)
		return
	}
	h, hdr, status, err := tcpGet(ctx, want, "/v1/health", map[string]string{"Host": want})
	if err != nil || status != http.StatusOK {
		d.add("port", "fail", "GET /v1/health on %s: %s", want, describe(status, err))
		return
	}
	var health api.Health
	if json.Unmarshal(h, &health) != nil || !health.OK || health.Version != d.status.Version || hdr.Get("Snugd-Version") != d.status.Version {
		d.add("port", "fail", "%s answers, but not as this daemon", want)
		return
	}
	owner := ""
	if d.daemonPID != 0 {
		pid, err := portOwnerPID(host, port, d.daemonPID)
		switch {
		case err != nil:
			owner = " (the listening socket's owner could not be read: " + err.Error() + ")"
		case pid != d.daemonPID:
			d.add("port", "fail", "%s is held by pid %d, not the daemon (pid %d)", want, pid, d.daemonPID)
			return
		default:
			owner = fmt.Sprintf(", held by the daemon's pid %d", pid)
		}
	}
	d.add("port", "ok", "%s answers as this daemon%s%s", want, owner, note)
}

// checkPortWithoutStatus checks the configured port when the daemon did
// not answer status on the ctl socket: it is down, or it runs but the
// socket is out of reach or its status failed. A snugd answering health
// on the port is recognised as such (and, on Linux, as this data
// directory's lock holder or not) rather than taken for another program.
func (d *doctor) checkPortWithoutStatus(ctx context.Context, want string) {
	c, err := net.DialTimeout("tcp", want, 2*time.Second)
	if err != nil {
		d.add("port", "skip", "the daemon is down; %s is free", want)
		return
	}
	c.Close()
	version, isSnugd := snugdHealth(ctx, want)
	if !isSnugd {
		d.add("port", "fail", "%s is held by another program, not snugd: snugd will not be able to listen there", want)
		return
	}
	pid, _, recorded, err := daemon.LockHolder(d.c.dataDir)
	if err != nil || !recorded {
		d.add("port", "warn", "%s answers as snugd %s, but no snugd holds this data directory: another data directory's snugd has the port", want, version)
		return
	}
	host, portText, _ := net.SplitHostPort(want)
	port, _ := strconv.Atoi(portText)
	owner, err := portOwnerPID(host, port, pid)
	switch {
	case err != nil:
		d.add("port", "ok", "%s answers as snugd %s; this data directory is held by pid %d (whether that process holds the port could not be read: %v)", want, version, pid, err)
	case owner != pid:
		d.add("port", "fail", "%s answers as snugd %s, but not as the snugd holding this data directory (pid %d): two snugds want the port", want, version, pid)
	default:
		d.add("port", "ok", "%s answers as snugd %s, held by pid %d, which holds this data directory", want, version, pid)
	}
}

// snugdHealth reports whether a snugd answers GET /v1/health on addr,
// and its version.
func snugdHealth(ctx context.Context, addr string) (string, bool) {
	b, hdr, status, err := tcpGet(ctx, addr, "/v1/health", map[string]string{"Host": addr})
	if err != nil || status != http.StatusOK {
		return "", false
	}
	var h api.Health
	if json.Unmarshal(b, &h) != nil || !h.OK || h.Version == "" || hdr.Get("Snugd-Version") != h.Version {
		return "", false
	}
	return h.Version, true
}

// checkRefusals is the API's self-test: a request with a foreign Host
// header and one from an origin no host paired must both be refused (403)
// on the TCP port, before routing (DESIGN.md, loopback API security).
func (d *doctor) checkRefusals(ctx context.Context) {
	if d.status == nil || d.status.Listen == "" {
		d.add("host/origin", "skip", "the daemon is down")
		return
	}
	addr := d.status.Listen
	tests := []struct {
		what   string
		header map[string]string
	}{
		{"a foreign Host header", map[string]string{"Host": "doctor.invalid"}},
		{"an unpaired Origin", map[string]string{"Host": addr, "Origin": "https://doctor.invalid"}},
	}
	var ok []string
	for _, tc := range tests {
		_, _, status, err := tcpGet(ctx, addr, "/v1/health", tc.header)
		if err != nil || status != http.StatusForbidden {
			d.add("host/origin", "fail", "%s was not refused: %s, want 403", tc.what, describe(status, err))
			return
		}
		ok = append(ok, tc.what)
	}
	d.add("host/origin", "ok", "refused with 403: %s", strings.Join(ok, ", "))
}

// checkHelpers reports how this machine confines a linked-device helper
// (linkdevice.Probe): the Landlock ABI the kernel offers and what it
// narrows, no_new_privs, and whether descendants end with the session.
// It warns where a helper could read what snugd's user can: outside
// Linux, or on a kernel without Landlock.
func (d *doctor) checkHelpers() {
	const name = "helper sandbox"
	c := linkdevice.Probe()
	switch {
	case runtime.GOOS != "linux":
		d.add(name, "warn", "helpers are not sandboxed on %s: each runs as snugd's user, in a private session directory with an empty environment, and can read what that user can", runtime.GOOS)
	case !c.Confined():
		d.add(name, "warn", "this kernel has no Landlock, so a helper can read what snugd's user can (%s): enable the landlock LSM (CONFIG_SECURITY_LANDLOCK, lsm=landlock,… at boot)", c)
	case !c.Network:
		d.add(name, "ok", "%s; this kernel cannot narrow a helper's network (that needs Landlock ABI 4)", c)
	default:
		d.add(name, "ok", "%s", c)
	}
}

// checkClock checks that this machine's clock is plausible: not before the
// commit this binary was built from, and in step with the daemon's.
func (d *doctor) checkClock(ctx context.Context) {
	now := time.Now()
	if rt := readBuildInfo().RevisionTime; rt != "" {
		if t, err := time.Parse(time.RFC3339, rt); err == nil && now.Before(t.Add(-24*time.Hour)) {
			d.add("clock", "fail", "the clock reads %s, before this build's commit (%s): fix the system time (signed requests and expiries depend on it)", now.UTC().Format(time.RFC3339), rt)
			return
		}
	}
	if d.status == nil || d.status.Listen == "" {
		d.add("clock", "ok", "%s", now.UTC().Format(time.RFC3339))
		return
	}
	_, hdr, _, err := tcpGet(ctx, d.status.Listen, "/v1/health", map[string]string{"Host": d.status.Listen})
	if err != nil {
		d.add("clock", "warn", "could not read the daemon's clock: %v", err)
		return
	}
	dt, err := http.ParseTime(hdr.Get("Date"))
	if err != nil {
		d.add("clock", "ok", "%s (the daemon sent no Date)", now.UTC().Format(time.RFC3339))
		return
	}
	skew := dt.Sub(now.Truncate(time.Second))
	if skew < -2*time.Second || skew > 2*time.Second {
		d.add("clock", "warn", "the daemon's clock differs from this one by %s", skew)
		return
	}
	d.add("clock", "ok", "%s, in step with the daemon", now.UTC().Format(time.RFC3339))
}

// tcpGet sends one GET to addr with the given headers (Host among them),
// without proxies, and returns up to 64 KiB of the answer.
func tcpGet(ctx context.Context, addr, path string, header map[string]string) ([]byte, http.Header, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		return nil, nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return b, resp.Header, resp.StatusCode, err
}

func describe(status int, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("HTTP %d", status)
}
