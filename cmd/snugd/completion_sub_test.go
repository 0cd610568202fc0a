package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCompletionSecondWords: after a ctl command that takes a second
// word, the completions offer those words (read from the command's
// synopsis, so a new one is offered without a second list to keep).
func TestCompletionSecondWords(t *testing.T) {
	subs := ctlSubWords()
	for cmd, want := range map[string]string{
		"hosts": "list approve deny invite revoke", "pair": "claim lan link", "credentials": "set",
		"apps": "share unshare", "confirms": "allow deny", "providers": "show", "lan": "discover", "template": "render",
	} {
		if got := strings.Join(subs[cmd], " "); got != want {
			t.Errorf("ctlSubWords()[%s] = %q, want %q", cmd, got, want)
		}
	}
	for _, cmd := range []string{"status", "approve", "connect", "journal"} {
		if w, ok := subs[cmd]; ok {
			t.Errorf("ctlSubWords()[%s] = %q, want none (it takes arguments, not words)", cmd, w)
		}
	}

	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	code, script, _ := runCmd(t, "", "completion", "bash")
	if code != exitOK {
		t.Fatal("completion bash failed")
	}
	complete := func(words ...string) string {
		cmd := exec.Command("bash", "-c", script+`
COMP_WORDS=(`+strings.Join(words, " ")+`); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _snugd; echo "${COMPREPLY[*]}"`)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash completion %v: %v", words, err)
		}
		return strings.TrimSpace(string(b))
	}
	for _, tc := range []struct{ words, want string }{
		{"snugd ctl hosts ap", "approve"},
		{"snugd ctl pair l", "lan link"},
		{"snugd ctl credentials s", "set"},
		{"snugd ctl apps sh", "share"},
		{"snugd ctl providers sh", "show"},
		{"snugd ctl demo sc", "scan"},
		{"snugd ctl approve ap", ""}, // an APP, not a word
	} {
		if got := complete(strings.Fields(tc.words)...); got != tc.want {
			t.Errorf("completing %q = %q, want %q", tc.words, got, tc.want)
		}
	}
	for _, shell := range []string{"zsh", "fish"} {
		code, out, _ := runCmd(t, "", "completion", shell)
		if code != exitOK || !strings.Contains(out, "claim lan link") {
			t.Errorf("completion %s = %d, lacks pair's words", shell, code)
		}
	}
}
