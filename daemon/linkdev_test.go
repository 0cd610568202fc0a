package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/pairing"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/linkdevice"
)

// simHelperEnv makes this test binary the simulator helper process (the
// real linkdevice.RunSim), so the daemon tests run a real supervised
// helper over the real protocol.
const simHelperEnv = "SNUGD_DAEMON_TEST_SIM"

func TestMain(m *testing.M) {
	if os.Getenv(simHelperEnv) == "1" {
		if err := linkdevice.RunSim(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// simTargets is main's standing-target rule for the sim entry.
func simTargets(reg *registry.Registry) func(*requirement.Requirement) []fetch.StandingTarget {
	return func(r *requirement.Requirement) []fetch.StandingTarget {
		if p, ok := reg.Pairing(r); ok && p.Family == registry.FamilyDeviceLink && p.HelperID == "sim" {
			return []fetch.StandingTarget{{Trigger: "reply", Method: linkdevice.SimSendMethod, PathPattern: linkdevice.SimSendPath, BodyField: linkdevice.SimTargetField}}
		}
		return nil
	}
}

// simRig is a rig whose daemon runs a real supervisor with the simulator
// helper (this test binary), app1's sim row approved in slot chat.
type simRig struct {
	*rig
	sup *linkdevice.Supervisor
	key linkdevice.SessionKey
	// cfg, supCfg and target rebuild the daemon and its supervisor on
	// the same directories (restart).
	cfg    Config
	supCfg linkdevice.Config
	target *atomic.Pointer[Daemon]
}

func newSimRig(t *testing.T, simArgs ...string) *simRig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	target := &atomic.Pointer[Daemon]{}
	supCfg := linkdevice.Config{
		Helpers:  map[string]linkdevice.Spec{"sim": {Executable: filepath.Base(exe), Args: simArgs}},
		Dir:      filepath.Dir(exe),
		StateDir: filepath.Join(t.TempDir(), "helpers"),
		Env:      []string{simHelperEnv + "=1"},
		OnEvent: func(ev linkdevice.Event) {
			if d := target.Load(); d != nil {
				d.devices.HelperEvent(ev)
			}
		},
	}
	sup, err := linkdevice.New(supCfg)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load()
	if err != nil {
		t.Fatal(err)
	}
	var cfg *Config
	r := newRig(t, func(c *Config) {
		cfg = c // newRig's own, final once New has run
		c.ConfirmTimeout = time.Hour
		c.Helpers = sup
		c.Now = time.Now // the flow's deadline is a real context deadline
		c.Registry = reg
		c.StandingTargets = simTargets(reg)
	})
	target.Store(r.d)
	r.connectSim(t, "app1", "chat", nil)
	return &simRig{rig: r, sup: sup, key: linkdevice.SessionKey{HelperID: "sim", AppID: "app1", Slot: "chat"}, cfg: *cfg, supCfg: supCfg, target: target}
}

// waitFlow waits until the flow satisfies ok and returns it.
func (r *simRig) waitFlow(t *testing.T, id string, ok func(pairing.Flow) bool) pairing.Flow {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	hints := r.d.Hints(ctx)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		f, err := r.d.pairing.Flow(ctx, id)
		if err != nil {
			t.Fatalf("Flow: %v", err)
		}
		if ok(f) {
			return f
		}
		select {
		case <-hints:
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("flow stuck at %+v", f)
		}
	}
}

// scan "scans" the code through the simulator's side channel.
func (r *simRig) scan(t *testing.T, payload string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.sup.SessionDir(r.key), "scan"), []byte(payload), 0o600); err != nil {
		t.Fatal(err)
	}
}

// link runs the whole device link and returns the linked flow.
func (r *simRig) link(t *testing.T) pairing.Flow {
	t.Helper()
	f, err := r.d.devices.StartLink(t.Context(), "app1", "chat", false)
	if err != nil {
		t.Fatalf("StartLink: %v\n%s", err, r.logs.String())
	}
	if f.Kind != pairing.FlowDeviceLink || f.State != pairing.FlowQR {
		t.Fatalf("StartLink = %+v, want a device-link flow in qr", f)
	}
	f = r.waitFlow(t, f.ID, func(f pairing.Flow) bool { return f.QR != "" })
	if png, err := pairing.FlowQRPNG(f); err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("FlowQRPNG = %d bytes, %v", len(png), err)
	}
	r.scan(t, f.QR)
	return r.waitFlow(t, f.ID, func(f pairing.Flow) bool { return f.State.Ended() })
}

