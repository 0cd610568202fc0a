package daemon

import (
	"path/filepath"
	"testing"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/internal/testutil"
)

// The pairing book's own tests are daemon/hostauth's; these helpers and
// the test below drive it through the Daemon, as the API does.

const (
	webOrigin   = "https://snug.example"
	testVerifer = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)

// newHostsDaemon returns a daemon on a clock the test moves, logging into
// logs.
func newHostsDaemon(t testing.TB) (*Daemon, *testutil.Clock, *testutil.LogBuffer) {
	t.Helper()
	clock := testutil.NewClock(testutil.Epoch)
	logs := &testutil.LogBuffer{}
	d, err := New(t.Context(), Config{DataDir: filepath.Join(t.TempDir(), "data"), Logger: logs.Logger(), Now: clock.Now})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	run(t, d)
	t.Cleanup(func() { d.Close() })
	return d, clock, logs
}

func webPair(t testing.TB, d *Daemon, verifier string) hostauth.Pairing {
	t.Helper()
	p, err := d.hosts.Pair(t.Context(), hostauth.PairRequest{Name: "Snug web", Surface: hostauth.SurfaceWeb, Origin: webOrigin, Challenge: testutil.ChallengeOf(verifier)}, webOrigin)
	if err != nil {
		t.Fatalf("Pair: %v", err)
	}
	return p
}

// pairHost pairs and redeems a host and returns its token.
func pairHost(t testing.TB, d *Daemon, surface hostauth.Surface, origin string) string {
	t.Helper()
	ctx := t.Context()
	p, err := d.hosts.Pair(ctx, hostauth.PairRequest{Name: "host", Surface: surface, Origin: origin, Challenge: testutil.ChallengeOf(testVerifer)}, origin)
	if err != nil {
		t.Fatalf("Pair: %v", err)
	}
	if _, err := d.hosts.Approve(ctx, p.Code); err != nil {
		t.Fatalf("ApprovePairing: %v", err)
	}
	r, err := d.hosts.Redeem(ctx, p.ID, testVerifer, origin)
	if err != nil || r.State != hostauth.PairingApproved || r.Token.Reveal() == "" {
		t.Fatalf("RedeemPairing = %v, %v, want approved with a token", r.State, err)
	}
	return r.Token.Reveal()
}

// TestHostsThroughDaemon: the Daemon's host methods reach one pairing book
// over the daemon's own store: a host paired through them authenticates,
// binds, is listed, and stops authenticating when DeleteHost returns.
func TestHostsThroughDaemon(t *testing.T) {
	d, _, _ := newHostsDaemon(t)
	ctx := t.Context()
	pending := webPair(t, d, testVerifer)
	if ps, err := d.hosts.Pending(ctx); err != nil || len(ps) != 1 || ps[0].ID != pending.ID {
		t.Fatalf("PendingPairings = %+v, %v, want the one request", ps, err)
	}
	if origin, ok := d.hosts.PairingOrigin(ctx, pending.ID); !ok || origin != webOrigin {
		t.Errorf("PairingOrigin = %q, %v, want %q", origin, ok, webOrigin)
	}
	if _, err := d.hosts.Deny(ctx, pending.Code); err != nil {
		t.Fatalf("DenyPairing: %v", err)
	}
	token := pairHost(t, d, hostauth.SurfaceWeb, webOrigin)
	h, err := d.hosts.Authenticate(ctx, token, webOrigin)
	if err != nil {
		t.Fatalf("AuthenticateHost: %v", err)
	}
	if !d.hosts.PairedOrigin(ctx, webOrigin) {
		t.Errorf("PairedOrigin(%q) = false, want true", webOrigin)
	}
	bound, release, err := d.hosts.Bind(ctx, h.ID)
	if err != nil {
		t.Fatalf("BindHost: %v", err)
	}
	defer release()
	if hs, err := d.hosts.Hosts(ctx); err != nil || len(hs) != 1 || hs[0].ID != h.ID {
		t.Fatalf("Hosts = %+v, %v, want the paired host", hs, err)
	}
	if err := d.deleteHost(ctx, h.ID); err != nil {
		t.Fatalf("DeleteHost: %v", err)
	}
	if bound.Err() == nil {
		t.Error("a bound context after DeleteHost = live, want cancelled")
	}
	_, err = d.hosts.Authenticate(ctx, token, webOrigin)
	testutil.WantCode(t, err, errcode.Unauthorized)
	testutil.WantCode(t, d.deleteHost(ctx, h.ID), errcode.HostNotFound)
}
