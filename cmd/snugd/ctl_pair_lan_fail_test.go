package main

import (
	"strings"
	"testing"
)

// TestCtlPairLANFailureSaysWhereAndWhatNext: a pairing that fails names
// the bridge's address, what happened and the next step, APP and SLOT
// filled in. Here nothing answers at the collected address (the test's
// dialer reaches only the simulated bridge's).
func TestCtlPairLANFailureSaysWhereAndWhatNext(t *testing.T) {
	dir, _, _ := startHueDaemon(t)
	const elsewhere = "192.168.1.77"
	code, out, errOut := runCmd(t, "", "ctl", "--data-dir", dir, "pair", "lan", "app", "hue", "--address", elsewhere, "--yes")
	want := "snugd ctl pair lan: pairing with the bridge at " + elsewhere + " failed: no device answered over HTTPS at this address\n" +
		"next: check that the bridge is on and on this network, then snugd ctl pair lan app hue; " +
		"snugd ctl lan discover lists the bridges this computer hears; for another address, snugd ctl pair lan app hue --address A\n"
	if code != exitNo || !strings.HasSuffix(errOut, want) {
		t.Errorf("pair lan at an address nothing answers = %d\n%s%s\nwant the error to end %q", code, out, errOut, want)
	}
}

// TestLANFailureNextSteps: each of the pairing's fixed sentences gets its
// own next step.
func TestLANFailureNextSteps(t *testing.T) {
	for _, tc := range []struct{ msg, next string }{
		{"the link button was not pressed in time", "press the round link button on the bridge within 30 seconds of the prompt: snugd ctl pair lan a s"},
		{"the device at this address does not answer like a Hue bridge", "snugd ctl lan discover lists the bridges this computer hears; for another address, snugd ctl pair lan a s --address A"},
		{"no network interface can reach the local network", "connect this computer to the bridge's network, then snugd ctl pair lan a s"},
		{"the bridge's certificate changed", "if the bridge was reset, snugd ctl pair lan a s --repin shows the pinned and the presented certificates before pinning the new one"},
		{"the bridge refused the pairing request", "try again: snugd ctl pair lan a s"},
	} {
		what, next := lanFailure("failed", tc.msg, "192.168.1.20", "a", "s")
		if what != "pairing with the bridge at 192.168.1.20 failed: "+tc.msg || next != tc.next {
			t.Errorf("lanFailure(%q) = %q, %q; want next %q", tc.msg, what, next, tc.next)
		}
	}
	if what, _ := lanFailure("expired", "", "", "a", "s"); what != "pairing with the bridge expired: no reason given" {
		t.Errorf("lanFailure without an address or a reason = %q", what)
	}
}