func (r *simRig) state(t *testing.T) (map[string]store.Secret, grants.ConnState) {
	t.Helper()
	var (
		secrets map[string]store.Secret
		st      grants.ConnState
	)
	err := r.d.store.View(t.Context(), func(tx *store.Tx) error {
		var err error
		if secrets, err = tx.SlotSecrets("app1", "chat"); err != nil {
			return err
		}
		st, _, err = grants.ReadConnState(tx, "app1", "chat")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return secrets, st
}

func send(thread, bodyThread string) []byte {
	return frame("POST", "https://sim.sidecar.invalid/v1/threads/"+thread+"/messages",
		map[string]any{"body": `{"threadId":"` + bodyThread + `","text":"on my way"}`})
}

// TestDeviceLinkWithTheSimulator: the whole device link against the real
// simulator process: start → qr (a PNG of it) → scan → linked, the token
// verified and committed with linkVerifiedAt in one write, released once;
// a send departs to the helper only after the confirm; a standing approval
// armed for one thread sends unattended within its cap and is journaled,
// another thread falls to the confirm, a disagreeing path and body is
// refused, the kill switch holds; revoke unlinks and the next request is
// refused. No name is ever looked up and nothing is dialed.
//
// conformance: P3-C12.12-15, P3-C12.12-17, P3-X14-22, P3-X14-30, P3-X14-31, P3-X14-32, P3-X14-33, P3-S17-02
func TestDeviceLinkWithTheSimulator(t *testing.T) {
	r := newSimRig(t, "--label", "Pixel of Test")
	f := r.link(t)
	if f.State != pairing.FlowLinked || f.Label != "Pixel of Test" || f.QR != "" {
		t.Fatalf("flow = %+v, want linked as the helper's label, no code", f)
	}
	secrets, st := r.state(t)
	tok := string(secrets["helper_token"])
	if len(tok) < 43 || st.Status != grants.ConnConnected || st.LinkVerifiedAt == nil {
		t.Fatalf("after the link: token of %d chars, state %+v; want ≥43 chars (256 bits), connected with linkVerifiedAt", len(tok), st)
	}
	// The token was released once: a later poll observes the link without it.
	if p, err := r.sup.PollLink(t.Context(), r.key); err != nil || p.State != linkdevice.LinkLinked || !p.Token.IsZero() {
		t.Fatalf("second poll = %+v, %v; want linked without the token", p.State, err)
	}
	if strings.Contains(r.logs.String(), tok) {
		t.Fatal("the helper token reached the log")
	}

	t.Run("a send asks first, then departs to the helper", func(t *testing.T) {
		prompted, code := r.promptAnswer(t, "app1", send("t-alice", "t-alice"), true, fetch.RememberOnce)
		if !prompted || code != "" {
			t.Fatalf("send = prompted %v, code %q; want asked and sent", prompted, code)
		}
		res, resp := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/v1/threads/t-alice/messages", nil))
		if res.Code != "" || resp.Status != http.StatusOK || !strings.Contains(resp.Body, "on my way") {
			t.Fatalf("read back = %q %d %s", res.Code, resp.Status, resp.Body)
		}
		if strings.Contains(string(res.Frame), tok) {
			t.Fatal("the token came back to the app")
		}
	})

	t.Run("standing approval for one thread", func(t *testing.T) {
		s, err := r.d.exec.ArmStanding(t.Context(), fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: "t-bob", Trigger: "reply",
			MaxSends: 2, Window: time.Hour, UserGesture: true})
		if err != nil {
			t.Fatalf("ArmStanding: %v", err)
		}
		for i := range 2 {
			if prompted, code := r.outcome(t, send("t-bob", "t-bob")); prompted || code != "" {
				t.Fatalf("armed send %d = prompted %v, code %q; want unattended", i, prompted, code)
			}
		}
		if prompted, _ := r.outcome(t, send("t-bob", "t-bob")); !prompted {
			t.Error("a send past the cap went out unattended")
		}
		if prompted, _ := r.outcome(t, send("t-family", "t-family")); !prompted {
			t.Error("another thread went out unattended")
		}
		if prompted, code := r.outcome(t, send("t-bob", "t-family")); prompted || code != errcode.NetConfirmDenied {
			t.Errorf("path and body disagreeing = prompted %v, code %q; want refused unasked", prompted, code)
		}
		j, err := r.d.records.Journal(t.Context(), journal.JournalQuery{AppID: "app1", UnattendedOnly: true})
		approved := 0
		for _, e := range j {
			if e.Outcome == "standing-approved" {
				approved++
				if e.Host != "sim.sidecar.invalid" || e.Slot != "chat" {
					t.Errorf("journaled %+v", e)
				}
			}
		}
		if err != nil || approved != 2 {
			t.Fatalf("unattended journal = %+v, %v; want the 2 sends standing-approved", j, err)
		}
		if r.d.exec.KillStanding(context.Background()) != 1 {
			t.Fatal("the kill switch disarmed nothing")
		}
		if _, err := r.d.exec.ArmStanding(t.Context(), fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: "t-bob", Trigger: "reply",
			MaxSends: 2, Window: time.Hour, UserGesture: true}); err != nil {
			t.Fatalf("re-arm: %v", err)
		}
		r.d.exec.KillStanding(context.Background())
		if prompted, _ := r.outcome(t, send("t-bob", "t-bob")); !prompted {
			t.Error("a send after the kill switch went out unattended")
		}
		// Quiet hours around the clock: the ordinary confirm decides.
		if _, err := r.d.exec.ArmStanding(t.Context(), fetch.StandingSpec{AppID: "app1", Slot: "chat", Target: "t-bob", Trigger: "reply",
			MaxSends: 5, Window: time.Hour, UserGesture: true, Quiet: &fetch.QuietHours{Start: 0, End: 24*time.Hour - time.Nanosecond}}); err != nil {
			t.Fatalf("arm with quiet hours: %v", err)
		}
		if prompted, _ := r.outcome(t, send("t-bob", "t-bob")); !prompted {
			t.Error("a send in quiet hours went out unattended")
		}
		r.d.exec.KillStanding(context.Background())
		_ = s
	})

	if r.resolver.Lookups() != 0 || len(r.dialer.Dials()) != 0 {
		t.Fatalf("the sidecar host reached DNS or the network: %v", r.resolver.Asked())
	}

	t.Run("revoke unlinks", func(t *testing.T) {
		dir := r.sup.SessionDir(r.key)
		if _, err := r.d.grants.Revoke(t.Context(), "app1", "chat"); err != nil {
			t.Fatalf("Revoke: %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("session directory after revoke: %v; want it removed by unlink", err)
		}
		if secrets, _ := r.state(t); len(secrets) != 0 {
			t.Errorf("slice after revoke = %d keys, want wiped", len(secrets))
		}
		if res, _ := r.net(t, "app1", send("t-bob", "t-bob")); res.Code == "" {
			t.Error("a request after revoke was sent")
		}
	})
}

// TestDeviceLinkRefusals: a link on a row that is not approved, or with no
// helper, refuses; a cancel ends the flow and the helper's attempt; a newer
// flow replaces an older one; another host's flow is an unknown id.
func TestDeviceLinkRefusals(t *testing.T) {
	r := newSimRig(t)
	if _, err := r.d.devices.StartLink(t.Context(), "app1", "nope", false); err == nil {
		t.Error("StartLink on no row succeeded")
	}
	f1, err := r.d.devices.StartLink(t.Context(), "app1", "chat", false)
	if err != nil {
		t.Fatal(err)
	}
	f2, err := r.d.devices.StartLink(t.Context(), "app1", "chat", false)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := r.d.pairing.Flow(t.Context(), f1.ID); f.State != pairing.FlowFailed {
		t.Errorf("replaced flow = %s, want failed", f.State)
	}
	f2 = r.waitFlow(t, f2.ID, func(f pairing.Flow) bool { return f.QR != "" })
	got, err := r.d.devices.CancelLink(t.Context(), f2.ID)
	if err != nil || got.State != pairing.FlowFailed || got.QR != "" {
		t.Fatalf("CancelLink = %+v, %v", got, err)
	}
	if _, err := pairing.FlowQRPNG(got); !isCode(err, errcode.NotFound) {
		t.Errorf("PNG of an ended flow = %v, want NOT_FOUND", err)
	}

	plain := newRig(t, func(c *Config) { c.Now = time.Now })
	plain.connectSim(t, "app1", "chat", nil)
	if _, err := plain.d.devices.StartLink(t.Context(), "app1", "chat", false); !isCode(err, errcode.NetFetchFailed) {
		t.Errorf("StartLink with no helpers = %v, want NET_FETCH_FAILED", err)
	}
}

// TestHelperStatus: the status lists the table's helpers with their state.
func TestHelperStatus(t *testing.T) {
	r := newSimRig(t)
	st, err := r.d.StatusReport(t.Context())
	if err != nil || len(st.Helpers) != 1 || st.Helpers[0].ID != "sim" {
		t.Fatalf("status helpers = %+v, %v", st.Helpers, err)
	}
	b, _ := json.Marshal(st.Helpers)
	if strings.Contains(string(b), "token") {
		t.Errorf("status carries %s", b)
	}
}

func isCode(err error, c errcode.Code) bool {
	got, ok := errcode.CodeOf(err)
	return ok && got == c
}

// fakeHelpers is a Helpers whose table is ids; only its table is used.
type fakeHelpers struct {
	*linkdevice.Supervisor // nil: never called
	ids                    []string
}

func (f fakeHelpers) Helpers() []string { return f.ids }

func (fakeHelpers) Run(ctx context.Context) error { <-ctx.Done(); return nil }

func (fakeHelpers) Subscribe(func(linkdevice.Event)) {}

func (fakeHelpers) Swaps() []linkdevice.SessionKey { return nil }

func (fakeHelpers) Confinement() linkdevice.Confinement { return linkdevice.Confinement{} }

// TestHelperTransportsOnlyForRegisteredHelpers: gate 6a gets a transport
// for a helper only when the registry names it and the table runs it, so
// gate 5 stands down for exactly the registered helpers' sidecar names.
//
// conformance: P3-X14-22, P3-X14-33
func TestHelperTransportsOnlyForRegisteredHelpers(t *testing.T) {
	reg, err := registry.Load()
	if err != nil {
		t.Fatal(err)
	}
	log := newRig(t).d.log
	got := pairing.HelperTransports(reg, fakeHelpers{ids: []string{"sim", "whatsapp"}}, log)
	if len(got) != 1 || got["sim"] == nil {
		t.Errorf("transports = %v, want sim only (whatsapp is in no registry entry)", got)
	}
	if got := pairing.HelperTransports(reg, fakeHelpers{ids: nil}, log); len(got) != 0 {
		t.Errorf("transports with an empty table = %v, want none", got)
	}
	if got := pairing.HelperTransports(reg, nil, log); len(got) != 0 {
		t.Errorf("transports without a supervisor = %v, want none", got)
	}
}

// TestLocalRefusal: each helper failure maps to its code; anything else,
// a crash or silence included, is NET_FETCH_FAILED.
//
// conformance: P3-X14-33
func TestLocalRefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want errcode.Code
	}{
		{linkdevice.ErrResponseTooLarge, errcode.NetSizeExceeded},
		{&linkdevice.RPCError{Code: linkdevice.CodeUnauthorized, Message: "no"}, errcode.NetAuthFailed},
		{&linkdevice.RPCError{Code: linkdevice.CodeNotLinked, Message: "no"}, errcode.NetAuthFailed},
		{linkdevice.ErrOutOfBounds, errcode.NetInvalidRequest},
		{linkdevice.ErrHelperDown, errcode.NetFetchFailed},
		{linkdevice.ErrHelperFailed, errcode.NetFetchFailed},
		{context.DeadlineExceeded, errcode.NetFetchFailed},
	} {
		if got := fetch.LocalRefusal(tc.err); got.Code != tc.want {
			t.Errorf("localRefusal(%v) = %s, want %s", tc.err, got.Code, tc.want)
		}
	}
}

