//go:build linux

package linkdevice

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The descriptors of the confining command, beside the helper's three
// streams: snugd's end of the lifeline (EOF: end the session now) and the
// report of the confinement reached (one JSON line, then EOF at exec).
const (
	lifelineFD = 3
	reportFD   = 4
	// stage two gets the report as its only extra descriptor.
	stage2ReportFD = 3
)

// systemDirs are the directories a confined helper may read and execute
// from: the system's programs and libraries. /etc is not among them;
// only ld.so's cache is. A directory that does not exist is skipped.
var systemDirs = []string{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin"}

// systemFiles are single files a helper may read besides.
var systemFiles = []string{"/etc/ld.so.cache", "/dev/urandom", "/dev/random"}

// Probe reports the confinement a helper started now would reach on this
// machine, given a confining command: the kernel's Landlock ABI (capped
// at the newest go-landlock knows). It starts nothing.
func Probe() Confinement {
	return fromABI(landlockABI())
}

// landlockABI asks the kernel for its Landlock ABI version, 0 without
// Landlock.
func landlockABI() int {
	const createRulesetVersion = 1 // LANDLOCK_CREATE_RULESET_VERSION
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if errno != 0 {
		return 0
	}
	return min(int(v), maxABI)
}

// confineArgs are the confining command's arguments after main's prefix.
type confineArgs struct {
	session, state string
	connectTCP     []uint16
	stage2         bool
	exe            string
	args           []string
}

func (a confineArgs) argv() []string {
	out := []string{"--session", a.session, "--state", a.state}
	for _, p := range a.connectTCP {
		out = append(out, "--connect-tcp", strconv.Itoa(int(p)))
	}
	if a.stage2 {
		out = append(out, "--stage2")
	}
	return append(append(out, "--", a.exe), a.args...)
}

func parseConfineArgs(args []string) (confineArgs, error) {
	var a confineArgs
	fs := flag.NewFlagSet("confine", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.session, "session", "", "")
	fs.StringVar(&a.state, "state", "", "")
	fs.BoolVar(&a.stage2, "stage2", false, "")
	fs.Func("connect-tcp", "", func(s string) error {
		p, err := strconv.ParseUint(s, 10, 16)
		if err != nil || p == 0 {
			return errors.New("want a TCP port")
		}
		a.connectTCP = append(a.connectTCP, uint16(p))
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return a, err
	}
	if fs.NArg() < 1 || !filepath.IsAbs(a.session) || !filepath.IsAbs(a.state) || !filepath.IsAbs(fs.Arg(0)) {
		return a, errors.New("want --session DIR --state DIR [--connect-tcp PORT]… -- EXECUTABLE [ARG]…")
	}
	a.exe, a.args = fs.Arg(0), fs.Args()[1:]
	return a, nil
}

// confineReport is the line stage two writes before it execs the helper.
type confineReport struct {
	Landlock int    `json:"landlock"`
	Error    string `json:"error,omitempty"`
}

// RunConfine is snugd helper confine: it starts one helper confined and
// ends every process the helper starts with it. It runs in two stages of
// snugd's own executable. The first is the session's subreaper: unconfined
// (it is snugd's code), it sets PR_SET_CHILD_SUBREAPER, so every
// descendant of the helper that loses its parent (a double fork, a setsid
// daemon) becomes its child, starts stage two, and waits. When the helper
// exits, when snugd closes the lifeline (descriptor 3: a revoke, a kill,
// snugd's stop or snugd's death) or on SIGTERM, it kills every descendant
// left, reaps them all and exits with the helper's status. Stage two sets
// no_new_privs, enforces the Landlock ruleset on itself (best effort down
// to the kernel's ABI; see PROTOCOL.md for what a helper may touch),
// reports the ABI reached on descriptor 4 and execs the helper, which
// keeps only its three streams. It returns the exit status for main.
func RunConfine(args []string, stderr io.Writer) int {
	a, err := parseConfineArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "snugd helper confine: %v\n", err)
		return 2
	}
	if a.stage2 {
		return confineExec(a, stderr)
	}
	self := os.Args[:len(os.Args)-len(args)]
	if !slices.Equal(os.Args[len(self):], args) || len(self) == 0 {
		fmt.Fprintln(stderr, "snugd helper confine: cannot find its own command line")
		return 2
	}
	return reap(self, a, stderr)
}

