package hostauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/internal/testutil"
)

// invite mints an invitation for name and returns its value.
func invite(t testing.TB, bk *Book, name string) string {
	t.Helper()
	inv, tok, err := bk.Invite(t.Context(), name, "")
	if err != nil {
		t.Fatalf("Invite(%q) = %v", name, err)
	}
	if inv.Name != name || inv.Surface != SurfaceDesktop || !strings.HasPrefix(tok.Reveal(), InvitationPrefix) || len(tok.Reveal()) != invitationChars {
		t.Fatalf("Invite(%q) = %+v with a %d-character value, want a desktop invitation for the name", name, inv, len(tok.Reveal()))
	}
	return tok.Reveal()
}

func invitedRequest(name, invitation string) PairRequest {
	return PairRequest{Name: name, Surface: SurfaceDesktop, Challenge: testutil.ChallengeOf(testVerifer), Invitation: InvitationTokenOf(invitation)}
}

// TestInvitedPairingPassesADesktopFlood is the attack of issue 10 item 6:
// one local process asks to pair as a desktop host under a fresh name each
// time (every caller is 127.0.0.1 without an Origin, so nothing tells it
// apart) and displaces the request a real desktop host is waiting on.
// The host the administrator invited pairs amid the same flood and
// redeems its token: its request is approved when recorded, takes no
// place among the waiting requests, and no later flood displaces it.
func TestInvitedPairingPassesADesktopFlood(t *testing.T) {
	bk, clock, _ := newBook(t)
	ctx := t.Context()
	flood := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			clock.Advance(time.Millisecond)
			if _, err := bk.Pair(ctx, PairRequest{Name: fmt.Sprintf("flood %d", i), Surface: SurfaceDesktop, Challenge: testutil.ChallengeOf(testVerifer)}, ""); err != nil {
				t.Fatalf("Pair(flood %d) = %v", i, err)
			}
		}
	}
	// The attack works on requests that wait for a code: the real host's
	// is displaced, and its code approves nothing.
	waiting, err := bk.Pair(ctx, PairRequest{Name: "Real desktop", Surface: SurfaceDesktop, Challenge: testutil.ChallengeOf(testVerifer)}, "")
	if err != nil {
		t.Fatal(err)
	}
	flood(0, 2*MaxPendingPairings)
	if _, err := bk.Approve(ctx, waiting.Code); !errors.Is(err, errcode.PairingNotFound) {
		t.Fatalf("Approve(waiting request) after the flood = %v, want PAIRING_NOT_FOUND: the flood should have displaced it", err)
	}
	// The invited host pairs amid the flood, and stays.
	invitation := invite(t, bk, "Real desktop")
	flood(100, MaxPendingPairings)
	p, err := bk.Pair(ctx, invitedRequest("real DESKTOP", invitation), "")
	if err != nil {
		t.Fatalf("Pair(invited) amid the flood = %v, want it recorded", err)
	}
	if p.State != PairingApproved || !p.Invited || p.Name != "Real desktop" {
		t.Fatalf("Pair(invited) = %+v, want approved, invited, under the administrator's name", p)
	}
	flood(200, 3*MaxPendingPairings)
	pending, _ := bk.Pending(ctx)
	if len(pending) != MaxPendingPairings {
		t.Errorf("%d desktop requests waiting, want the cap %d (the invited one is not among them)", len(pending), MaxPendingPairings)
	}
	r, err := bk.Redeem(ctx, p.ID, testVerifer, "")
	if err != nil || r.State != PairingApproved || !strings.HasPrefix(r.Token.Reveal(), TokenPrefix) {
		t.Fatalf("Redeem(invited) after the flood = %v, %v, want approved with a token", r.State, err)
	}
	if h, err := bk.Authenticate(ctx, r.Token.Reveal(), ""); err != nil || h.Name != "Real desktop" || h.Surface != SurfaceDesktop {
		t.Errorf("Authenticate(invited host's token) = %+v, %v", h, err)
	}
}

