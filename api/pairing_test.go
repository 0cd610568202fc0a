package api

import (
	"bytes"
	"errors"
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
	wantAPIError(t, err, 403, errcode.Forbidden)
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
	wantAPIError(t, err, 403, errcode.Forbidden) // the origin is no longer paired at all
	err = web.Events(ctx, func(Event) error { return nil })
	wantAPIError(t, err, 403, errcode.Forbidden)
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
