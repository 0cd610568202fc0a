package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"
	"time"

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
		c.LANDiscover = func(context.Context, lan.DiscoverConfig) ([]lan.Bridge, error) {
			return []lan.Bridge{{BridgeID: sim.BridgeID(), Address: ctlHueAddr, Port: 443, Name: "Hue Bridge", ModelID: "BSB002", Selectable: true}}, nil
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
// and when it was verified; --repin after a certificate change shows both
// fingerprints and pairs again.
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
