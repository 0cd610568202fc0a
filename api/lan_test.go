package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon"
	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/lan"
	"github.com/snug/snugd/lan/huesim"
	"github.com/snug/snugd/transports"
)

const apiHueAddr = "192.168.77.10"

// hueEnv is an env whose LAN transport reaches one simulated bridge at
// apiHueAddr through an injected dialer (loopback TLS; nothing else is
// reachable), and whose discovery answers that bridge.
func hueEnv(t *testing.T, policy fetch.TransportPolicy) (*env, *huesim.Sim) {
	t.Helper()
	sim, err := huesim.Start(huesim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		if address != apiHueAddr+":443" {
			return nil, errors.New("test dialer: nothing there")
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", sim.Addr())
	}
	e := newEnvWith(t, func(c *daemon.Config) {
		c.LAN = &transports.LAN{Dial: dial}
		c.TransportPolicy = policy
		// A flow's context runs on the daemon's clock; the env's fixed
		// one would end it before it began.
		c.Now = time.Now
		c.LANDiscover = func(context.Context, lan.DiscoverConfig) (lan.Discovery, error) {
			return lan.Discovery{Bridges: []lan.Bridge{
				{BridgeID: sim.BridgeID(), Address: apiHueAddr, Port: 443, Name: "Hue Bridge", ModelID: "BSB002", Selectable: true},
				{BridgeID: "001788fffe000001", Address: "203.0.113.9", Port: 443, Name: "Elsewhere", ModelID: "BSB002", Reason: "the address is not a private (RFC 1918) IPv4 address"},
			}}, nil
		}
	})
	return e, sim
}

func hueRequirement(t *testing.T) json.RawMessage {
	b, err := json.Marshal(map[string]any{
		"slot": "hue", "provider": map[string]any{"name": "Philips Hue"}, "kind": "api_key",
		"fields":  []any{map[string]any{"key": "application_key", "label": "Application key", "type": "secret"}},
		"request": map[string]any{"headerTemplate": map[string]any{"hue-application-key": "{{application_key}}"}},
		"lanHost": map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func apiCode(t *testing.T, err error, want errcode.Code) {
	t.Helper()
	var ae *Error
	if !errors.As(err, &ae) || ae.Code != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// TestLANRoutes walks the exchange over the API: discover, collect (the
// class's validator refuses a bad address), pairing refused before
// approval, approve (review-bound), probe, pair through a flow that asks
// for the button, and the connection's state with the pin; then a CLIP v2
// request with the key placed by the template.
//
// conformance: P3-C12.11-09, P3-C12.12-15, P3-C12.12-16
func TestLANRoutes(t *testing.T) {
	e, sim := hueEnv(t, "")
	ctx := t.Context()
	c := e.ctl

	found, err := c.BrowseLAN(ctx, 0)
	bridges := found.Bridges
	if err != nil || len(bridges) != 2 || !bridges[0].Selectable || bridges[1].Selectable || bridges[1].Reason == "" {
		t.Fatalf("DiscoverLAN = %+v, %v", bridges, err)
	}
	_, err = c.BrowseLAN(ctx, time.Minute)
	apiCode(t, err, errcode.BadRequest)

	if _, err := c.PutConnection(ctx, "app1", "hue", hueRequirement(t)); err != nil {
		t.Fatal(err)
	}
	_, err = c.CollectLANAddress(ctx, "app1", "hue", "198.51.100.7")
	apiCode(t, err, errcode.BadRequest)
	p, err := c.CollectLANAddress(ctx, "app1", "hue", apiHueAddr)
	if err != nil || p.Staged || p.Connection.Status != "declared" || !strings.Contains(string(p.Connection.Requirement), apiHueAddr) {
		t.Fatalf("collect = %+v, %v", p, err)
	}
	_, err = c.PairLAN(ctx, "app1", "hue", LANPairRequest{})
	apiCode(t, err, errcode.ConnectionNotApproved)
	if n := sim.Handshakes(); n != 0 {
		t.Fatalf("a refused pairing reached the bridge (%d handshakes)", n)
	}
	if _, err := c.Approve(ctx, "app1", "hue"); err != nil {
		t.Fatal(err)
	}
	probe, err := c.ProbeLAN(ctx, "app1", "hue")
	if err != nil || probe.Fingerprint != sim.Fingerprint() || probe.BridgeID != sim.BridgeID() {
		t.Fatalf("probe = %+v, %v", probe, err)
	}

	f, err := c.PairLAN(ctx, "app1", "hue", LANPairRequest{})
	if err != nil || f.Kind != "lan-pair" || f.FlowID == "" {
		t.Fatalf("pair = %+v, %v", f, err)
	}
	f = waitLANFlow(t, c, f.FlowID, func(f FlowJSON) bool { return f.State != "verifying" })
	if f.State != "press-button" || f.Deadline == nil {
		t.Fatalf("flow = %+v, want press-button with a deadline", f)
	}
	sim.PressButton()
	f = waitLANFlow(t, c, f.FlowID, func(f FlowJSON) bool { return f.State != "press-button" })
	if f.State != "paired" || f.Fingerprint != sim.Fingerprint() {
		t.Fatalf("flow = %+v, want paired", f)
	}
	conns, err := c.Connections(ctx, "app1")
	if err != nil || len(conns) != 1 || conns[0].State == nil || conns[0].State.Status != "connected" ||
		conns[0].State.LANPin == nil || conns[0].State.LANPin.Fingerprint != sim.Fingerprint() || conns[0].State.LANVerifiedAt == nil {
		t.Fatalf("connections = %+v, %v", conns, err)
	}
	_, err = c.PairLAN(ctx, "app1", "hue", LANPairRequest{})
	apiCode(t, err, errcode.AlreadyConnected)

	frame, _ := json.Marshal(map[string]any{"type": "snug:net-request", "v": 1, "requestId": "r1", "instanceId": "i1",
		"url": "https://" + apiHueAddr + "/clip/v2/resource/light", "method": "GET"})
	out, err := c.Net(ctx, NetRequest{AppID: "app1", Frame: frame, Delivery: "app"})
	if err != nil || !strings.Contains(string(out), `"status":200`) || sim.Count("GET /clip/v2/resource/light") != 1 {
		t.Fatalf("CLIP v2 request = %s, %v", out, err)
	}
}

// TestLANRoutesBrowserPolicy: the browser profile admits no LAN act.
func TestLANRoutesBrowserPolicy(t *testing.T) {
	e, sim := hueEnv(t, fetch.PolicyBrowser)
	_, err := e.ctl.BrowseLAN(t.Context(), 0)
	apiCode(t, err, errcode.Forbidden)
	_, err = e.ctl.PairLAN(t.Context(), "app1", "hue", LANPairRequest{})
	apiCode(t, err, errcode.Forbidden)
	if sim.Handshakes() != 0 {
		t.Error("the browser policy reached the bridge")
	}
}

func waitLANFlow(t *testing.T, c *Client, id string, cond func(FlowJSON) bool) FlowJSON {
	t.Helper()
	var f FlowJSON
	for range 200 {
		var err error
		if f, err = c.LANPairFlow(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		if cond(f) {
			return f
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("flow stayed %+v", f)
	return f
}
