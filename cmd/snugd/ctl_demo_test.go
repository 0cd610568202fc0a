package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/linkdevice"
)

// demoRun is one snugd ctl demo running in the background, its output
// read line by line.
type demoRun struct {
	cmd   *exec.Cmd
	lines chan string
	out   bytes.Buffer // everything read so far
	errb  testutil.LogBuffer
	done  chan int
}

func startDemo(t *testing.T, bin, dir string, args ...string) *demoRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	d := &demoRun{cmd: exec.CommandContext(ctx, bin, append([]string{"ctl", "--data-dir", dir, "demo"}, args...)...), lines: make(chan string, 1024), done: make(chan int, 1)}
	d.cmd.Stderr = &d.errb
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // ends at the command's end of output
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
		d.cmd.Wait()
		d.done <- d.cmd.ProcessState.ExitCode()
	}()
	return d
}

// until reads lines until one contains want, and returns it.
func (d *demoRun) until(t *testing.T, want string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-d.lines:
			if !ok {
				t.Fatalf("the demo ended without %q; it printed:\n%s\nstderr:\n%s", want, d.out.String(), d.errb.String())
			}
			d.out.WriteString(l + "\n")
			if strings.Contains(l, want) {
				return l
			}
		case <-timeout:
			t.Fatalf("the demo never printed %q; it printed:\n%s", want, d.out.String())
		}
	}
}

// wait reads the rest and returns the exit status.
func (d *demoRun) wait(t *testing.T) int {
	t.Helper()
	for l := range d.lines {
		d.out.WriteString(l + "\n")
	}
	select {
	case code := <-d.done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("the demo did not end; it printed:\n%s", d.out.String())
		return -1
	}
}

// runPrinted runs a command line the demo printed for a person ("sudo
// snugd ctl --data-dir D confirms allow ID") with the built binary, as
// the person would type it (this test runs as that person already, so
// sudo is dropped).
func runPrinted(t *testing.T, bin, line string) (int, string) {
	t.Helper()
	words := strings.Fields(line)
	if len(words) > 0 && words[0] == "sudo" {
		words = words[1:]
	}
	if len(words) < 2 || words[0] != "snugd" || words[1] != "ctl" {
		t.Fatalf("the printed line %q is not a snugd ctl command", line)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, words[1:]...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatalf("run %q: %v", line, err)
	}
	return 0, string(out)
}

// printedCommand is the command a printed line shows: its text from "snugd" (or
// "sudo") on, up to a ";" or "(".
func printedCommand(t *testing.T, line, from string) string {
	t.Helper()
	i := strings.Index(line, "sudo snugd ctl")
	if i < 0 {
		i = strings.Index(line, "snugd ctl")
	}
	if i < 0 || !strings.Contains(line, from) {
		t.Fatalf("no %q command in %q", from, line)
	}
	cmd := line[i:]
	if j := strings.IndexAny(cmd, ";("); j > 0 {
		cmd = cmd[:j]
	}
	return strings.TrimSpace(cmd)
}

// startDemoDaemon builds snugd and runs its daemon on a data directory
// of its own, until the test ends; it returns the binary, the directory
// and the daemon's log.
func startDemoDaemon(t *testing.T) (bin, dir string, log *testutil.LogBuffer) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin = filepath.Join(t.TempDir(), "snugd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir, port := shortDir(t), freePort(t)
	daemon := exec.Command(bin, "run", "--data-dir", dir, "--port", strconv.Itoa(port))
	stdout, _ := daemon.StdoutPipe()
	log = &testutil.LogBuffer{}
	daemon.Stderr = log
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Process.Kill(); daemon.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(line, "API on") {
		t.Fatalf("start line %q, %v; stderr:\n%s", line, err, log.String())
	}
	return bin, dir, log
}

