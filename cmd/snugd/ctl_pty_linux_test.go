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

// TestCredentialsPromptSendsCeremoniesOn: on a terminal, credentials set
// of a row whose only step left is a pairing prompts for nothing and
// names the ceremony; a row with fields to type still prompts.
func TestCredentialsPromptSendsCeremoniesOn(t *testing.T) {
	td := startDaemon(t)
	hintRows(t, td)
	for slot, want := range map[string]string{
		"bank": "app/bank has no field left to type: not paired yet: snugd ctl pair claim app bank",
		"hue":  "app/hue has no field left to type: not paired yet: snugd ctl pair lan app hue",
		"chat": "app/chat has no field left to type: not paired yet: snugd ctl pair link app chat",
	} {
		code, out, errOut := td.ctlOnTerminal(t, "typed-by-hand", "credentials", "set", "app", slot)
		if code != exitNo || !strings.Contains(errOut, want) || strings.Contains(errOut, "typing is not shown") || strings.Contains(out, "stored") {
			t.Errorf("credentials set app %s on a terminal = %d, %q, %q; want %q", slot, code, out, errOut, want)
		}
	}
	code, out, errOut := td.ctlOnTerminal(t, "my-client", "credentials", "set", "player", "music")
	if code != exitOK || !strings.Contains(errOut, "Client ID") || !strings.Contains(out, "not signed in yet: snugd ctl connect player music") {
		t.Errorf("credentials set player music on a terminal = %d, %q, %q", code, out, errOut)
	}
	// Waiting for its sign-in, the row still prompts: a wrong client ID
	// is corrected here.
	code, out, errOut = td.ctlOnTerminal(t, "other-client", "credentials", "set", "player", "music")
	if code != exitOK || !strings.Contains(errOut, "Client ID") || !strings.Contains(out, "stored 1 value") {
		t.Errorf("credentials set player music again = %d, %q, %q", code, out, errOut)
	}
}