// TestInvitationRefusals: an invitation pairs one request, under its own
// name, on the desktop surface, before it expires; every other use is the
// one INVITATION_INVALID (or BAD_REQUEST for what is not spelled as an
// invitation, and for a web request), and a refused request records
// nothing.
func TestInvitationRefusals(t *testing.T) {
	bk, clock, _ := newBook(t)
	ctx := t.Context()
	used := invite(t, bk, "Laptop")
	if _, err := bk.Pair(ctx, invitedRequest("Laptop", used), ""); err != nil {
		t.Fatalf("Pair(invited) = %v", err)
	}
	expired := invite(t, bk, "Tower")
	clock.Advance(InvitationTTL)
	named := invite(t, bk, "Desk")
	fresh := invite(t, bk, "Fresh")
	unknown := InvitationPrefix + strings.Repeat("A", 43)
	web := PairRequest{Name: "Fresh", Surface: SurfaceWeb, Origin: webOrigin, Challenge: testutil.ChallengeOf(testVerifer), Invitation: InvitationTokenOf(fresh)}
	tests := []struct {
		name string
		req  PairRequest
		want errcode.Code
	}{
		{"used already", invitedRequest("Laptop", used), errcode.InvitationInvalid},
		{"another name's", invitedRequest("Laptop", named), errcode.InvitationInvalid},
		{"a prefix of the name", invitedRequest("Des", named), errcode.InvitationInvalid},
		{"expired", invitedRequest("Tower", expired), errcode.InvitationInvalid},
		{"never issued", invitedRequest("Fresh", unknown), errcode.InvitationInvalid},
		{"not spelled as one", invitedRequest("Fresh", fresh[:len(fresh)-1]), errcode.BadRequest},
		{"without the prefix", invitedRequest("Fresh", "snugh_"+fresh[len(InvitationPrefix):]), errcode.BadRequest},
		{"on the web surface", web, errcode.BadRequest},
	}
	var messages []string
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			origin := tc.req.Origin
			_, err := bk.Pair(ctx, tc.req, origin)
			testutil.WantCode(t, err, tc.want)
			if tc.want == errcode.InvitationInvalid {
				messages = append(messages, err.Error())
			}
		})
	}
	for _, m := range messages[1:] {
		if m != messages[0] {
			t.Errorf("INVITATION_INVALID answers differ: %q and %q, want one fixed answer", messages[0], m)
		}
	}
	if pending, _ := bk.Pending(ctx); len(pending) != 0 {
		t.Errorf("refused invited requests left %d requests waiting, want none", len(pending))
	}
	// The name-mismatched and malformed attempts did not use up the
	// invitations they carried.
	for name, inv := range map[string]string{"Desk": named, "Fresh": fresh} {
		if p, err := bk.Pair(ctx, invitedRequest(name, inv), ""); err != nil || !p.Invited {
			t.Errorf("Pair(%q, its own invitation) after refused attempts = %+v, %v, want it recorded", name, p, err)
		}
	}
}

// TestInvitationExpiresWithTheClock: usable until InvitationTTL has
// passed, not at it (synctest's clock, as the daemon's).
func TestInvitationExpiresWithTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := store.Open(t.Context(), store.Options{Dir: filepath.Join(t.TempDir(), "data")})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		bk := New(st, nil, nil)
		early, late := invite(t, bk, "Early"), invite(t, bk, "Late")
		time.Sleep(InvitationTTL - time.Second)
		if p, err := bk.Pair(t.Context(), invitedRequest("Early", early), ""); err != nil || !p.Invited {
			t.Errorf("Pair a second before the expiry = %+v, %v, want recorded", p, err)
		}
		time.Sleep(time.Second)
		_, err = bk.Pair(t.Context(), invitedRequest("Late", late), "")
		testutil.WantCode(t, err, errcode.InvitationInvalid)
		if invs, _ := bk.Invitations(t.Context()); len(invs) != 0 {
			t.Errorf("Invitations() after the expiry = %+v, want none", invs)
		}
	})
}

// TestInviteAgainReplacesAndCaps: inviting a name again withdraws its
// earlier invitation (an administrator who lost one invites again); at
// most MaxInvitations names wait at once.
func TestInviteAgainReplacesAndCaps(t *testing.T) {
	bk, _, _ := newBook(t)
	ctx := t.Context()
	first := invite(t, bk, "Laptop")
	second := invite(t, bk, "LAPTOP")
	_, err := bk.Pair(ctx, invitedRequest("Laptop", first), "")
	testutil.WantCode(t, err, errcode.InvitationInvalid)
	for i := range MaxInvitations - 1 {
		invite(t, bk, fmt.Sprintf("host %d", i))
	}
	_, _, err = bk.Invite(ctx, "one too many", SurfaceDesktop)
	testutil.WantCode(t, err, errcode.InvitationCapReached)
	invite(t, bk, "host 0") // replacing a name's invitation is within the cap
	invs, err := bk.Invitations(ctx)
	if err != nil || len(invs) != MaxInvitations {
		t.Fatalf("Invitations() = %d, %v, want %d", len(invs), err, MaxInvitations)
	}
	if p, err := bk.Pair(ctx, invitedRequest("laptop", second), ""); err != nil || !p.Invited {
		t.Errorf("Pair(the second invitation) = %+v, %v, want recorded", p, err)
	}
	// A used invitation frees its place.
	invite(t, bk, "one more")
	for _, bad := range []struct {
		name    string
		surface Surface
	}{{"", SurfaceDesktop}, {" padded", SurfaceDesktop}, {"web", SurfaceWeb}, {"bidi \u202e", SurfaceDesktop}} {
		_, _, err := bk.Invite(ctx, bad.name, bad.surface)
		testutil.WantCode(t, err, errcode.BadRequest)
	}
}

