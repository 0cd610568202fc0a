//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAPIDocExamples runs every example of api/API.md as written, against
// the real binary, and checks each answer against the check line the
// document gives it (the convention is API.md's "Examples" section):
//
//   - every request of a ```sh block (a command that starts with curl or
//     $CTL, or pipes into curl) must be followed by a check line,
//     "# → STATUS [JSON]" or "# → e2e TestName"; a request without one,
//     or a check without a request, fails the test, so a new example
//     cannot go unchecked;
//   - every other line of a block runs as written, in one shell for the
//     whole document, so variables carry from block to block; the test
//     sets $CTL (the ctl socket of its own daemon) and $DATA_DIR itself,
//     and skips the document's own assignments of them;
//   - "# → 200 {…}": the answer's status, and every field shown must be
//     in the answer with the value shown ("…" any value, "x…" a string
//     beginning with x, an array's elements each matching some element
//     of the answer's, "$NAME" any value, kept as the shell variable
//     NAME for the examples after it);
//   - a request ending in & runs in the background (a call parked on a
//     confirm); its check follows the next line that is wait;
//   - "# → e2e TestName": the example needs an upstream this test does
//     not have (a Hue bridge, an OAuth provider, a SimpleFIN bridge);
//     TestName in this package runs that route against the harness's
//     fakes: it must exist, and its file must name the route's last
//     segment.
//
// Every ```json block must be valid JSON too.
//
// snugd runs on the documented port 4747 in a network namespace of the
// test's own with nothing but loopback, so nothing an example asks for
// (a public provider's host, a bridge's address) can leave the machine:
// it fails at connect, inside the namespace, as the examples show.
func TestAPIDocExamples(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for its network namespace")
	}
	doc, err := os.ReadFile("../../api/API.md")
	if err != nil {
		t.Fatal(err)
	}
	steps, jsonBlocks, err := parseAPIDoc(string(doc))
	if err != nil {
		t.Fatalf("api/API.md: %v", err)
	}
	for _, b := range jsonBlocks {
		if !json.Valid([]byte(b.text)) {
			t.Errorf("api/API.md:%d: the json block is not valid JSON", b.line)
		}
	}
	requests, elsewhere := 0, 0
	for _, s := range steps {
		if s.check != nil {
			requests++
		}
		if s.check != nil && s.check.e2e != "" {
			elsewhere++
		}
	}
	t.Logf("api/API.md: %d checked examples, %d of them run by another test of scripts/e2e", requests, elsewhere)
	if requests < 75 {
		t.Fatalf("api/API.md has %d checked examples; the parser lost some", requests)
	}
	e2eTests := e2eTestNames(t)

	dir := t.TempDir()
	ns := fmt.Sprintf("snugd-apidoc-%d", os.Getpid())
	ctx := context.Background()
	if out, err := exec.Command("ip", "netns", "list").Output(); err != nil || bytes.Contains(out, []byte(ns)) {
		t.Fatalf("netns %s: taken or unlisted (%v)", ns, err)
	}
	if err := ipCmd(ctx, "netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ipCmd(context.Background(), "netns", "delete", ns) })
	if err := ipCmd(ctx, "-n", ns, "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}

	bin := buildSnugd(t, dir)
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	daemon := exec.Command("ip", "netns", "exec", ns, bin, "run", "--data-dir", dataDir)
	daemon.Env = cleanEnv()
	daemon.Stdout, daemon.Stderr = log, log
	daemon.SysProcAttr = dieWithParent()
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { daemon.Wait(); close(exited) }()
	t.Cleanup(func() {
		daemon.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			daemon.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("snugd's log:\n%s", log.String())
		}
	})

	// The examples' working directory: the repository's api and daemon
	// directories, as a reader's checkout has them.
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"api", "daemon"} {
		abs, _ := filepath.Abs(filepath.Join("../..", d))
		if err := os.Symlink(abs, filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	sh := startDocShell(t, ns, work)
	sh.run(t, fmt.Sprintf("DATA_DIR=%s; CTL=\"curl -s --unix-socket %s/snugd.sock\"", shQuote(dataDir), dataDir))
	sh.run(t, "for i in $(seq 100); do command curl -s -o /dev/null http://127.0.0.1:4747/v1/health && break; sleep 0.1; done")

	bgN := 0
	var bg []string // output files of background requests, oldest first
	for _, s := range steps {
		switch {
		case s.background:
			bgN++
			f := filepath.Join(dir, fmt.Sprintf("bg-%d", bgN))
			bg = append(bg, f)
			cmd := strings.TrimSuffix(strings.TrimSpace(stripComment(s.cmd)), "&")
			sh.run(t, "( "+cmd+" ) >"+shQuote(f)+" 2>&1 &")
			continue
		case s.check == nil && s.wait:
			sh.run(t, s.cmd)
			continue
		case s.check == nil:
			if strings.HasPrefix(s.cmd, "CTL=") || strings.HasPrefix(s.cmd, "DATA_DIR=") {
				continue // the test's own socket and data directory
			}
			if out, rc := sh.run(t, s.cmd); rc != 0 {
				t.Fatalf("api/API.md:%d: %s\nexit %d: %s", s.line, s.cmd, rc, out)
			}
			continue
		case s.check.e2e != "":
			src, ok := e2eTests[s.check.e2e]
			switch seg := routeWord(s.cmd); {
			case !ok:
				t.Errorf("api/API.md:%d: the check names %s, which is not a test of scripts/e2e", s.line, s.check.e2e)
			case seg == "" || !strings.Contains(src, seg):
				t.Errorf("api/API.md:%d: %s does not mention the route's %q", s.line, s.check.e2e, seg)
			}
			continue
		}
		var out string
		if s.afterWait {
			if len(bg) == 0 {
				t.Fatalf("api/API.md:%d: a check after wait with no request in the background", s.line)
			}
			raw, _ := os.ReadFile(bg[0])
			bg, out = bg[1:], string(raw)
		} else {
			out, _ = sh.run(t, s.cmd)
		}
		status, body, ok := splitStatus(out)
		if !ok {
			t.Errorf("api/API.md:%d: %s\ncurl gave no status:\n%s", s.line, s.cmd, out)
			continue
		}
		if status != s.check.status {
			t.Errorf("api/API.md:%d: %s\n= %d %s, want %d", s.line, s.cmd, status, body, s.check.status)
			continue
		}
		if s.check.want == nil {
			continue
		}
		var got any
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Errorf("api/API.md:%d: %s\nthe answer is not JSON: %s", s.line, s.cmd, body)
			continue
		}
		caps := map[string]string{}
		if why := matchJSON(s.check.want, got, caps, "$"); why != "" {
			t.Errorf("api/API.md:%d: %s\n= %d %s\n%s", s.line, s.cmd, status, body, why)
			continue
		}
		for k, v := range caps {
			sh.run(t, k+"="+shQuote(v))
		}
	}
	if len(bg) != 0 {
		t.Errorf("api/API.md: %d background requests never checked (no wait)", len(bg))
	}
	if strings.Contains(log.String(), "snugh_") {
		t.Error("snugd's log names a host token")
	}
}