// reap is stage one: the session's subreaper.
func reap(self []string, a confineArgs, stderr io.Writer) int {
	syscall.CloseOnExec(lifelineFD)
	syscall.CloseOnExec(reportFD)
	lifeline := os.NewFile(lifelineFD, "lifeline")
	report := os.NewFile(reportFD, "report")
	if lifeline == nil || report == nil {
		fmt.Fprintln(stderr, "snugd helper confine: started without its descriptors")
		return 2
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		writeReport(report, confineReport{Error: "set the child subreaper: " + err.Error()})
		return 1
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGCHLD)

	exe, err := os.Executable()
	if err != nil {
		writeReport(report, confineReport{Error: "find its own executable: " + err.Error()})
		return 1
	}
	a2 := a
	a2.stage2 = true
	cmd := exec.Command(exe, append(slices.Clone(self[1:]), a2.argv()...)...)
	cmd.Args[0] = self[0]
	cmd.Dir = a.session
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{report}
	if err := cmd.Start(); err != nil {
		writeReport(report, confineReport{Error: "start: " + err.Error()})
		return 1
	}
	report.Close()
	helper := cmd.Process.Pid
	// The helper's streams are its own now: snugd sees their end when the
	// helper (and every descendant holding them) is gone.
	if null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		for fd := 0; fd <= 2; fd++ {
			unix.Dup2(int(null.Fd()), fd)
		}
		null.Close()
	}

	cut := make(chan struct{})
	go func() { io.Copy(io.Discard, lifeline); close(cut) }() // ends when snugd's end closes

	status := -1 // the helper's exit status, once reaped
	for status < 0 {
		select {
		case <-cut:
			return endAll(helper, status)
		case s := <-sigs:
			if s == syscall.SIGTERM {
				return endAll(helper, status)
			}
		}
		status = reapSome(helper, status)
	}
	return endAll(helper, status)
}

// reapSome reaps every child that has exited, without blocking, and
// returns the helper's exit status once it is among them (else status).
func reapSome(helper, status int) int {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return status
		}
		if pid == helper {
			status = exitCode(ws)
		}
	}
}

func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// endAll kills the helper (unless reaped) and every other descendant,
// round after round (a killed process's children become ours), reaps
// them, and returns the helper's status. It gives up after endBudget,
// which no descendant can outlast but one the kernel will not let die.
func endAll(helper, status int) int {
	const endBudget = 5 * time.Second
	if status < 0 {
		unix.Kill(helper, unix.SIGKILL)
	}
	self := os.Getpid()
	for deadline := time.Now().Add(endBudget); time.Now().Before(deadline); {
		for _, pid := range childrenOf(self) {
			unix.Kill(pid, unix.SIGKILL)
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.ECHILD) {
				if status < 0 {
					status = 128 + int(unix.SIGKILL)
				}
				return status
			}
			if pid <= 0 || err != nil {
				break
			}
			if pid == helper {
				status = exitCode(ws)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return max(status, 1)
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok && pp == pid {
			out = append(out, p)
		}
	}
	return out
}

// parentOf reads a process's parent id from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseStatParent(string(b))
}

// parseStatParent reads the parent id, the fourth field, from the text of
// /proc/PID/stat. The second field is the command name in parentheses,
// which the process chooses and which may itself hold ") " and digits, so
// the fields are counted from the last ')'.
func parseStatParent(stat string) (int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	if err != nil || pp < 0 {
		return 0, false
	}
	return pp, true
}

func writeReport(w io.Writer, r confineReport) {
	b, _ := json.Marshal(r)
	w.Write(append(b, '\n'))
}

