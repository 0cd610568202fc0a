package api

import (
	"bytes"
	"errors"
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

func wantAPIError(t *testing.T, err error, status int, code errcode.Code) {
	t.Helper()
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != status || ae.Code != code {
		t.Fatalf("error = %v, want HTTP %d %s", err, status, code)
	}
}

// TestPairingOverTheAPI walks the protocol as a web host does: pair with
// a challenge, poll redeem while pending, the administrator approves over
// ctl, redeem with the verifier once; the token works only from its
// origin; unpairing takes effect at once.
func TestPairingOverTheAPI(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	page := e.host("", webOrigin)
	p, err := page.Pair(ctx, PairRequest{Name: "Snug web", Surface: "web", Origin: webOrigin, Challenge: testutil.ChallengeOf(verifier)})
	if err != nil {
		t.Fatalf("Pair: %v", err)
	}
	if len(p.Code) != 9 || !p.ExpiresAt.After(e.clock.Now()) {
		t.Fatalf("Pair = %+v", p)
	}
	if r, err := page.Redeem(ctx, p.PairingID, verifier); err != nil || r.State != "pending" || r.Token != "" {
		t.Fatalf("Redeem(pending) = %+v, %v", r, err)
	}
	// A wrong verifier learns nothing.
	_, err = page.Redeem(ctx, p.PairingID, strings.Repeat("v", 43))
	wantAPIError(t, err, 403, errcode.VerifierMismatch)
	// The ctl socket lists and approves it.
	hs, err := e.ctl.Hosts(ctx)
	if err != nil || len(hs.Pending) != 1 || hs.Pending[0].Origin != webOrigin || hs.Pending[0].Name != "Snug web" {
		t.Fatalf("Hosts = %+v, %v", hs, err)
	}
	a, err := e.ctl.ApproveHost(ctx, p.Code)
	if err != nil || a.State != "approved" || a.Origin != webOrigin {
		t.Fatalf("ApproveHost = %+v, %v", a, err)
	}
	r, err := page.Redeem(ctx, p.PairingID, verifier)
	if err != nil || r.State != "approved" || !strings.HasPrefix(r.Token, "snugh_") {
		t.Fatalf("Redeem(approved) = %+v, %v", r, err)
	}
	// Exactly once.
	_, err = page.Redeem(ctx, p.PairingID, verifier)
	wantAPIError(t, err, 409, errcode.PairingRedeemed)

	web := e.host(r.Token, webOrigin)
	if _, err := web.Status(ctx); err != nil {
		t.Fatalf("Status with the new token: %v", err)
	}
	_, err = e.host(r.Token, "https://evil.example").Status(ctx)
	wantAPIError(t, err, 401, errcode.NotPaired) // a page elsewhere learns only that it is not paired
	_, err = e.host(r.Token, "").Status(ctx)
	wantAPIError(t, err, 403, errcode.Forbidden)

	hs, _ = e.ctl.Hosts(ctx)
	if len(hs.Hosts) != 1 || hs.Hosts[0].Origin != webOrigin || len(hs.Pending) != 0 {
		t.Fatalf("Hosts after pairing = %+v", hs)
	}
	if err := e.ctl.DeleteHost(ctx, hs.Hosts[0].HostID); err != nil {
		t.Fatalf("DeleteHost: %v", err)
	}
	_, err = web.Status(ctx)
	wantAPIError(t, err, 401, errcode.NotPaired) // the origin is no longer paired at all
	err = web.Events(ctx, func(Event) error { return nil })
	wantAPIError(t, err, 401, errcode.NotPaired)
	err = e.ctl.DeleteHost(ctx, hs.Hosts[0].HostID)
	wantAPIError(t, err, 404, errcode.HostNotFound)
}

// TestDesktopRevokedAtOnce: a desktop token is refused the moment its host
// is deleted, on an open keep-alive connection too.
func TestDesktopRevokedAtOnce(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	tok := e.pair("desktop", "")
	c := e.host(tok, "")
	if _, err := c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	hs, _ := e.ctl.Hosts(ctx)
	if err := e.ctl.DeleteHost(ctx, hs.Hosts[0].HostID); err != nil {
		t.Fatal(err)
	}
	_, err := c.Status(ctx)
	wantAPIError(t, err, 401, errcode.Unauthorized)
}

// TestApproveOnlyOverCtl: no TCP caller, paired or not, can approve or
// deny a pairing code.
func TestApproveOnlyOverCtl(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	desk := e.pair("desktop", "")
	p, err := e.host("", "").Pair(ctx, PairRequest{Name: "intruder", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/hosts/approve", "/v1/hosts/deny"} {
		for _, tok := range []string{"", desk} {
			c := e.host(tok, "")
			var out DecisionResponse
			err := c.do(ctx, http.MethodPost, path, CodeRequest{Code: p.Code}, &out)
			wantAPIError(t, err, 404, errcode.NotFound)
		}
	}
	if r, err := e.host("", "").Redeem(ctx, p.PairingID, verifier); err != nil || r.State != "pending" {
		t.Errorf("Redeem after TCP approval attempts = %+v, %v, want still pending", r, err)
	}
}

// TestPairingExpiryOverTheAPI: an unapproved request expires after the
// pairing TTL and can no longer be approved.
func TestPairingExpiryOverTheAPI(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.host("", "")
	p, err := c.Pair(ctx, PairRequest{Name: "slow", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(hostauth.PairingTTL)
	if r, err := c.Redeem(ctx, p.PairingID, verifier); err != nil || r.State != "expired" {
		t.Errorf("Redeem after the TTL = %+v, %v, want expired", r, err)
	}
	_, err = e.ctl.ApproveHost(ctx, p.Code)
	wantAPIError(t, err, 404, errcode.PairingNotFound)
}

// TestTokenHashStoredNeverToken: grep the database files for the token.
func TestTokenHashStoredNeverToken(t *testing.T) {
	e := newEnv(t)
	tok := e.pair("web", webOrigin)
	if _, err := e.host(tok, webOrigin).Status(t.Context()); err != nil {
		t.Fatal(err)
	}
	raw := tok[len("snugh_"):]
	for _, name := range []string{"snugd.db", "snugd.db-wal", "snugd.db-shm"} {
		b, err := os.ReadFile(filepath.Join(e.dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(raw)) || bytes.Contains(b, []byte(verifier)) {
			t.Errorf("%s holds the token or the verifier", name)
		}
	}
	if strings.Contains(e.logs.String(), raw) {
		t.Errorf("the log holds the token")
	}
}

// TestRedeemFailuresRateLimited: wrong verifiers count as failed
// authentications of the caller's origin.
func TestRedeemFailuresRateLimited(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.host("", "")
	var last error
	for range authBurst + 1 {
		_, last = c.Redeem(ctx, "p_"+strings.Repeat("1", 32), verifier)
	}
	wantAPIError(t, last, 429, errcode.RateLimited)
	e.clock.Advance(time.Minute)
	_, err := c.Redeem(ctx, "p_"+strings.Repeat("1", 32), verifier)
	wantAPIError(t, err, 404, errcode.PairingNotFound)
}

// TestCorrectRedeemAfterFailureBudget: a local process that spends the
// shared failure budget of callers without an Origin (wrong redeems)
// cannot keep a desktop host from its token: the right verifier is never
// rate-limited. Before, step 7 answered the right verifier 429 too.
func TestCorrectRedeemAfterFailureBudget(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.host("", "")
	p, err := c.Pair(ctx, PairRequest{Name: "Real desktop", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)})
	if err != nil {
		t.Fatalf("Pair: %v", err)
	}
	if _, err := e.ctl.ApproveHost(ctx, p.Code); err != nil {
		t.Fatalf("ApproveHost: %v", err)
	}
	attacker := e.host("", "")
	var last error
	for range authBurst + 1 {
		_, last = attacker.Redeem(ctx, "p_"+strings.Repeat("1", 32), verifier)
	}
	wantAPIError(t, last, 429, errcode.RateLimited)
	r, err := c.Redeem(ctx, p.PairingID, verifier)
	if err != nil || r.State != "approved" || r.Token == "" {
		t.Fatalf("Redeem with the right verifier after the budget is spent = %+v, %v, want the token", r, err)
	}
}

// TestWrongVerifiersCountedPerPairing: wrong verifiers against one
// pairing deny it at the fifth, whatever the origin's budget says; the
// right verifier then gets the denial, not a token.
func TestWrongVerifiersCountedPerPairing(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := e.host("", "")
	p, err := c.Pair(ctx, PairRequest{Name: "Desk", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)})
	if err != nil {
		t.Fatalf("Pair: %v", err)
	}
	wrong := strings.Repeat("w", 43)
	for range hostauth.MaxVerifierFailures {
		_, err := c.Redeem(ctx, p.PairingID, wrong)
		wantAPIError(t, err, 403, errcode.VerifierMismatch)
	}
	if _, err := e.ctl.ApproveHost(ctx, p.Code); err == nil {
		t.Errorf("ApproveHost after %d wrong verifiers succeeded: the pairing should be denied", hostauth.MaxVerifierFailures)
	}
	r, err := c.Redeem(ctx, p.PairingID, verifier)
	if err != nil || r.State != "denied" || r.Token != "" {
		t.Errorf("Redeem after the denial = %+v, %v, want denied without a token", r, err)
	}
}

// TestDesktopPairFloodCannotLockOut: one local process flooding
// POST /v1/hosts/pair as a desktop host (past its rate limit and past the
// pending cap) leaves another desktop host able to pair. Before, every
// caller without an Origin shared one bucket, so the flood's 429s were
// everyone's.
func TestDesktopPairFloodCannotLockOut(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	flood := e.host("", "")
	limited := false
	for range 2 * hostauth.MaxPendingPairings {
		_, err := flood.Pair(ctx, PairRequest{Name: "flood", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)})
		if ae, ok := err.(*Error); ok && ae.Status == 429 {
			limited = true
		} else if err != nil {
			t.Fatalf("flood Pair = %v", err)
		}
	}
	for i := range hostauth.MaxPendingPairings + 1 { // fill the pending table with new names
		if _, err := flood.Pair(ctx, PairRequest{Name: fmt.Sprintf("flood %d", i), Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)}); err != nil {
			t.Fatalf("flood Pair(new name %d) = %v", i, err)
		}
	}
	if !limited {
		t.Errorf("a flood under one name was never rate-limited")
	}
	c := e.host("", "")
	p, err := c.Pair(ctx, PairRequest{Name: "Real desktop", Surface: "desktop", Challenge: testutil.ChallengeOf(verifier)})
	if err != nil {
		t.Fatalf("Pair(real desktop) after the flood = %v, want it recorded", err)
	}
	if _, err := e.ctl.ApproveHost(ctx, p.Code); err != nil {
		t.Fatalf("ApproveHost: %v", err)
	}
	if r, err := c.Redeem(ctx, p.PairingID, verifier); err != nil || r.Token == "" {
		t.Fatalf("Redeem = %+v, %v, want the token", r, err)
	}
}