// A docStep is one line (or continued lines) of an example block.
type docStep struct {
	line       int
	cmd        string
	check      *docCheck // nil: a shell line, run as written
	background bool      // a request ending in &: checked after the next wait
	wait       bool      // the line is wait
	afterWait  bool      // the check of the oldest background request
}

type docCheck struct {
	status int
	want   any    // nil: the status only
	e2e    string // the scripts/e2e test that runs this route
}

type docBlock struct {
	line int
	text string
}

var checkLine = regexp.MustCompile(`^# → (?:e2e (Test\w+)|(\d{3})(?: (.+))?)$`)

// parseAPIDoc reads the examples of the document: the steps of its sh
// blocks, in order, and its json blocks.
func parseAPIDoc(doc string) ([]docStep, []docBlock, error) {
	var (
		steps   []docStep
		jsons   []docBlock
		fence   string // "" outside a block
		start   int
		buf     []string
		pending *docStep // a request waiting for its check
		cont    string   // a command continued on the next line
		contAt  int
	)
	lines := strings.Split(doc, "\n")
	for i, raw := range lines {
		n := i + 1
		line := strings.TrimRight(raw, " ")
		if fence == "" {
			if strings.HasPrefix(line, "```") {
				fence, start, buf = strings.TrimPrefix(line, "```"), n, nil
				if fence == "" {
					fence = "plain"
				}
			}
			continue
		}
		if line == "```" {
			if fence == "json" {
				jsons = append(jsons, docBlock{start, strings.Join(buf, "\n")})
			}
			if pending != nil {
				return nil, nil, fmt.Errorf("line %d: the example has no check line (# → STATUS …) before the block ends", pending.line)
			}
			if cont != "" {
				return nil, nil, fmt.Errorf("line %d: a continued line ends the block", contAt)
			}
			fence = ""
			continue
		}
		buf = append(buf, raw)
		if fence != "sh" {
			continue
		}
		trimmed := strings.TrimSpace(line)
		if m := checkLine.FindStringSubmatch(trimmed); m != nil {
			if pending == nil {
				return nil, nil, fmt.Errorf("line %d: a check line with no example before it", n)
			}
			c := &docCheck{e2e: m[1]}
			if m[2] != "" {
				c.status, _ = strconv.Atoi(m[2])
			}
			if m[3] != "" {
				if err := json.Unmarshal([]byte(m[3]), &c.want); err != nil {
					return nil, nil, fmt.Errorf("line %d: the check's JSON: %v", n, err)
				}
			}
			pending.check = c
			steps = append(steps, *pending)
			pending = nil
			continue
		}
		if strings.HasPrefix(trimmed, "# →") {
			return nil, nil, fmt.Errorf("line %d: a check line is \"# → STATUS [JSON]\" or \"# → e2e TestName\"", n)
		}
		if pending != nil {
			return nil, nil, fmt.Errorf("line %d: the example has no check line (# → STATUS …)", pending.line)
		}
		if cont == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cont == "" {
			contAt = n
		}
		cmd := cont + line
		if strings.HasSuffix(line, "\\") || strings.HasSuffix(line, "|") || openQuote(cmd) {
			cont = cmd + "\n"
			continue
		}
		cont = ""
		s := docStep{line: contAt, cmd: cmd}
		switch {
		case trimmed == "wait":
			s.wait = true
			steps = append(steps, s)
			pending = &docStep{line: n, afterWait: true}
		case isRequest(cmd) && strings.HasSuffix(strings.TrimSpace(stripComment(cmd)), "&"):
			s.background = true // checked after the next wait
			steps = append(steps, s)
		case isRequest(cmd):
			pending = &s
		default:
			steps = append(steps, s)
		}
	}
	if fence != "" {
		return nil, nil, fmt.Errorf("line %d: the block never ends", start)
	}
	return steps, jsons, nil
}