// TestInvitationNeverStoredNorLogged: the database files hold the
// invitation's SHA-256, never the invitation; the log holds neither,
// through minting, a refused use, pairing and redemption.
func TestInvitationNeverStoredNorLogged(t *testing.T) {
	bk, _, logs := newBook(t)
	ctx := t.Context()
	invitation := invite(t, bk, "Laptop")
	if _, err := bk.Pair(ctx, invitedRequest("Other", invitation), ""); err == nil {
		t.Fatal("Pair under another name succeeded")
	}
	p, err := bk.Pair(ctx, invitedRequest("Laptop", invitation), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bk.Redeem(ctx, p.ID, testVerifer, ""); err != nil {
		t.Fatal(err)
	}
	raw := invitation[len(InvitationPrefix):]
	sum := sha256.Sum256([]byte(invitation))
	hashSeen := false
	for _, name := range []string{store.DBFile, store.DBFile + "-wal"} {
		b, err := os.ReadFile(filepath.Join(bk.store.Dir(), name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(raw)) {
			t.Errorf("%s holds the invitation", name)
		}
		hashSeen = hashSeen || bytes.Contains(b, sum[:])
	}
	if !hashSeen {
		t.Errorf("no database file holds the invitation's SHA-256")
	}
	if strings.Contains(logs.String(), raw) || strings.Contains(logs.String(), fmt.Sprintf("%x", sum[:8])) {
		t.Errorf("the log holds the invitation or its hash:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "pairing recorded by invitation") {
		t.Errorf("the log does not say a pairing came by invitation:\n%s", logs)
	}
}

func TestInvitationTokenRedacts(t *testing.T) {
	tok := InvitationTokenOf("snugi_secretsecret")
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "invitation", tok, "req", PairRequest{Invitation: tok})
	j, _ := json.Marshal(PairRequest{Invitation: tok})
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%+v %#v %s %q", tok, tok, tok, tok), string(j), logs.String(), fmt.Sprintf("%+v", PairRequest{Invitation: tok})} {
		if strings.Contains(s, "secret") {
			t.Errorf("InvitationToken printed as %q, want it redacted", s)
		}
	}
	if tok.Reveal() != "snugi_secretsecret" {
		t.Errorf("Reveal() = %q", tok.Reveal())
	}
}

// FuzzValidInvitation: what passes is the prefix and canonical BASE64URL
// of 32 bytes, and a pairing request carrying anything else is never
// recorded invited.
func FuzzValidInvitation(f *testing.F) {
	for _, s := range []string{InvitationPrefix + strings.Repeat("A", 43), InvitationPrefix + strings.Repeat("_", 43), InvitationPrefix + strings.Repeat("A", 42) + "B", "snugh_" + strings.Repeat("A", 43), InvitationPrefix, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !validInvitation(s) {
			return
		}
		if len(s) != invitationChars || !strings.HasPrefix(s, InvitationPrefix) || strings.Trim(s[len(InvitationPrefix):], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Fatalf("validInvitation(%q) = true", s)
		}
	})
}

// TestInvitedPairingKeepsHistory: an invited pairing clears out only
// finished requests older than their history, so a host that was just
// denied still learns so when it polls.
func TestInvitedPairingKeepsHistory(t *testing.T) {
	bk, _, _ := newBook(t)
	ctx := t.Context()
	denied, err := bk.Pair(ctx, PairRequest{Name: "other desktop", Surface: SurfaceDesktop, Challenge: testutil.ChallengeOf(testVerifer)}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bk.Deny(ctx, denied.Code); err != nil {
		t.Fatal(err)
	}
	if _, err := bk.Pair(ctx, invitedRequest("Real desktop", invite(t, bk, "Real desktop")), ""); err != nil {
		t.Fatalf("Pair(invited) = %v", err)
	}
	r, err := bk.Redeem(ctx, denied.ID, testVerifer, "")
	if err != nil || r.State != PairingDenied {
		t.Fatalf("Redeem(denied request) after an invited pairing = %v, %v, want denied", r.State, err)
	}
}