// TestCtlDemoBinary: the built snugd runs a daemon with its own data
// directory, and snugd ctl demo --yes runs end to end without a terminal,
// every step a person would take done by running the command the demo
// printed: proposed, approved as reviewed, linked by the printed scan
// command, the threads read, the send held until the printed confirms
// allow. The journal shows the acts. A second run does only the requests;
// --remove revokes and unlinks; the next run sets it up again.
func TestCtlDemoBinary(t *testing.T) {
	bin, dir, log := startDemoDaemon(t)
	ctl := func(args ...string) (int, string) {
		return runPrinted(t, bin, "snugd ctl --data-dir "+dir+" "+strings.Join(args, " "))
	}

	t.Run("without a terminal and without --yes it asks for --yes", func(t *testing.T) {
		d := startDemo(t, bin, dir)
		if code := d.wait(t); code != exitUsage || !strings.Contains(d.errb.String(), "--yes") {
			t.Fatalf("demo = %d, stderr %q; want 2 naming --yes", code, d.errb.String())
		}
		if code, out := ctl("connections", demoApp, "--json"); code != 0 || !strings.Contains(out, `"status": "declared"`) {
			t.Fatalf("after the refused approval the demo's row is not declared: %d\n%s", code, out)
		}
	})

	t.Run("first run", func(t *testing.T) {
		d := startDemo(t, bin, dir, "--yes")
		d.until(t, "approved; it may reach: sim.sidecar.invalid")
		// Scan the code the demo shows, with the command it prints. The
		// simulator links on its current code only: a scan that lost the
		// race with a rotation is repeated on the next code.
		for try := 1; ; try++ {
			scan := printedCommand(t, d.until(t, "demo scan SNUGSIM1:"), "demo scan")
			code, out := runPrinted(t, bin, scan)
			if code == 0 && strings.Contains(out, "scanned") {
				break
			}
			if try == 3 {
				t.Fatalf("%s = %d\n%s", scan, code, out)
			}
		}
		d.until(t, "linked as Simulated phone")
		d.until(t, "→ 200: 3 threads")
		d.until(t, "t-alice    Alice, 1 message")
		allow := printedCommand(t, d.until(t, "confirms allow "), "confirms allow")
		if code, out := runPrinted(t, bin, allow); code != 0 {
			t.Fatalf("%s = %d\n%s", allow, code, out)
		}
		d.until(t, `→ 201: sent "Hello from the snugd demo" to t-alice`)
		if code := d.wait(t); code != exitOK {
			t.Fatalf("demo = %d\n%s\nstderr:\n%s", code, d.out.String(), d.errb.String())
		}
		if !strings.Contains(d.out.String(), "snugd ctl --data-dir "+dir+" journal --app snug-demo") {
			t.Errorf("the demo does not say where its acts are recorded:\n%s", d.out.String())
		}
		code, out := ctl("journal", "--app", demoApp, "--json")
		if code != 0 {
			t.Fatalf("journal = %d\n%s", code, out)
		}
		for _, want := range []string{`"approve"`, `"confirm-allow"`, `"method": "GET"`, `"method": "POST"`} {
			if !strings.Contains(out, want) {
				t.Errorf("the journal lacks %s:\n%s", want, out)
			}
		}
	})

	t.Run("a second run does only the requests", func(t *testing.T) {
		d := startDemo(t, bin, dir)
		d.until(t, "approved already")
		d.until(t, "linked already")
		deny := printedCommand(t, d.until(t, "confirms deny "), "confirms deny")
		if code, out := runPrinted(t, bin, deny); code != 0 {
			t.Fatalf("%s = %d\n%s", deny, code, out)
		}
		d.until(t, "NET_CONFIRM_DENIED")
		if code := d.wait(t); code != exitNo || strings.Contains(d.out.String(), "demo scan SNUGSIM1:") || strings.Contains(d.out.String(), "proposed") {
			t.Fatalf("second demo = %d; want 1 after the denial, nothing proposed or scanned:\n%s", code, d.out.String())
		}
	})

	t.Run("remove", func(t *testing.T) {
		session := linkdevice.SessionDirOf(filepath.Join(dir, "helpers"), linkdevice.SessionKey{HelperID: "sim", AppID: demoApp, Slot: demoSlot})
		if _, err := os.Stat(session); err != nil {
			t.Fatalf("the demo's session directory: %v", err)
		}
		if code, out := ctl("demo", "--remove"); code != 0 || !strings.Contains(out, "revoked") {
			t.Fatalf("demo --remove = %d\n%s", code, out)
		}
		if _, err := os.Stat(session); !os.IsNotExist(err) {
			t.Errorf("the session directory after --remove: %v, want removed", err)
		}
		if code, out := ctl("connections", demoApp, "--json"); code != 0 || !strings.Contains(out, `"status": "revoked"`) {
			t.Errorf("connections after --remove = %d\n%s", code, out)
		}
		if code, out := ctl("demo", "--remove"); code != 0 || !strings.Contains(out, "no demo to remove") {
			t.Errorf("a second --remove = %d\n%s", code, out)
		}
		if code, out := ctl("demo", "scan", "SNUGSIM1:"+strings.Repeat("A", 32)); code != exitNo || !strings.Contains(out, "no simulator session") {
			t.Errorf("demo scan after --remove = %d\n%s", code, out)
		}
		if code, out := ctl("demo", "scan", "not-a-code"); code != exitUsage || strings.Contains(out, "not-a-code") {
			t.Errorf("demo scan of another text = %d, %q; want 2, the text not repeated", code, out)
		}
	})

	t.Run("after remove a run sets it up again", func(t *testing.T) {
		d := startDemo(t, bin, dir, "--yes")
		d.until(t, "proposed again")
		d.until(t, "being reconnected")
		for try := 1; ; try++ {
			code, out := runPrinted(t, bin, printedCommand(t, d.until(t, "demo scan SNUGSIM1:"), "demo scan"))
			if code == 0 {
				break
			}
			if try == 3 {
				t.Fatalf("scan = %d\n%s", code, out)
			}
		}
		d.until(t, "→ 200: 3 threads")
		if code, out := runPrinted(t, bin, printedCommand(t, d.until(t, "confirms allow "), "confirms allow")); code != 0 {
			t.Fatalf("allow = %d\n%s", code, out)
		}
		if code := d.wait(t); code != exitOK {
			t.Fatalf("demo = %d\n%s", code, d.out.String())
		}
	})
	if strings.Contains(log.String(), "helper_token\":\"") {
		t.Error("the daemon's log names a token value")
	}
}