// confineExec is stage two: it narrows itself and becomes the helper.
func confineExec(a confineArgs, stderr io.Writer) int {
	report := os.NewFile(stage2ReportFD, "report")
	if report == nil {
		fmt.Fprintln(stderr, "snugd helper confine: started without its report descriptor")
		return 2
	}
	fail := func(format string, v ...any) int {
		writeReport(report, confineReport{Error: fmt.Sprintf(format, v...)})
		return 1
	}
	// Landlock does not narrow a descriptor already open, and os/exec
	// passes on whatever snugd inherited without close-on-exec (a stray
	// descriptor of snugd's own parent): the helper keeps its three
	// streams and nothing else.
	if err := closeOnExecFrom(3); err != nil {
		return fail("mark inherited descriptors close-on-exec: %v", err)
	}
	rules, err := helperRules(a)
	if err != nil {
		return fail("%v", err)
	}
	// Landlock applies to the calling thread and what it execs: the whole
	// of stage two stays on this thread, which is never unlocked.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail("set no_new_privs: %v", err)
	}
	abi := landlockABI()
	fd, flags, err := landlock.V11.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fail("landlock ruleset: %v", err)
	}
	if fd < 0 {
		abi = 0 // best effort found no Landlock to use
	} else {
		err := llsyscall.LandlockRestrictSelf(fd, flags)
		unix.Close(fd)
		if err != nil {
			return fail("landlock_restrict_self: %v", err)
		}
	}
	writeReport(report, confineReport{Landlock: abi})
	syscall.CloseOnExec(stage2ReportFD)
	err = syscall.Exec(a.exe, append([]string{a.exe}, a.args...), os.Environ())
	return fail("exec the helper: %v", err)
}

// closeOnExecFrom marks every descriptor from first up close-on-exec:
// close_range(2) where the kernel has it (5.11), else each descriptor
// /proc/self/fd lists.
func closeOnExecFrom(first int) error {
	if unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd >= first {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}

// helperRules is what a confined helper may touch: read and execute the
// system's programs and libraries and its own executable, read ld.so's
// cache and the random devices, read and write /dev/null and its session
// directory, and connect to the TCP ports its Spec declares (and, for
// those, DNS over UDP port 53). Everything else of the file system, and
// every other bind or connect, is refused. It refuses to build rules
// whose system directories would hold snugd's data directory (the parent
// of the state directory): a helper must never read that.
func helperRules(a confineArgs) ([]landlock.Rule, error) {
	data := filepath.Dir(a.state)
	for _, d := range systemDirs {
		if within(data, d) {
			return nil, fmt.Errorf("snugd's data directory %s lies inside %s, which a helper may read", data, d)
		}
	}
	if !within(a.session, a.state) {
		return nil, errors.New("the session directory is not inside the state directory")
	}
	rules := []landlock.Rule{
		landlock.RODirs(systemDirs...).IgnoreIfMissing(),
		landlock.ROFiles(systemFiles...).IgnoreIfMissing(),
		landlock.ROFiles(a.exe),
		landlock.RWFiles(os.DevNull),
		landlock.RWDirs(a.session).WithRefer(),
	}
	for _, p := range a.connectTCP {
		rules = append(rules, landlock.ConnectTCP(p))
	}
	if len(a.connectTCP) > 0 {
		rules = append(rules, landlock.BindUDP(0), landlock.ConnectSendUDP(53))
	}
	return rules, nil
}

// within reports whether path is dir or lies beneath it (lexically, both
// cleaned and absolute; symlinks resolved where they exist).
func within(path, dir string) bool {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// readReport reads stage two's report: its last line, once the helper
// has been exec'd (EOF) or the stage failed.
func readReport(r *os.File, timeout time.Duration) (confineReport, error) {
	r.SetReadDeadline(time.Now().Add(timeout))
	var last string
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	for sc.Scan() {
		last = sc.Text()
	}
	if err := sc.Err(); err != nil {
		return confineReport{}, fmt.Errorf("read the confinement report: %w", err)
	}
	var rep confineReport
	if last == "" || json.Unmarshal([]byte(last), &rep) != nil {
		return confineReport{}, errors.New("the confining command ended without a report")
	}
	if rep.Error != "" {
		return rep, errors.New("confine: " + rep.Error)
	}
	return rep, nil
}
