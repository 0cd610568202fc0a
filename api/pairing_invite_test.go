package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/internal/testutil"
)

// fakeInvitation is spelled as an invitation, and is none.
func fakeInvitation(b byte) string {
	return hostauth.InvitationPrefix + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))
}

// desktopPair asks to pair as a desktop host named name, without an
// invitation.
func desktopPair(c *Client, t *testing.T, name string) (PairResponse, error) {
	t.Helper()
	return c.Pair(t.Context(), PairRequest{Name: name, Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)})
}

// TestInvitedDesktopPairsThroughAFlood is the attack of issue 10 item 6
// through the real server: one local process floods POST /v1/hosts/pair
// as desktop hosts under a fresh name each time (every local process
// looks the same on 127.0.0.1 without an Origin), which displaces the
// request a real desktop host is waiting on; it also spends the pairing
// bucket of the name the real host uses and the failed-authentication
// bucket every local process shares. The host the administrator invited
// still pairs, redeems its token and is served, and the journal says it
// came by invitation.
func TestInvitedDesktopPairsThroughAFlood(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	attacker, host := e.host("", ""), e.host("", "")
	n := 0
	flood := func(count int) {
		t.Helper()
		for range count {
			n++
			e.clock.Advance(time.Millisecond)
			if _, err := desktopPair(attacker, t, fmt.Sprintf("flood %d", n)); err != nil {
				t.Fatalf("flood Pair(%d) = %v", n, err)
			}
		}
	}
	// Today's lane: the waiting request is displaced by fresh names.
	waiting, err := desktopPair(host, t, "Laptop")
	if err != nil {
		t.Fatalf("Pair(waiting) = %v", err)
	}
	flood(2 * hostauth.MaxPendingPairings)
	_, err = e.ctl.ApproveHost(ctx, waiting.Code)
	wantAPIError(t, err, 404, errcode.PairingNotFound)
	// The flood also borrows the name and spends its bucket, and spends
	// the failed-authentication bucket with wrong redeems.
	var last error
	for range pairBurst + 1 {
		_, last = desktopPair(attacker, t, "laptop")
	}
	wantAPIError(t, last, 429, errcode.RateLimited)
	for range authBurst + 1 {
		_, last = attacker.Redeem(ctx, "p_"+strings.Repeat("1", 32), verifier)
	}
	wantAPIError(t, last, 429, errcode.RateLimited)

	inv, err := e.ctl.InviteHost(ctx, "Laptop")
	if err != nil || !strings.HasPrefix(inv.Invitation, hostauth.InvitationPrefix) || inv.Name != "Laptop" || inv.Surface != "desktop" {
		t.Fatalf("InviteHost = %+v, %v", inv, err)
	}
	flood(hostauth.MaxPendingPairings)
	p, err := host.Pair(ctx, PairRequest{Name: "Laptop", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier), Invitation: inv.Invitation})
	if err != nil || p.State != "approved" || !p.Invited || p.Code != "" {
		t.Fatalf("Pair(invited) amid the flood = %+v, %v, want approved and invited, without a code", p, err)
	}
	flood(2 * hostauth.MaxPendingPairings)
	r, err := host.Redeem(ctx, p.PairingID, verifier)
	if err != nil || r.State != "approved" || !strings.HasPrefix(r.Token, hostauth.TokenPrefix) {
		t.Fatalf("Redeem(invited) after the flood = %+v, %v, want the token", r, err)
	}
	if _, err := e.host(r.Token, "").Status(ctx); err != nil {
		t.Errorf("Status with the invited host's token = %v", err)
	}
	hs, err := e.ctl.Hosts(ctx)
	if err != nil || len(hs.Hosts) != 1 || hs.Hosts[0].Name != "Laptop" || len(hs.Invitations) != 0 {
		t.Errorf("Hosts after the invited pairing = %+v, %v, want Laptop paired and no invitation left", hs, err)
	}
	j, err := e.ctl.Journal(ctx, JournalOptions{Kind: "acts"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, en := range j.Entries {
		found = found || en.Act == "host-pair" && strings.Contains(en.Note, p.PairingID) && strings.Contains(en.Note, "by invitation") && strings.Contains(en.Note, "by the administrator")
	}
	if !found {
		t.Errorf("journal acts = %+v, want a host-pair act by the administrator, by invitation, for %s", j.Entries, p.PairingID)
	}
}

// TestInvitationRefusedOverTheAPI: a wrong, used, expired or other name's
// invitation is one fixed 403 that spends from the failed-authentication
// bucket like a wrong verifier (429 past it), while the right one still
// pairs with that bucket empty; an invitation on a web request is 400;
// minting one is the ctl channel's alone.
func TestInvitationRefusedOverTheAPI(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.host("", "")
	used, _ := e.ctl.InviteHost(ctx, "Used")
	if _, err := c.Pair(ctx, PairRequest{Name: "Used", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier), Invitation: used.Invitation}); err != nil {
		t.Fatal(err)
	}
	expired, _ := e.ctl.InviteHost(ctx, "Old")
	e.clock.Advance(hostauth.InvitationTTL)
	good, _ := e.ctl.InviteHost(ctx, "Laptop")
	invited := func(name, invitation string) error {
		_, err := c.Pair(ctx, PairRequest{Name: name, Surface: "desktop", Challenge: testutil.ChallengeOf(verifier), Invitation: invitation})
		return err
	}
	var msgs []string
	for _, tc := range []struct{ name, invitation string }{
		{"Used", used.Invitation}, {"Old", expired.Invitation}, {"Desk", good.Invitation},
		{"Laptop", fakeInvitation(1)},
	} {
		err := invited(tc.name, tc.invitation)
		wantAPIError(t, err, 403, errcode.InvitationInvalid)
		msgs = append(msgs, err.(*Error).Message)
	}
	for _, m := range msgs {
		if m != msgs[0] {
			t.Errorf("INVITATION_INVALID messages differ: %q, %q", msgs[0], m)
		}
	}
	var last error
	for range authBurst {
		last = invited("Laptop", fakeInvitation(2))
	}
	wantAPIError(t, last, 429, errcode.RateLimited)
	if err := invited("laptop", good.Invitation); err != nil {
		t.Errorf("Pair(right invitation) with the failed-authentication bucket spent = %v, want recorded", err)
	}

	webInv, _ := e.ctl.InviteHost(ctx, "Web")
	_, err := e.host("", webOrigin).Pair(ctx, PairRequest{Name: "Web", Surface: "web", Origin: webOrigin, Challenge: testutil.ChallengeOf(verifier), Invitation: webInv.Invitation})
	wantAPIError(t, err, 400, errcode.BadRequest)
	var inv InviteResponse
	err = e.ctl.do(ctx, http.MethodPost, "/v1/hosts/invite", InviteRequest{Name: "Web", Surface: "web"}, &inv)
	wantAPIError(t, err, 400, errcode.BadRequest)
	// Over TCP the route does not exist, paired or not.
	tok := e.pair("desktop", "")
	for _, tk := range []string{"", tok} {
		err := e.host(tk, "").do(ctx, http.MethodPost, "/v1/hosts/invite", InviteRequest{Name: "intruder"}, &inv)
		wantAPIError(t, err, 404, errcode.NotFound)
	}
}

