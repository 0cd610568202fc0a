package main

import (
	"strings"
	"testing"

	"github.com/snug/snugd/api"
)

// TestCtlPlainWords: what ctl prints of a review and of the journal is in
// plain words: no review posture, no pairing family with "still owed",
// no gate id after a code.
func TestCtlPlainWords(t *testing.T) {
	td := startDaemon(t)
	hintRows(t, td) // approved rows of each kind (ctl_hints_test.go)
	for _, tc := range []struct{ app, slot, want string }{
		{"app", "bank", "pairing      not done yet: claim a SimpleFIN setup token: snugd ctl pair claim app bank\n"},
		{"app", "hue", "pairing      not done yet: press the bridge's link button: snugd ctl pair lan app hue\n"},
		{"app", "chat", "pairing      not done yet: link the device by scanning its QR code: snugd ctl pair link app chat\n"},
		{"trader", "coinbase-exchange", "proposed by  user (entered on this device)\n"},
	} {
		code, out, errOut := td.ctl(t, "", "review", tc.app, tc.slot)
		if code != exitOK || !strings.Contains(out, tc.want) {
			t.Errorf("review %s %s = %d, lacks %q:\n%s%s", tc.app, tc.slot, code, tc.want, out, errOut)
		}
		for _, jargon := range []string{"posture", "still owed", "token-claim", "exchange (", "device-link", "after approval"} {
			if strings.Contains(out, jargon) {
				t.Errorf("review %s %s says %q:\n%s", tc.app, tc.slot, jargon, out)
			}
		}
	}

	row := journalRow(api.JournalEntryJSON{AppID: "a", Slot: "s", Outcome: "refused", Code: "NET_SSRF_BLOCKED", Gate: "ssrf"})
	if got := row[len(row)-1]; got != "NET_SSRF_BLOCKED at the address check" {
		t.Errorf("journal detail = %q, want the gate in plain words", got)
	}
	for _, g := range []string{"shape", "resolution", "binding", "grant", "ceiling", "ssrf", "confirm", "local", "inject", "fetch", "read"} {
		if w := gateWords(g); w == g {
			t.Errorf("gateWords(%q) = %q: no plain words", g, w)
		}
	}
}
