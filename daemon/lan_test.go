package daemon

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/pairing"
	"github.com/snug/snugd/internal/testutil"
	"github.com/snug/snugd/lan"
	"github.com/snug/snugd/lan/huesim"
	"github.com/snug/snugd/transports"
)

// The Hue bridge tests run the daemon against lan/huesim over real TLS on
// loopback, reached through the LAN transport's injected dialer: every
// dial to an RFC-1918 literal is recorded and only the bridge's address
// reaches the simulator. No gate is weakened; the dialer is the only seam.

const hueAddr = "192.168.77.10"

// hueDialer routes <address>:443 to a simulator and records every dial.
type hueDialer struct {
	mu    sync.Mutex
	to    map[string]*huesim.Sim
	calls []string
}

func (h *hueDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	h.mu.Lock()
	h.calls = append(h.calls, address)
	sim := h.to[address]
	h.mu.Unlock()
	if sim == nil {
		return nil, fmt.Errorf("test dialer: nothing at %s", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", sim.Addr())
}

func (h *hueDialer) route(addr string, sim *huesim.Sim) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.to[addr+":443"] = sim
}

// hueRig is a rig whose LAN transport reaches one simulated bridge at
// hueAddr.
type hueRig struct {
	*rig
	sim  *huesim.Sim
	dial *hueDialer
}

func startHue(t *testing.T, cfg huesim.Config, opts ...func(*Config)) *hueRig {
	t.Helper()
	sim, err := huesim.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	h := &hueDialer{to: map[string]*huesim.Sim{hueAddr + ":443": sim}}
	// A flow's context runs on the daemon's clock: the rig's fixed one would
	// have ended it before it began.
	opts = append([]func(*Config){func(c *Config) { c.LAN, c.Now = &transports.LAN{Dial: h.dial}, time.Now }}, opts...)
	return &hueRig{rig: newRig(t, opts...), sim: sim, dial: h}
}

// hueDoc is a pre-collection Hue requirement: the registry's entry fills
// in the rest (the hue-application-key template, the exchange pairing).
func hueDoc() map[string]any {
	return map[string]any{
		"slot": "hue", "provider": map[string]any{"name": "Philips Hue"}, "kind": "api_key",
		"fields":  []any{map[string]any{"key": "application_key", "label": "Application key", "type": "secret"}},
		"request": map[string]any{"headerTemplate": map[string]any{"hue-application-key": "{{application_key}}"}},
		"lanHost": map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
	}
}

// declareHue proposes the pre-collection row on the user channel.
func (h *hueRig) declareHue(t *testing.T) {
	t.Helper()
	if _, err := h.d.proposers.ProposeUser(context.Background(), "app1", "hue", mustJSONTB(t, hueDoc())); err != nil {
		t.Fatalf("ProposeUser: %v", err)
	}
}

// collectApprove collects hueAddr and approves the row.
func (h *hueRig) collectApprove(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := h.d.devices.CollectLANAddress(ctx, "app1", "hue", hueAddr); err != nil {
		t.Fatalf("CollectLANAddress: %v", err)
	}
	if _, err := h.d.grants.Approve(ctx, "app1", "hue"); err != nil {
		t.Fatalf("Approve: %v", err)
	}
}

// waitFlow polls the flow until cond holds (bounded: 200 polls).
func (h *hueRig) waitFlow(t *testing.T, id string, cond func(pairing.Flow) bool) pairing.Flow {
	t.Helper()
	var f pairing.Flow
	for range 200 {
		var err error
		if f, err = h.d.pairing.Flow(context.Background(), id); err != nil {
			t.Fatalf("Flow: %v", err)
		}
		if cond(f) {
			return f
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("flow stayed %+v", f)
	return f
}

func ended(f pairing.Flow) bool { return f.State.Ended() }

// pair runs one pairing whose button is pressed once the bridge asked.
func (h *hueRig) pair(t *testing.T, opts pairing.LANPairOptions) pairing.Flow {
	t.Helper()
	f, err := h.d.devices.PairLAN(context.Background(), "app1", "hue", opts)
	if err != nil {
		t.Fatalf("PairLAN: %v", err)
	}
	f = h.waitFlow(t, f.ID, func(f pairing.Flow) bool { return f.State == pairing.FlowPressButton || f.State.Ended() })
	if f.State != pairing.FlowPressButton || f.Deadline.IsZero() || f.Message == "" {
		t.Fatalf("flow = %+v, want press-button with a deadline and what to do", f)
	}
	h.sim.PressButton()
	return h.waitFlow(t, f.ID, ended)
}

func (h *hueRig) lights(t *testing.T) (fetch.NetResult, int) {
	t.Helper()
	before := h.sim.Count("GET /clip/v2/resource/light")
	res, _ := h.net(t, "app1", frame("GET", "https://"+hueAddr+"/clip/v2/resource/light", nil))
	return res, h.sim.Count("GET /clip/v2/resource/light") - before
}

// TestLANPairOrder: collect, approve, freeze, pair — in that order. A
// declared row, an approved row without a collected address and a row
// whose collected address is only staged are refused before anything is
// dialed; a bad address is refused by the class's validator.
//
// conformance: P3-C12.11-09
func TestLANPairOrder(t *testing.T) {
	h := startHue(t, huesim.Config{})
	ctx := context.Background()
	h.declareHue(t)

	for _, bad := range []string{"8.8.8.8", "192.168.077.10", "192.168.77.10:443", "fe80::1", "bridge.local", ""} {
		_, err := h.d.devices.CollectLANAddress(ctx, "app1", "hue", bad)
		testutil.WantCode(t, err, errcode.BadRequest)
	}
	if _, err := h.d.devices.CollectLANAddress(ctx, "app1", "hue", hueAddr); err != nil {
		t.Fatal(err)
	}
	c, _ := h.d.grants.Connection(ctx, "app1", "hue")
	if c.Status != grants.StatusDeclared || len(c.Requirement.DeclaredAPIHosts) != 1 || c.Requirement.DeclaredAPIHosts[0] != hueAddr {
		t.Fatalf("collected row = %s %v", c.Status, c.Requirement.DeclaredAPIHosts)
	}
	// Declared: collected, not approved.
	_, err := h.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{})
	testutil.WantCode(t, err, errcode.ConnectionNotApproved)
	_, err = h.d.devices.ProbeLAN(ctx, "app1", "hue")
	testutil.WantCode(t, err, errcode.ConnectionNotApproved)

	// Approved before collection: the ceiling holds no address.
	h2 := startHue(t, huesim.Config{})
	h2.declareHue(t)
	if _, err := h2.d.grants.Approve(ctx, "app1", "hue"); err != nil {
		t.Fatal(err)
	}
	_, err = h2.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{})
	testutil.WantCode(t, err, errcode.ConnectionNotApproved)
	// The address collected after approval is only staged: still refused.
	r, err := h2.d.devices.CollectLANAddress(ctx, "app1", "hue", hueAddr)
	if err != nil || !r.Staged {
		t.Fatalf("collect on an approved row = %+v, %v; want staged", r, err)
	}
	_, err = h2.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{})
	testutil.WantCode(t, err, errcode.ConnectionNotApproved)
	if _, err := h2.d.grants.Reapprove(ctx, "app1", "hue"); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.d.devices.ProbeLAN(ctx, "app1", "hue"); err != nil {
		t.Fatalf("probe after re-approval: %v", err)
	}

	if n := len(h.dial.calls); n != 0 || h.sim.Handshakes() != 0 {
		t.Errorf("refused pairings dialed %d times", n)
	}

	// Under the browser policy there is no LAN act at all.
	hb := startHue(t, huesim.Config{}, func(c *Config) { c.TransportPolicy = fetch.PolicyBrowser })
	_, err = hb.d.devices.DiscoverLAN(ctx, 0)
	testutil.WantCode(t, err, errcode.Forbidden)
	hb.declareHue(t)
	hb.collectApprove(t)
	_, err = hb.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{})
	testutil.WantCode(t, err, errcode.Forbidden)
}

