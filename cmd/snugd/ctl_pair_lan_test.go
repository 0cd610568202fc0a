package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/api"
	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/lan"
	"github.com/snug/snugd/lan/huesim"
	"github.com/snug/snugd/transports"
)

const ctlHueAddr = "192.168.77.10"

// startHueDaemon is a daemon whose LAN transport reaches a simulated Hue
// bridge at ctlHueAddr (an injected dialer to loopback TLS), whose
// discovery answers that bridge, with a pre-collection Hue row app/hue.
func startHueDaemon(t *testing.T) (string, *huesim.Sim, *transports.LAN) {
	t.Helper()
	return startHueDaemonHearing(t, func(sim *huesim.Sim) []lan.Bridge {
		return []lan.Bridge{{BridgeID: sim.BridgeID(), Address: ctlHueAddr, Port: 443, Name: "Hue Bridge", ModelID: "BSB002", Selectable: true}}
	})
}

// startHueDaemonHearing is startHueDaemon whose discovery answers heard(sim).
func startHueDaemonHearing(t *testing.T, heard func(*huesim.Sim) []lan.Bridge) (string, *huesim.Sim, *transports.LAN) {
	t.Helper()
	sim, err := huesim.Start(huesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	lanT := &transports.LAN{Dial: func(ctx context.Context, _, address string) (net.Conn, error) {
		if address != ctlHueAddr+":443" {
			return nil, os.ErrNotExist
		}
		var nd net.Dialer
		return nd.DialContext(ctx, "tcp", sim.Addr())
	}}
	td := startDaemonVersion(t, buildVersion(), func(c *daemon.Config) {
		c.LAN = lanT
		c.LANDiscover = func(context.Context, lan.DiscoverConfig) (lan.Discovery, error) {
			return lan.Discovery{Bridges: heard(sim)}, nil
		}
	})
	d := td.d
	req, _ := json.Marshal(map[string]any{
		"slot": "hue", "provider": map[string]any{"name": "Philips Hue"}, "kind": "api_key",
		"fields":  []any{map[string]any{"key": "application_key", "label": "Application key", "type": "secret"}},
		"request": map[string]any{"headerTemplate": map[string]any{"hue-application-key": "{{application_key}}"}},
		"lanHost": map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
	})
	if _, err := d.Proposers().ProposeUser(t.Context(), "app", "hue", req); err != nil {
		t.Fatal(err)
	}
	return td.dir, sim, lanT
}

// pressWhenAsked presses the bridge's button once snugd asked for a key
// (bounded: 400 polls).
func pressWhenAsked(sim *huesim.Sim, before int) {
	go func() {
		for range 400 {
			if sim.Count("POST /api") > before {
				sim.PressButton()
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
	}()
}

// TestCtlPairLAN: discover (the only selectable bridge, --yes), collect,
// approve the review, press the button, paired; connections shows the pin
// and when it was verified; pairing the paired bridge again asks first;
// --repin after a certificate change shows both fingerprints and pairs
// again.
//
// conformance: P3-C12.11-09
func TestCtlPairLAN(t *testing.T) {
	dir, sim, lanT := startHueDaemon(t)
	ctl := func(args ...string) (int, string, string) {
		return runCmd(t, "", append([]string{"ctl", "--data-dir", dir}, args...)...)
	}
	if code, out, errOut := ctl("lan", "discover"); code != exitOK || !strings.Contains(out, ctlHueAddr) || !strings.Contains(out, sim.BridgeID()) {
		t.Fatalf("lan discover = %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := ctl("pair", "lan", "app", "hue"); code != exitUsage || !strings.Contains(errOut, "--address") {
		t.Errorf("pair lan without a terminal or --yes = %d %s", code, errOut)
	}

	pressWhenAsked(sim, 0)
	code, out, errOut := ctl("pair", "lan", "app", "hue", "--yes")
	if code != exitOK || !strings.Contains(out, "collected "+ctlHueAddr) || !strings.Contains(out, "approved") ||
		!strings.Contains(out, "press the round link button") || !strings.Contains(out, "paired app/hue") || !strings.Contains(out, sim.Fingerprint()) {
		t.Fatalf("pair lan = %d\n%s%s", code, out, errOut)
	}
	code, out, _ = ctl("connections", "app")
	if code != exitOK || !strings.Contains(out, "pin          sha256 "+sim.Fingerprint()) || !strings.Contains(out, "verified") {
		t.Errorf("connections = %d\n%s", code, out)
	}
	// Paired and pinned: nothing about the row needs attention any more.
	if code, out, _ = ctl("apps"); code != exitOK || strings.Contains(out, "app/hue:") {
		t.Errorf("apps after pairing still hints at the row = %d\n%s", code, out)
	}

	// Pairing a paired bridge again (a new application key, the same
	// certificate) asks first: without a terminal or --yes it refuses,
	// having sent the bridge no link request; with --yes it pairs again.
	posts := sim.Count("POST /api")
	if code, out, errOut := ctl("pair", "lan", "app", "hue"); code != exitUsage || !strings.Contains(out, "pairing again replaces its application key") {
		t.Errorf("pair lan on a paired bridge without a terminal or --yes = %d\n%s%s", code, out, errOut)
	}
	if n := sim.Count("POST /api"); n != posts {
		t.Errorf("the unanswered question sent the bridge %d link requests", n-posts)
	}
	pressWhenAsked(sim, posts)
	code, out, errOut = ctl("pair", "lan", "app", "hue", "--yes")
	if code != exitOK || !strings.Contains(out, "pinned certificate     sha256 "+sim.Fingerprint()) || !strings.Contains(out, "paired app/hue") {
		t.Fatalf("pair lan --yes on a paired bridge = %d\n%s%s", code, out, errOut)
	}

	old := sim.Fingerprint()
	if err := sim.Rotate(); err != nil {
		t.Fatal(err)
	}
	lanT.CloseIdleConnections()
	if code, _, errOut := ctl("pair", "lan", "app", "hue", "--repin"); code != exitUsage {
		t.Errorf("--repin without a terminal or --yes = %d %s", code, errOut)
	}
	pressWhenAsked(sim, sim.Count("POST /api"))
	code, out, errOut = ctl("pair", "lan", "app", "hue", "--repin", "--yes")
	if code != exitOK || !strings.Contains(out, "pinned certificate     sha256 "+old) || !strings.Contains(out, "presented certificate  sha256 "+sim.Fingerprint()) ||
		!strings.Contains(out, "paired app/hue") {
		t.Fatalf("pair lan --repin = %d\n%s%s", code, out, errOut)
	}
}

// TestCtlPairLANRefusesToGuess: when two devices claim one bridge, or more
// than one entry answered, ctl lan discover shows why nothing or what can
// be chosen, and pair lan --yes refuses to pick, saying why and how; the
// person may still pair by address.
func TestCtlPairLANRefusesToGuess(t *testing.T) {
	const impostor = "192.168.77.23"
	cases := []struct {
		name  string
		heard func(*huesim.Sim) []lan.Bridge
		shown []string // in ctl lan discover's output
		why   string   // in pair lan --yes's refusal
	}{
		{"conflict", func(sim *huesim.Sim) []lan.Bridge {
			reason := "two devices claim to be this bridge: " + impostor + ", " + ctlHueAddr
			claim := []string{impostor, ctlHueAddr}
			return []lan.Bridge{
				{BridgeID: sim.BridgeID(), Address: impostor, Port: 443, Name: "Hue Bridge", ModelID: "BSB002", Reason: reason, Conflicts: claim},
				{BridgeID: sim.BridgeID(), Address: ctlHueAddr, Port: 443, Name: "Hue Bridge", ModelID: "BSB002", Reason: reason, Conflicts: claim},
			}
		}, []string{"not selectable: two devices claim to be this bridge: " + impostor + ", " + ctlHueAddr, "pair with --address"},
			"no selectable bridge answered: pass --address"},
		{"two entries", func(sim *huesim.Sim) []lan.Bridge {
			return []lan.Bridge{
				{BridgeID: "001788fffe000001", Address: impostor, Port: 443, Name: "Hue Bridge", ModelID: "BSB002", Selectable: true},
				{BridgeID: sim.BridgeID(), Address: ctlHueAddr, Port: 8443, Name: "Hue Bridge", ModelID: "BSB002", Reason: lan.ReasonPort},
			}
		}, []string{impostor, "not selectable: " + lan.ReasonPort},
			"not choosing a bridge for you: 2 entries answered; pass --address"},
		{"conflict beside a selectable entry", func(sim *huesim.Sim) []lan.Bridge {
			claim := []string{impostor, "192.168.77.24"}
			return []lan.Bridge{
				{BridgeID: sim.BridgeID(), Address: ctlHueAddr, Port: 443, Name: "Hue Bridge", ModelID: "BSB002", Selectable: true},
				{BridgeID: "001788fffe000001", Address: impostor, Port: 443, Name: "Other", ModelID: "BSB002", Reason: "two devices claim to be this bridge: " + impostor + ", 192.168.77.24", Conflicts: claim},
				{BridgeID: "001788fffe000001", Address: "192.168.77.24", Port: 443, Name: "Other", ModelID: "BSB002", Reason: "two devices claim to be this bridge: " + impostor + ", 192.168.77.24", Conflicts: claim},
			}
		}, []string{"pair with --address"},
			"not choosing a bridge for you: more than one device claims to be the same bridge (" + impostor + ", 192.168.77.24)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, sim, _ := startHueDaemonHearing(t, tc.heard)
			ctl := func(args ...string) (int, string, string) {
				return runCmd(t, "", append([]string{"ctl", "--data-dir", dir}, args...)...)
			}
			code, out, errOut := ctl("lan", "discover")
			for _, s := range tc.shown {
				if code != exitOK || !strings.Contains(out, s) {
					t.Errorf("lan discover = %d, want %q in\n%s%s", code, s, out, errOut)
				}
			}
			code, out, errOut = ctl("pair", "lan", "app", "hue", "--yes")
			if code != exitNo || !strings.Contains(errOut, tc.why) || strings.Contains(out, "collected") {
				t.Errorf("pair lan --yes = %d, want a refusal with %q\n%s%s", code, tc.why, out, errOut)
			}
			if cn := connectionOf(t, dir, "app", "hue"); len(cn.AllowedHosts) != 0 {
				t.Errorf("after the refusal the row holds %v, want nothing collected", cn.AllowedHosts)
			}
			if tc.name != "conflict" {
				return
			}
			// After checking, the person pairs by address.
			pressWhenAsked(sim, 0)
			code, out, errOut = ctl("pair", "lan", "app", "hue", "--address", ctlHueAddr, "--yes")
			if code != exitOK || !strings.Contains(out, "collected "+ctlHueAddr) || !strings.Contains(out, "paired app/hue") {
				t.Errorf("pair lan --address = %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// connectionOf reads one row through the API, as ctl does.
func connectionOf(t *testing.T, dir, appID, slot string) api.ConnectionJSON {
	t.Helper()
	code, out, errOut := runCmd(t, "", "ctl", "--data-dir", dir, "--json", "connections", appID)
	if code != exitOK {
		t.Fatalf("connections = %d %s", code, errOut)
	}
	var list struct {
		Connections []api.ConnectionJSON `json:"connections"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("connections --json: %v\n%s", err, out)
	}
	for _, cn := range list.Connections {
		if cn.Slot == slot {
			return cn
		}
	}
	t.Fatalf("no connection %s/%s in %s", appID, slot, out)
	return api.ConnectionJSON{}
}

// TestNotAutomatic: --yes takes a discovered bridge only when it was the
// one entry heard, selectable, with no conflict, below the limit and with
// nothing left out.
func TestNotAutomatic(t *testing.T) {
	one := api.LANBridgeJSON{ID: "001788fffe23bfc2", Address: ctlHueAddr, Port: 443, Selectable: true}
	other := api.LANBridgeJSON{Address: "192.168.77.23", Port: 443, Reason: lan.ReasonNoBridgeID}
	claimed := api.LANBridgeJSON{ID: "001788fffe000001", Address: "192.168.77.24", Port: 443, Conflicts: []string{"192.168.77.24", "192.168.77.25"}}
	cases := []struct {
		name string
		d    api.LANDiscoverResponse
		want string
	}{
		{"one", api.LANDiscoverResponse{Bridges: []api.LANBridgeJSON{one}}, ""},
		{"two", api.LANDiscoverResponse{Bridges: []api.LANBridgeJSON{one, other}}, "2 entries answered"},
		{"conflict", api.LANDiscoverResponse{Bridges: []api.LANBridgeJSON{one, claimed}}, "more than one device claims to be the same bridge (192.168.77.24, 192.168.77.25)"},
		{"limit", api.LANDiscoverResponse{Bridges: []api.LANBridgeJSON{one}, LimitReached: true}, "more devices answered than are listed"},
		{"truncated", api.LANDiscoverResponse{Bridges: []api.LANBridgeJSON{one}, Truncated: true}, "some answers were left out"},
	}
	for _, tc := range cases {
		if got := notAutomatic(tc.d); got != tc.want {
			t.Errorf("notAutomatic(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
