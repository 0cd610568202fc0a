package main

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/claim"
	"github.com/snug/snugd/daemon/claim/claimtest"
	"github.com/snug/snugd/transports"
)

// claimResolver answers a documentation address for every name;
// startClaimDaemon's dialer connects it to the bridge simulator on
// loopback. These are the public transport's test seams; no gate is off.
type claimResolver struct{}

func (claimResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("203.0.113.30")}, nil
}

// startClaimDaemon is a daemon whose public transport reaches a SimpleFIN
// Bridge simulator, with an approved SimpleFIN row app/bank, served on
// its ctl socket.
func startClaimDaemon(t *testing.T) (dir string, b *claimtest.Bridge) {
	t.Helper()
	b = &claimtest.Bridge{}
	srv, roots := claimtest.NewTLSServer(t, b, claimtest.DefaultHost)
	to := srv.Listener.Addr().String()
	td := startDaemonVersion(t, buildVersion(), func(c *daemon.Config) {
		c.Public = &transports.Public{Resolver: claimResolver{}, RootCAs: roots,
			Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var nd net.Dialer
				return nd.DialContext(ctx, "tcp", to)
			}}
	})
	d := td.d
	req, _ := json.Marshal(map[string]any{
		"slot": "bank", "provider": map[string]any{"name": "SimpleFIN"}, "kind": "basic_auth",
		"fields":           []any{map[string]any{"key": "access_credentials", "label": "Access credentials", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
		"declaredApiHosts": []any{claimtest.DefaultHost},
	})
	if _, err := d.Proposers().ProposeUser(t.Context(), "app", "bank", req); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Grants().Approve(t.Context(), "app", "bank"); err != nil {
		t.Fatal(err)
	}
	return td.dir, b
}

// TestCtlPairClaim: the token comes from standard input and goes nowhere
// else; a token on the command line is refused unused and unrepeated; a
// refusal prints the daemon's fixed sentence and reason.
// conformance: P3-C12.12-23
func TestCtlPairClaim(t *testing.T) {
	dir, b := startClaimDaemon(t)
	ctl := func(stdin string, args ...string) (int, string, string) {
		return runCmd(t, stdin, append([]string{"ctl", "--data-dir", dir, "pair"}, args...)...)
	}
	noLeak := func(name, s string, leaks ...string) {
		t.Helper()
		for _, l := range leaks {
			if strings.Contains(s, l) {
				t.Errorf("%s prints %q:\n%s", name, l, s)
			}
		}
	}

	if _, out, _ := runCmd(t, "", "ctl", "--data-dir", dir, "apps"); !strings.Contains(out, "app/bank: not paired yet: snugd ctl pair claim app bank\n") {
		t.Errorf("apps before the claim does not send the row to pair claim:\n%s", out)
	}

	token := b.NewSetupToken()
	code, _, errOut := ctl("", "claim", "app", "bank", token)
	if code != exitUsage || b.Claims() != 0 || len(b.Requests()) != 0 {
		t.Errorf("token on argv = %d (bridge saw %d requests); want 2 and nothing sent", code, len(b.Requests()))
	}
	noLeak("a token on argv", errOut, token)

	if code, _, errOut := ctl(" \n", "claim", "app", "bank"); code != exitNo || !strings.Contains(errOut, "no setup token") {
		t.Errorf("empty stdin = %d %s", code, errOut)
	}

	const canary = "CANARY-ctl-51f"
	hostile := claimtest.Encode("https://evil.example/simplefin/claim/" + canary)
	code, out, errOut := ctl(hostile+"\n", "claim", "app", "bank")
	want, _ := claim.Lookup(claim.ReasonClaimHost)
	if code != exitNo || !strings.Contains(errOut, "CLAIM_REFUSED: "+want.Sentence) || !strings.Contains(errOut, "setupToken: claim-host") {
		t.Errorf("hostile token = %d\n%s%s", code, out, errOut)
	}
	noLeak("a refusal", out+errOut, canary, hostile)

	code, out, errOut = ctl(token+"\n", "claim", "app", "bank")
	if code != exitOK || !strings.Contains(out, "claimed the setup token for app/bank: connected") {
		t.Fatalf("claim = %d\n%s%s", code, out, errOut)
	}
	noLeak("a claim", out+errOut, append([]string{token}, b.Credentials()...)...)
	// Claimed: the row no longer says it is not paired.
	if code, out, _ := runCmd(t, "", "ctl", "--data-dir", dir, "apps"); code != exitOK || strings.Contains(out, "app/bank:") {
		t.Errorf("apps after the claim still hints at the row = %d\n%s", code, out)
	}

	// Claimed already: a new claim without a terminal needs --yes, and
	// the refusal spends nothing.
	claims := b.Claims()
	code, out, errOut = ctl(b.NewSetupToken(), "claim", "app", "bank")
	if code != exitUsage || !strings.Contains(errOut, "app/bank is already claimed since ") || !strings.Contains(errOut, "pass --yes to replace it") || b.Claims() != claims {
		t.Errorf("a new claim without --yes = %d (claims sent %d)\n%s%s", code, b.Claims()-claims, out, errOut)
	}
	code, out, _ = ctl(b.NewSetupToken(), "claim", "app", "bank", "--json", "--yes")
	var conn api.ConnectionJSON
	if code != exitOK || json.Unmarshal([]byte(out), &conn) != nil || conn.State == nil || conn.State.ClaimVerifiedAt == nil {
		t.Errorf("claim --json = %d %s", code, out)
	}

	if code, _, errOut := ctl("", token); code != exitUsage || strings.Contains(errOut, token) {
		t.Errorf("pair TOKEN = %d, echoes: %v", code, strings.Contains(errOut, token))
	}
	if code, out, _ := ctl("", "--help"); code != exitOK || !strings.Contains(out, "pair claim APP SLOT") {
		t.Errorf("pair --help = %d %s", code, out)
	}
}

// TestCtlPairLinkRefusesJSON: pair link has no machine-readable answer
// (a person scans codes that rotate), so --json, before or after the
// command, is refused rather than ignored, and no flow starts.
func TestCtlPairLinkRefusesJSON(t *testing.T) {
	td := startDaemon(t)
	for _, args := range [][]string{
		{"pair", "link", "app1", "chat", "--json"},
		{"--json", "pair", "link", "app1", "chat"},
	} {
		code, out, errOut := td.ctl(t, "", args...)
		if code != exitUsage || !strings.Contains(errOut, "--json is not supported") || out != "" {
			t.Errorf("ctl %q = %d, %q, %q; want a usage refusal", args, code, out, errOut)
		}
	}
	// Without --json the command goes to the daemon, which has no such
	// connection: the refusal above came before any flow.
	if code, _, errOut := td.ctl(t, "", "pair", "link", "app1", "chat"); code != exitNo || strings.Contains(errOut, "--json") {
		t.Errorf("pair link of a missing connection = %d, %q", code, errOut)
	}
}