// TestLANPairAndPin: the whole exchange. The bridge answers 101 until its
// button is pressed (the flow says press-button with a deadline), then
// mints a key; key, pin and lanVerifiedAt land in one write; the key is
// placed by the template on a CLIP v2 request sent through the pinned LAN
// transport. A rotated certificate is refused in the handshake, before
// the key reaches it, marks the connection error with the fixed sentence
// and is journaled; no retry. Only an explicit re-pin, with the new
// fingerprint accepted and a new button press, restores it.
//
// conformance: P3-C12.11-13, P3-C12.11-14, P3-C12.11-15, P3-C12.12-15, P3-C12.12-16
func TestLANPairAndPin(t *testing.T) {
	h := startHue(t, huesim.Config{})
	ctx := context.Background()
	h.declareHue(t)
	h.collectApprove(t)

	probe, err := h.d.devices.ProbeLAN(ctx, "app1", "hue")
	if err != nil || probe.Fingerprint != h.sim.Fingerprint() || probe.BridgeID != h.sim.BridgeID() || probe.PreviousFingerprint != "" {
		t.Fatalf("ProbeLAN = %+v, %v", probe, err)
	}
	f := h.pair(t, pairing.LANPairOptions{})
	if f.State != pairing.FlowPaired || f.Fingerprint != h.sim.Fingerprint() {
		t.Fatalf("flow = %+v, want paired with the bridge's fingerprint", f)
	}
	if n := h.sim.Count("POST /api"); n < 2 {
		t.Errorf("POST /api sent %d times, want the 101 answer then success", n)
	}
	st, ok, err := h.d.grants.ConnectionState(ctx, "app1", "hue")
	if err != nil || !ok || st.Status != grants.ConnConnected || st.LANPin == nil || st.LANPin.Fingerprint != h.sim.Fingerprint() ||
		st.LANPin.CN != h.sim.BridgeID() || st.LANVerifiedAt == nil || st.ObtainedAt == nil {
		t.Fatalf("state = %+v (pin %+v), %v, %v", st, st.LANPin, ok, err)
	}
	links := h.sim.Links()
	if len(links) == 0 || !strings.HasPrefix(links[0].DeviceType, "snugd#") || !links[0].GenerateClientKey {
		t.Errorf("links = %+v, want devicetype snugd#<host> with generateclientkey", links)
	}

	// Paired: a second pairing without an explicit re-pin is refused.
	_, err = h.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{})
	testutil.WantCode(t, err, errcode.AlreadyConnected)

	res, n := h.lights(t)
	if res.Code != "" || res.Status != 200 || n != 1 {
		t.Fatalf("CLIP v2 request = %+v (%d at the bridge), want 200 with the key placed", res, n)
	}
	// A re-pair that fails (the bridge does not present the accepted
	// fingerprint) leaves the old key and pin serving, and journals no
	// replacement.
	fl0, err := h.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{Repin: true, Accept: strings.Repeat("0", 64)})
	if err != nil {
		t.Fatal(err)
	}
	if fl0 = h.waitFlow(t, fl0.ID, ended); fl0.State != pairing.FlowFailed {
		t.Fatalf("re-pair to a fingerprint the bridge does not present = %+v", fl0)
	}
	if res, n := h.lights(t); res.Code != "" || res.Status != 200 || n != 1 {
		t.Fatalf("CLIP v2 after a failed re-pair = %+v (%d at the bridge), want the old key serving", res, n)
	}
	if n := lanReplaceActs(t, h); n != 0 {
		t.Fatalf("%d credential-replace acts after a failed re-pair", n)
	}

	// The bridge's certificate changes: a factory reset, or an impostor at
	// the address claiming the same bridge id. Its old connections are
	// gone with the old device, and its link window is closed.
	reset, err := huesim.Start(huesim.Config{BridgeID: h.sim.BridgeID()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reset.Close)
	h.sim.Close()
	h.sim = reset
	h.dial.route(hueAddr, reset)
	h.d.exec.Lan.CloseIdleConnections()
	res, n = h.lights(t)
	if res.Code != errcode.NetFetchFailed || n != 0 {
		t.Fatalf("request to a rotated certificate = %+v (%d at the bridge), want NET_FETCH_FAILED and nothing sent", res, n)
	}
	st, _, _ = h.d.grants.ConnectionState(ctx, "app1", "hue")
	if st.Status != grants.ConnError || st.LastError != pairing.PinChangedMessage {
		t.Fatalf("state after a changed certificate = %+v", st)
	}
	entries, err := h.d.records.Journal(ctx, journal.JournalQuery{AppID: "app1"})
	if err != nil {
		t.Fatal(err)
	}
	journaled := false
	for _, e := range entries {
		journaled = journaled || e.Note == pairing.PinChangedMessage
	}
	if !journaled {
		t.Errorf("journal %+v names no changed certificate", entries)
	}

	// Re-pin: the probe shows old and new; the wrong accepted fingerprint
	// fails; the right one pairs again with a new press.
	old := probe.Fingerprint
	probe, err = h.d.devices.ProbeLAN(ctx, "app1", "hue")
	if err != nil || probe.PreviousFingerprint != old || probe.Fingerprint != h.sim.Fingerprint() || probe.Fingerprint == old {
		t.Fatalf("re-pin probe = %+v, %v", probe, err)
	}
	_, err = h.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{Repin: true})
	testutil.WantCode(t, err, errcode.BadRequest)
	fl, err := h.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{Repin: true, Accept: old})
	if err != nil {
		t.Fatal(err)
	}
	fl = h.waitFlow(t, fl.ID, ended)
	if fl.State != pairing.FlowFailed || fl.Message != lan.ErrCertificateChanged.Error() {
		t.Fatalf("re-pin to a fingerprint the bridge does not present = %+v", fl)
	}
	fl = h.pair(t, pairing.LANPairOptions{Repin: true, Accept: probe.Fingerprint})
	if fl.State != pairing.FlowPaired || fl.PreviousFingerprint != old || fl.Fingerprint != probe.Fingerprint {
		t.Fatalf("re-pin flow = %+v", fl)
	}
	st, _, _ = h.d.grants.ConnectionState(ctx, "app1", "hue")
	if st.Status != grants.ConnConnected || st.LANPin.Fingerprint != probe.Fingerprint || st.LastError != "" {
		t.Fatalf("state after re-pin = %+v", st)
	}
	if res, n := h.lights(t); res.Status != 200 || n != 1 {
		t.Fatalf("CLIP v2 after re-pin = %+v (%d)", res, n)
	}
	if n := lanReplaceActs(t, h); n != 1 {
		t.Fatalf("%d credential-replace acts after the re-pin, want 1", n)
	}
}