// TestInvitationNeverLoggedNorStored: the invitation is in the ctl's
// answer to invite and nowhere else: not in the database files (only its
// SHA-256), not in the log, not in GET /v1/hosts, which shows that it
// waits (name, expiry).
func TestInvitationNeverLoggedNorStored(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	inv, err := e.ctl.InviteHost(ctx, "Laptop")
	if err != nil {
		t.Fatal(err)
	}
	raw := inv.Invitation[len(hostauth.InvitationPrefix):]
	hs, err := e.ctl.Hosts(ctx)
	if err != nil || len(hs.Invitations) != 1 || hs.Invitations[0].Name != "Laptop" || hs.Invitations[0].InvitationID != inv.InvitationID || !hs.Invitations[0].ExpiresAt.Equal(inv.ExpiresAt.Time) {
		t.Fatalf("Hosts = %+v, %v, want the invitation listed", hs, err)
	}
	var body json.RawMessage
	if err := e.ctl.do(ctx, http.MethodGet, "/v1/hosts", nil, &body); err != nil || strings.Contains(string(body), raw) {
		t.Errorf("GET /v1/hosts = %s, %v, want it without the invitation", body, err)
	}
	c := e.host("", "")
	if _, err := c.Pair(ctx, PairRequest{Name: "Other", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier), Invitation: inv.Invitation}); err == nil {
		t.Fatal("Pair under another name succeeded")
	}
	p, err := c.Pair(ctx, PairRequest{Name: "Laptop", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier), Invitation: inv.Invitation})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Redeem(ctx, p.PairingID, verifier); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"snugd.db", "snugd.db-wal", "snugd.db-shm"} {
		b, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(raw)) {
			t.Errorf("%s holds the invitation", name)
		}
	}
	if strings.Contains(e.logs.String(), raw) {
		t.Errorf("the log holds the invitation:\n%s", e.logs)
	}
}