// TestDemoRequirementIsTheExample: the demo proposes the simulator
// example of api/examples, and it parses.
func TestDemoRequirementIsTheExample(t *testing.T) {
	raw, err := os.ReadFile("../../api/examples/simulator.json")
	if err != nil {
		t.Fatal(err)
	}
	ex, vs := requirement.Parse(raw, requirement.Options{})
	if len(vs) > 0 {
		t.Fatalf("api/examples/simulator.json does not parse: %v", vs)
	}
	demo, vs := requirement.Parse([]byte(demoRequirement), requirement.Options{})
	if len(vs) > 0 {
		t.Fatalf("the demo's requirement does not parse: %v", vs)
	}
	if a, b := demo.Canonical(), ex.Canonical(); a != b {
		t.Errorf("the demo proposes\n%s\nbut the example says\n%s", a, b)
	}
	var v map[string]any
	if json.Unmarshal(raw, &v) != nil || v["slot"] != demoSlot {
		t.Errorf("the example's slot is %v, want %q", v["slot"], demoSlot)
	}
}

// TestCtlDemoLeavesAnotherRowAlone: an app of someone's own that happens
// to be called snug-demo, with a chat slot that is not the simulator, is
// neither approved, nor linked, nor revoked by the demo; and the demo's
// usage errors are refused before anything is done.
func TestCtlDemoLeavesAnotherRowAlone(t *testing.T) {
	td := startDaemon(t)
	other, _ := json.Marshal(map[string]any{
		"slot": "chat", "provider": map[string]any{"name": "Example Chat"}, "kind": "api_key",
		"fields":           []any{map[string]any{"key": "api_key", "label": "API key", "type": "secret"}},
		"declaredApiHosts": []any{"chat.example.com"},
	})
	if _, err := td.d.Proposers().ProposeUser(t.Context(), demoApp, demoSlot, other); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"demo", "--yes"}, {"demo", "--remove"}} {
		if code, out, errOut := td.ctl(t, "", args...); code != exitNo || !strings.Contains(errOut, "not the demo's") {
			t.Errorf("%q = %d, %q, %q; want 1, leaving the row alone", args, code, out, errOut)
		}
	}
	if cns, err := td.d.Grants().Connections(t.Context(), demoApp); err != nil || len(cns) != 1 || cns[0].Status != "declared" {
		t.Errorf("the other row after the demo = %+v, %v; want it declared as it was", cns, err)
	}
	for _, args := range [][]string{{"demo", "scan"}, {"demo", "scan", "X", "--yes"}, {"demo", "run"}, {"demo", "--remove", "--yes"}, {"demo", "--json"}} {
		if code, _, _ := td.ctl(t, "", args...); code != exitUsage {
			t.Errorf("%q = %d, want a usage error", args, code)
		}
	}
}