// lanReplaceActs counts app1/hue's credential-replace acts.
func lanReplaceActs(t *testing.T, h *hueRig) int {
	t.Helper()
	j, err := h.d.records.Journal(t.Context(), journal.JournalQuery{AppID: "app1", Kind: "acts"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range j {
		if e.Act == journal.ActReplace && e.Slot == "hue" {
			n++
		}
	}
	return n
}

// TestLANVerifyBeforeClaim: a device that is not a Hue bridge fails the
// verify probe and never sees the pairing POST; a bridge that vanishes
// mid-pairing fails with its fixed sentence and stores nothing.
//
// conformance: P3-C12.12-15
func TestLANVerifyBeforeClaim(t *testing.T) {
	ctx := context.Background()
	h := startHue(t, huesim.Config{NotBridge: true})
	h.declareHue(t)
	h.collectApprove(t)
	f, err := h.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f = h.waitFlow(t, f.ID, ended)
	if f.State != pairing.FlowFailed || f.Message != lan.ErrNotBridge.Error() {
		t.Fatalf("flow = %+v, want failed: not a bridge", f)
	}
	if n := h.sim.Count("POST /api"); n != 0 {
		t.Errorf("a device that is not a bridge got %d pairing requests", n)
	}
	_, err = h.d.devices.ProbeLAN(ctx, "app1", "hue")
	testutil.WantCode(t, err, errcode.LANRefused)

	v := startHue(t, huesim.Config{})
	v.declareHue(t)
	v.collectApprove(t)
	f, err = v.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v.waitFlow(t, f.ID, func(f pairing.Flow) bool { return f.State == pairing.FlowPressButton })
	v.sim.Vanish()
	f = v.waitFlow(t, f.ID, ended)
	if f.State != pairing.FlowFailed || f.Message != lan.ErrVanished.Error() {
		t.Fatalf("flow = %+v, want failed: vanished", f)
	}
	if _, ok, _ := v.d.grants.ConnectionState(ctx, "app1", "hue"); ok {
		t.Error("a failed pairing stored state")
	}
}

// TestLANRelocate: after a discovery, a pinned bridge answering at another
// RFC-1918 address has that address staged only once nothing presents the
// pin at its approved address: a relay elsewhere, while the bridge still
// answers, stages nothing. Re-approval freezes the new address and the key
// and pin carry over.
func TestLANRelocate(t *testing.T) {
	ctx := context.Background()
	var discover func(context.Context, lan.DiscoverConfig) (lan.Discovery, error)
	h := startHue(t, huesim.Config{}, func(c *Config) {
		c.LANDiscover = func(ctx context.Context, dc lan.DiscoverConfig) (lan.Discovery, error) { return discover(ctx, dc) }
	})
	h.declareHue(t)
	h.collectApprove(t)
	h.pair(t, pairing.LANPairOptions{})

	const moved = "192.168.77.33"
	h.dial.route(moved, h.sim) // a relay to the bridge, or the bridge moved
	discover = func(context.Context, lan.DiscoverConfig) (lan.Discovery, error) {
		return lan.Discovery{Bridges: []lan.Bridge{{BridgeID: h.sim.BridgeID(), Address: moved, Port: 443, Name: "Hue Bridge", ModelID: "BSB002", Selectable: true}}}, nil
	}
	found, err := h.d.devices.DiscoverLAN(ctx, 0)
	if err != nil || len(found.Bridges) != 1 {
		t.Fatalf("DiscoverLAN = %v, %v", found, err)
	}
	if c, _ := h.d.grants.Connection(ctx, "app1", "hue"); c.PendingJSON != "" {
		t.Fatalf("a relay staged %s while the bridge answers at %s", c.PendingJSON, hueAddr)
	}

	h.dial.route(hueAddr, nil) // the old address falls silent: it moved
	if _, err := h.d.devices.DiscoverLAN(ctx, 0); err != nil {
		t.Fatal(err)
	}
	c, _ := h.d.grants.Connection(ctx, "app1", "hue")
	if !c.NeedsReapproval() || c.Pending == nil || c.Pending.DeclaredAPIHosts[0] != moved || c.AllowedHosts[0] != hueAddr {
		t.Fatalf("row after relocation: pending %v, ceiling %v", c.PendingJSON, c.AllowedHosts)
	}
	if _, err := h.d.grants.Reapprove(ctx, "app1", "hue"); err != nil {
		t.Fatal(err)
	}
	res, _ := h.net(t, "app1", frame("GET", "https://"+moved+"/clip/v2/resource/light", nil))
	if res.Code != "" || res.Status != 200 {
		t.Fatalf("request at the new address = %+v", res)
	}
}

// hueKey reads app1/hue's stored application key.
func (h *hueRig) hueKey(t *testing.T) string {
	t.Helper()
	var key string
	err := h.d.store.View(t.Context(), func(tx *store.Tx) error {
		s, err := tx.SlotSecrets("app1", "hue")
		key = string(s["application_key"])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// pairedHue is a hueRig whose bridge is paired, with the key and pin it
// stored.
func pairedHue(t *testing.T) (h *hueRig, key, pin string) {
	t.Helper()
	h = startHue(t, huesim.Config{})
	h.declareHue(t)
	h.collectApprove(t)
	if f := h.pair(t, pairing.LANPairOptions{}); f.State != pairing.FlowPaired {
		t.Fatalf("first pairing = %+v", f)
	}
	h.sim.EndLinkWindow() // a re-pair needs a new press
	return h, h.hueKey(t), h.sim.Fingerprint()
}

// oldKeyServes fails the test unless the key and pin stored before a
// re-pair are still stored, still serve a request at the bridge, the
// connection still says connected, and no replacement was journaled.
func (h *hueRig) oldKeyServes(t *testing.T, key, pin, when string) {
	t.Helper()
	if got := h.hueKey(t); got != key {
		t.Fatalf("%s: the stored application key changed", when)
	}
	st, _, err := h.d.grants.ConnectionState(t.Context(), "app1", "hue")
	if err != nil || st.Status != grants.ConnConnected || st.LastError != "" || st.LANPin == nil || st.LANPin.Fingerprint != pin {
		t.Fatalf("%s: state = %+v (pin %+v), %v; want connected with the old pin", when, st, st.LANPin, err)
	}
	if res, n := h.lights(t); res.Code != "" || res.Status != 200 || n != 1 {
		t.Fatalf("%s: CLIP v2 = %+v (%d at the bridge), want the old key serving", when, res, n)
	}
	if n := lanReplaceActs(t, h); n != 0 {
		t.Fatalf("%s: %d credential-replace acts", when, n)
	}
}

// TestLANRepairKeepsTheOldKey: a re-pair of a paired, working bridge
// (repin with the fingerprint the person accepted) that never completes
// leaves the old application key and pin stored and serving, the
// connection connected, and journals nothing: the button never pressed
// (the link window runs out), the bridge answering the pairing with an
// error, the bridge vanishing while it waits for the button, and snugd
// stopping meanwhile (which ends every flow; there is no other way to
// cancel a LAN pairing: a ctl that is interrupted leaves the flow to run
// out). Nothing is written before the one commit.
func TestLANRepairKeepsTheOldKey(t *testing.T) {
	ctx := t.Context()
	repair := func(t *testing.T, h *hueRig) pairing.Flow {
		t.Helper()
		f, err := h.d.devices.PairLAN(ctx, "app1", "hue", pairing.LANPairOptions{Repin: true, Accept: h.sim.Fingerprint()})
		if err != nil {
			t.Fatalf("re-pair: %v", err)
		}
		f = h.waitFlow(t, f.ID, func(f pairing.Flow) bool { return f.State == pairing.FlowPressButton || f.State.Ended() })
		if f.State != pairing.FlowPressButton {
			t.Fatalf("re-pair = %+v, want press-button", f)
		}
		return f
	}

	// The button never pressed: the 30 s link window runs out. It runs
	// on a bridge of its own beside the other cases.
	slow, slowKey, slowPin := pairedHue(t)
	unpressed := repair(t, slow)

	h, key, pin := pairedHue(t)
	h.oldKeyServes(t, key, pin, "after the first pairing")

	t.Run("the bridge answers the pairing with an error", func(t *testing.T) {
		f := repair(t, h)
		h.sim.FailLinks(901)
		defer h.sim.FailLinks(0)
		if f = h.waitFlow(t, f.ID, ended); f.State != pairing.FlowFailed || f.Message != lan.ErrPairingRefused.Error() {
			t.Fatalf("re-pair the bridge refused = %s %q", f.State, f.Message)
		}
		h.oldKeyServes(t, key, pin, "after a refused re-pair")
	})

	t.Run("the bridge vanishes while it waits for the button", func(t *testing.T) {
		// Another listener with the bridge's own certificate takes its
		// address for the re-pair, then goes away mid-wait.
		twin, err := huesim.Start(huesim.Config{BridgeID: h.sim.BridgeID(), Certificate: h.sim.Certificate()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(twin.Close)
		h.dial.route(hueAddr, twin)
		f := repair(t, h)
		twin.Vanish()
		f = h.waitFlow(t, f.ID, ended)
		h.dial.route(hueAddr, h.sim)
		if f.State != pairing.FlowFailed || f.Message != lan.ErrVanished.Error() {
			t.Fatalf("re-pair whose bridge vanished = %s %q", f.State, f.Message)
		}
		h.oldKeyServes(t, key, pin, "after a re-pair whose bridge vanished")
	})

	t.Run("snugd stops while it waits for the button", func(t *testing.T) {
		f := repair(t, h)
		h.d.pairing.Close() // Daemon.Close's first step: every flow ends
		if f = h.waitFlow(t, f.ID, ended); f.State != pairing.FlowFailed {
			t.Fatalf("re-pair at shutdown = %s %q, want failed", f.State, f.Message)
		}
		h.sim.PressButton() // too late: the exchange has stopped
		time.Sleep(1500 * time.Millisecond)
		h.oldKeyServes(t, key, pin, "after a re-pair cut by shutdown")
		h.sim.EndLinkWindow()
	})

	t.Run("the button is never pressed", func(t *testing.T) {
		var f pairing.Flow
		for deadline := time.Now().Add(lan.MaxPairWindow + 10*time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var err error
			if f, err = slow.d.pairing.Flow(ctx, unpressed.ID); err != nil {
				t.Fatal(err)
			}
			if f.State.Ended() {
				break
			}
		}
		if f.State != pairing.FlowFailed || f.Message != lan.ErrLinkTimeout.Error() {
			t.Fatalf("re-pair whose button was never pressed = %s %q", f.State, f.Message)
		}
		slow.oldKeyServes(t, slowKey, slowPin, "after a re-pair whose button was never pressed")
	})
}
