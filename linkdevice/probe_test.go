//go:build unix

package linkdevice

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The prober's environment: a loopback port it tries to connect to and a
// process id it tries to signal (the test's own).
const (
	probePortEnv = "LINKDEVICE_PROBE_PORT"
	probePIDEnv  = "LINKDEVICE_PROBE_PID"
)

// probeFile is where the prober writes what it could do, in its session
// directory: name → "ok" or the error.
const probeFile = "probe.json"

// probe is the prober helper's start: it tries to read, list and write
// what a confined helper must not reach (snugd's data directory, another
// session's directory, the rest of the file system), to connect and to
// signal, and what it must reach (its own directory, the system's
// programs), and records each outcome. Its working directory is its
// session directory: <data>/helpers/<helper>/<session>.
func probe() {
	var extra []string // descriptors beyond the three streams, looked at first
	for fd := 3; fd < 1024; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			extra = append(extra, strconv.Itoa(fd))
		}
	}
	data := filepath.Clean("../../..")
	other := filepath.Join("..", "other-session")
	got := map[string]string{}
	try := func(name string, f func() error) {
		if err := f(); err != nil {
			got[name] = err.Error()
		} else {
			got[name] = "ok"
		}
	}
	read := func(p string) func() error { return func() error { _, err := os.ReadFile(p); return err } }
	write := func(p string) func() error { return func() error { return os.WriteFile(p, []byte("pwned"), 0o600) } }
	got["descriptors beyond 0-2"] = strings.Join(extra, ",")
	try("read secrets.key", read(filepath.Join(data, "secrets.key")))
	try("read snugd.db", read(filepath.Join(data, "snugd.db")))
	try("read config.json", read(filepath.Join(data, "config.json")))
	try("list the data directory", func() error { _, err := os.ReadDir(data); return err })
	try("read another session", read(filepath.Join(other, "session.json")))
	try("write the data directory", write(filepath.Join(data, "pwned")))
	try("write another session", write(filepath.Join(other, "pwned")))
	try("write outside", write(filepath.Join(data, "..", "pwned")))
	try("read /etc/passwd", read("/etc/passwd"))
	try("write own directory", write("own"))
	try("read own directory", read("own"))
	try("run a system program", func() error { return exec.Command("true").Run() })
	try("connect", func() error {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+os.Getenv(probePortEnv), 2*time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	try("signal snugd", func() error {
		pid, _ := strconv.Atoi(os.Getenv(probePIDEnv))
		return syscall.Kill(pid, 0)
	})
	b, _ := json.Marshal(got)
	os.WriteFile(probeFile+".tmp", b, 0o600)
	os.Rename(probeFile+".tmp", probeFile)
}

// escape leaves two descendants meant to outlive the helper, each
// writing its pid into the session directory: one double-forked (its
// parent shell exits at once), one in a session of its own (setsid).
func escape() {
	exec.Command("sh", "-c", `(sleep 300 & echo $! > double.pid) &`).Run()
	exec.Command("setsid", "-f", "sh", "-c", `echo $$ > setsid.pid; exec sleep 300`).Run()
}