// reflectingHelpers is a hostile helper behind the supervisor seam: its
// answer reflects the token in the body and in headers snugd must not
// pass on.
type reflectingHelpers struct {
	fakeHelpers
	got chan linkdevice.Request
}

func (h reflectingHelpers) Do(_ context.Context, _ linkdevice.SessionKey, req linkdevice.Request) (linkdevice.Response, error) {
	h.got <- req
	tok := req.Token.Reveal()
	return linkdevice.Response{Status: 200, Header: http.Header{
		"Content-Type": {"application/json"}, "Set-Cookie": {"s=" + tok}, "X-Helper-Token": {tok}, "Authorization": {"Bearer " + tok},
	}, Body: []byte(`{"echo":"` + tok + `"}`)}, nil
}

// TestHostileHelperAnswer: through the supervisor adapter, the helper gets
// the slot's token and the stripped headers, and what it answers is
// scrubbed of the token and filtered to the header whitelist.
//
// conformance: P3-X14-32
func TestHostileHelperAnswer(t *testing.T) {
	h := reflectingHelpers{fakeHelpers: fakeHelpers{ids: []string{"sim"}}, got: make(chan linkdevice.Request, 1)}
	const tok = "hostile-test-token-0123456789abcdef0123456789ABCDEF"
	r := newRig(t, func(c *Config) { c.Helpers = h; c.ConfirmTimeout = time.Hour })
	r.connectSim(t, "app1", "chat", map[string]string{"helper_token": tok})
	res, _ := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/v1/threads", map[string]any{"headers": map[string]any{"Accept-Encoding": "gzip", "X-Trace": "1"}}))
	if res.Code != "" {
		t.Fatalf("Net = %q", res.Code)
	}
	req := <-h.got
	if req.Token.Reveal() != tok || req.PathAndQuery != "/v1/threads" || req.Header.Get("Accept-Encoding") != "" || req.Header.Get("X-Trace") != "1" {
		t.Errorf("helper got %s %v (token right: %v)", req.PathAndQuery, req.Header, req.Token.Reveal() == tok)
	}
	frame := string(res.Frame)
	for _, bad := range []string{tok, "set-cookie", "x-helper-token", "authorization"} {
		if strings.Contains(strings.ToLower(frame), strings.ToLower(bad)) {
			t.Errorf("the app's frame carries %q: %s", bad, frame)
		}
	}
	if r.resolver.Lookups() != 0 || len(r.dialer.Dials()) != 0 {
		t.Errorf("the sidecar host reached DNS or the network")
	}
}
