package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/snug/snugd/api"
)

// TestCtlHostsInvite: hosts invite prints the invitation once, with what
// to do with it and when it expires; hosts list shows that it waits (name,
// expiry), never its value; the desktop host pairs with it, approved, and
// redeems its token; --json prints the API's answer.
func TestCtlHostsInvite(t *testing.T) {
	td := startDaemon(t)
	code, out, errOut := td.ctl(t, "", "hosts", "invite", "Work laptop")
	if code != exitOK {
		t.Fatalf("hosts invite = %d, %q (stderr %q)", code, out, errOut)
	}
	invitation := regexp.MustCompile(`snugi_[A-Za-z0-9_-]{43}`).FindString(out)
	for _, want := range []string{`invitation for the desktop host "Work laptop":`, "\n    " + invitation + "\n", "pairing invitation", `under the name "Work laptop"`, "cannot be used again", "it expires at ", "(in 10m)", "shown only now"} {
		if invitation == "" || !strings.Contains(out, want) {
			t.Errorf("hosts invite printed %q, want it to hold %q", out, want)
		}
	}
	code, out, _ = td.ctl(t, "", "hosts", "list")
	if code != exitOK || !strings.Contains(out, `"Work laptop" (desktop), invited 0s ago, expires `) || strings.Contains(out, invitation[len("snugi_"):]) {
		t.Errorf("hosts list = %d, %q; want the invitation waiting, without its value", code, out)
	}
	code, out, _ = td.ctl(t, "", "hosts", "--json")
	var hs api.HostsResponse
	if code != exitOK || json.Unmarshal([]byte(out), &hs) != nil || len(hs.Invitations) != 1 || hs.Invitations[0].Name != "Work laptop" || strings.Contains(out, invitation[len("snugi_"):]) {
		t.Errorf("hosts --json = %d, %q; want one invitation, without its value", code, out)
	}

	verifier := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	sum := sha256.Sum256([]byte(verifier))
	var p api.PairResponse
	req := api.PairRequest{Name: "work LAPTOP", Surface: "desktop", Challenge: base64.RawURLEncoding.EncodeToString(sum[:]), Invitation: invitation}
	if status := td.host(t, http.MethodPost, "/v1/hosts/pair", "", req, &p); status != 200 || p.State != "approved" || !p.Invited {
		t.Fatalf("POST /v1/hosts/pair with the invitation = %d, %+v", status, p)
	}
	var r api.RedeemResponse
	if status := td.host(t, http.MethodPost, "/v1/hosts/pair/"+p.PairingID+"/redeem", "", api.RedeemRequest{Verifier: verifier}, &r); status != 200 || r.Token == "" {
		t.Fatalf("redeem = %d, %+v", status, r)
	}
	if status := td.host(t, http.MethodPost, "/v1/hosts/pair", "", req, nil); status != http.StatusForbidden {
		t.Errorf("a second pair request with the used invitation = %d, want 403", status)
	}
	code, out, _ = td.ctl(t, "", "hosts", "list")
	if code != exitOK || !strings.Contains(out, `calling itself "Work laptop"`) || strings.Contains(out, "invitations not used yet") {
		t.Errorf("hosts list after the pairing = %d, %q; want the host paired, no invitation left", code, out)
	}

	code, out, _ = td.ctl(t, "", "hosts", "invite", "Desk", "--json")
	var inv api.InviteResponse
	if code != exitOK || json.Unmarshal([]byte(out), &inv) != nil || !strings.HasPrefix(inv.Invitation, "snugi_") || inv.Name != "Desk" || inv.Surface != "desktop" || inv.ExpiresAt.IsZero() {
		t.Errorf("hosts invite --json = %d, %q; want the API's answer", code, out)
	}
	if code, _, errOut = td.ctl(t, "", "hosts", "invite"); code != exitUsage || !strings.Contains(errOut, "invite needs NAME") {
		t.Errorf("hosts invite without a name = %d, %q; want usage", code, errOut)
	}
	if code, _, errOut = td.ctl(t, "", "hosts", "invite", " padded"); code != exitNo || !strings.Contains(errOut, "name must be") {
		t.Errorf("hosts invite with a padded name = %d, %q; want the refusal", code, errOut)
	}
}