// openQuote reports whether cmd ends inside a quoted string, so that the
// command goes on on the next line.
func openQuote(cmd string) bool {
	var q, prev rune = 0, ' '
	esc := false
	for _, r := range cmd {
		if q == 0 && !esc && r == '#' && (prev == ' ' || prev == '\t' || prev == '\n') {
			return false // a comment to the end of the line
		}
		prev = r
		switch {
		case esc:
			esc = false
		case r == '\\' && q != '\'':
			esc = true
		case q == 0 && (r == '\'' || r == '"'):
			q = r
		case r == q:
			q = 0
		}
	}
	return q != 0
}

// isRequest reports whether a command is an example request: curl or
// $CTL first, or curl after a pipe.
func isRequest(cmd string) bool {
	c := strings.TrimSpace(cmd)
	return strings.HasPrefix(c, "curl ") || strings.HasPrefix(c, "$CTL ") || regexp.MustCompile(`\|\s*curl `).MatchString(c)
}

// stripComment drops a trailing " # …" comment (outside quotes, roughly:
// the examples' comments follow two or more spaces).
func stripComment(cmd string) string {
	if i := strings.LastIndex(cmd, "  #"); i >= 0 && !strings.ContainsAny(cmd[i:], `'"`) {
		return cmd[:i]
	}
	return cmd
}

// splitStatus splits what the wrapped curl printed into the status and
// the body before it.
func splitStatus(out string) (int, string, bool) {
	i := strings.LastIndex(out, "\n@@status ")
	if i < 0 {
		return 0, "", false
	}
	st, err := strconv.Atoi(strings.TrimSpace(out[i+len("\n@@status "):]))
	if err != nil {
		return 0, "", false
	}
	return st, out[:i], true
}

