package main

import (
	"bytes"
	"strings"
	"testing"
)

// ctlOnTerminal runs snugd ctl with a terminal as its stdin, answering
// its question with answer.
func (td *testDaemon) ctlOnTerminal(t *testing.T, answer string, args ...string) (int, string, string) {
	t.Helper()
	m, s := openPTY(t)
	if !interactive(s) {
		t.Fatal("the pty slave is not a character device")
	}
	if _, err := m.WriteString(answer + "\n"); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	e := env{stdin: s, stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code := dispatch(t.Context(), e, append([]string{"ctl", "--data-dir", td.dir}, args...))
	return code, out.String(), errb.String()
}

// TestCtlAsksOnATerminal: on a terminal, hosts approve and approve show
// what they would act on and act only on "y".
func TestCtlAsksOnATerminal(t *testing.T) {
	td := startDaemon(t)
	p, _ := td.pair(t, "Test Desktop")
	code, out, _ := td.ctlOnTerminal(t, "n", "hosts", "approve", p.Code)
	if code != exitNo || !strings.Contains(out, "approve this host? [y/N]") {
		t.Errorf("hosts approve, answered n = %d, %q", code, out)
	}
	if ps, _ := td.d.Hosts().Pending(t.Context()); len(ps) != 1 {
		t.Fatalf("pending after n = %d, want 1", len(ps))
	}
	if code, out, errOut := td.ctlOnTerminal(t, "y", "hosts", "approve", p.Code); code != exitOK || !strings.Contains(out, "is approved") {
		t.Errorf("hosts approve, answered y = %d, %q, %q", code, out, errOut)
	}

	td.propose(t, "trader")
	code, out, _ = td.ctlOnTerminal(t, "", "approve", "trader", "coinbase-exchange")
	if code != exitNo || !strings.Contains(out, "as shown? [y/N]") {
		t.Errorf("approve, answered nothing = %d, %q", code, out)
	}
	if c, _ := td.d.Grants().Connection(t.Context(), "trader", "coinbase-exchange"); c.Status != "declared" {
		t.Fatalf("after no: %s, want declared", c.Status)
	}
	if code, out, errOut := td.ctlOnTerminal(t, "yes", "approve", "trader", "coinbase-exchange"); code != exitOK || !strings.Contains(out, "approved; it may reach") {
		t.Errorf("approve, answered yes = %d, %q, %q", code, out, errOut)
	}
}
