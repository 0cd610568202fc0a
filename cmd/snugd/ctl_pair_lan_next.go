package main

import (
	"fmt"

	"github.com/snug/snugd/lan"
)

// lanFailure is what snugd ctl pair lan prints when a pairing did not
// end paired: what happened, with the bridge's address and the flow's
// fixed sentence, and the next step, APP and SLOT filled in. addr is ""
// when the row holds none.
func lanFailure(state, msg, addr, appID, slot string) (what, next string) {
	at := "the bridge"
	if addr != "" {
		at = "the bridge at " + addr
	}
	again := fmt.Sprintf("snugd ctl pair lan %s %s", appID, slot)
	elsewhere := fmt.Sprintf("snugd ctl lan discover lists the bridges this computer hears; for another address, snugd ctl pair lan %s %s --address A", appID, slot)
	switch msg {
	case lan.ErrLinkTimeout.Error():
		next = "press the round link button on the bridge within 30 seconds of the prompt: " + again
	case lan.ErrUnreachable.Error(), lan.ErrVanished.Error():
		next = "check that the bridge is on and on this network, then " + again + "; " + elsewhere
	case lan.ErrNotBridge.Error(), lan.ErrNotPrivate.Error():
		next = elsewhere
	case lan.ErrNoInterface.Error():
		next = "connect this computer to the bridge's network, then " + again
	case lan.ErrCertificateChanged.Error():
		next = "if the bridge was reset, " + again + " --repin shows the pinned and the presented certificates before pinning the new one"
	default: // refused, a malformed answer, expired, a newer flow, snugd stopped
		next = "try again: " + again
	}
	if msg == "" {
		msg = "no reason given"
	}
	return fmt.Sprintf("pairing with %s %s: %s", at, state, msg), next
}