var capture = regexp.MustCompile(`^\$([A-Z][A-Z0-9_]*)$`)

// matchJSON reports why got does not hold want ("" when it does), adding
// the captured values to caps.
func matchJSON(want, got any, caps map[string]string, path string) string {
	switch w := want.(type) {
	case string:
		if w == "…" {
			return ""
		}
		if m := capture.FindStringSubmatch(w); m != nil {
			switch g := got.(type) {
			case string:
				caps[m[1]] = g
			case float64:
				caps[m[1]] = strconv.FormatFloat(g, 'f', -1, 64)
			default:
				return fmt.Sprintf("%s: %v cannot be kept as $%s", path, got, m[1])
			}
			return ""
		}
		g, ok := got.(string)
		if p, prefix := strings.CutSuffix(w, "…"); prefix && ok && strings.HasPrefix(g, p) {
			return ""
		}
		if !ok || g != w {
			return fmt.Sprintf("%s = %v, want %q", path, got, w)
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s = %v, want an object", path, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s is absent", path, k)
			}
			if why := matchJSON(wv, gv, caps, path+"."+k); why != "" {
				return why
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s = %v, want an array", path, got)
		}
		used := make([]bool, len(g))
		for i, wv := range w {
			found := false
			for j, gv := range g {
				if used[j] {
					continue
				}
				tentative := map[string]string{}
				if matchJSON(wv, gv, tentative, path) == "" {
					for k, v := range tentative {
						caps[k] = v
					}
					used[j], found = true, true
					break
				}
			}
			if !found {
				return fmt.Sprintf("%s[%d]: no element of %v matches %v", path, i, got, wv)
			}
		}
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Sprintf("%s = %v, want %v", path, got, want)
		}
	}
	return ""
}

// routeWord is the last segment of the path an example request names
// ("pair" for $HUE/lan/pair): the word its e2e test must mention.
func routeWord(cmd string) string {
	m := regexp.MustCompile(`\$[A-Z]+(/[^\s"'?]*)`).FindStringSubmatch(cmd)
	if m == nil {
		return ""
	}
	return m[1][strings.LastIndex(m[1], "/")+1:]
}

// e2eTestNames maps each Test function of this package to the source of
// its file.
func e2eTestNames(t *testing.T) map[string]string {
	t.Helper()
	files, _ := filepath.Glob("*_test.go")
	names := map[string]string{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = string(b)
		}
	}
	return names
}

// A docShell is one bash in the test's namespace that runs the examples
// in order, so that what one defines the next can use. curl in it is a
// function that adds the answer's status after the body.
type docShell struct {
	in  io.WriteCloser
	out *bufio.Reader
}

func startDocShell(t *testing.T, ns, dir string) *docShell {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "bash", "--noprofile", "--norc")
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "HOME="+dir)
	cmd.SysProcAttr = dieWithParent()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	s := &docShell{in: in, out: bufio.NewReader(out)}
	s.run(t, `exec 2>&1; curl() { command curl -sS --max-time 30 -w '\n@@status %{http_code}\n' "$@"; }`)
	return s
}

// run runs one command and returns what it printed and its exit status.
// A command is bounded by curl's own time limit; the test's deadline
// bounds the rest.
func (s *docShell) run(t *testing.T, cmd string) (string, int) {
	t.Helper()
	const mark = "@@done-7c1e "
	if _, err := fmt.Fprintf(s.in, "%s\nprintf '\\n%s%%d\\n' $?\n", cmd, mark); err != nil {
		t.Fatalf("the shell: %v", err)
	}
	var b strings.Builder
	for {
		line, err := s.out.ReadString('\n')
		if i := strings.Index(line, mark); i >= 0 {
			b.WriteString(line[:i])
			rc, _ := strconv.Atoi(strings.TrimSpace(line[i+len(mark):]))
			return strings.TrimSuffix(b.String(), "\n"), rc
		}
		b.WriteString(line)
		if err != nil {
			t.Fatalf("the shell ended: %v\n%s", err, b.String())
		}
	}
}

// shQuote quotes s for the shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
