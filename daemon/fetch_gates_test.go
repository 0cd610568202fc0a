package daemon

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/transports"
)

// forgeRow writes a connection row straight into storage (as an import or
// a tampered file would leave it) and rebuilds the index.
func forgeRow(t *testing.T, r *rig, c store.Connection) {
	t.Helper()
	if c.Provenance == "" {
		c.Provenance = store.ProvenanceUser
	}
	if c.RequirementVersion == 0 {
		c.RequirementVersion = 1
	}
	if c.AllowedHosts == "" {
		c.AllowedHosts = "[]"
	}
	err := r.d.store.Update(t.Context(), func(tx *store.Tx) error {
		return tx.ForgeConnectionForTest(c)
	})
	if err != nil {
		t.Fatalf("forge row: %v", err)
	}
	if err := r.d.rebuildIndex(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func canonical(t *testing.T, v map[string]any) string {
	t.Helper()
	a, err := grants.Admit(mustJSONTB(t, v), grants.ProvenanceUser, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a.Canonical
}

// TestGates is the adversarial table: for each gate, requests that try to
// slip past it, with the code the executor must answer. Every refused
// request must reach no upstream and read no credential.
//
// conformance: P3-X14-03, P3-X14-04, P3-X14-05, P3-X14-07, P3-X14-08, P3-X14-09, P3-X14-10, P3-X14-11
// conformance: P3-X14-12, P3-X14-13, P3-X14-14, P3-X14-15, P3-X14-16, P3-X14-17, P3-X14-21, P3-X14-22
// conformance: P3-C12-10, P3-C12-12, P3-C12.5-37, P3-C12.5-43, P3-C12.5-48, P3-C12.3-19
// conformance: P1-NET3-10, P1-R4-05, P3-L16-05
func TestGates(t *testing.T) {
	keyed := func(t *testing.T, r *rig) {
		r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	}
	cases := []struct {
		name   string
		setup  func(t *testing.T, r *rig)
		policy fetch.TransportPolicy
		llm    bool // the chat lane composed the request
		app    string
		frame  []byte
		want   errcode.Code // "" means a 200 answer
	}{
		// Gate 1: shape.
		{name: "head with body", setup: keyed, frame: frame("HEAD", "https://api.example.com/", map[string]any{"body": "x"}), want: errcode.NetInvalidRequest},
		{name: "get with empty body", setup: keyed, frame: frame("GET", "https://api.example.com/", map[string]any{"body": ""}), want: errcode.NetInvalidRequest},
		{name: "body over the cap", setup: keyed, frame: frame("POST", "https://api.example.com/", map[string]any{"body": strings.Repeat("a", 262145)}), want: errcode.NetInvalidRequest},
		{name: "appId seat in frame", setup: keyed, frame: frame("GET", "https://api.example.com/", map[string]any{"appId": "app1"}), want: errcode.NetInvalidRequest},
		{name: "credential header", setup: keyed, frame: frame("GET", "https://api.example.com/", map[string]any{"headers": map[string]any{"X_Api_Key": "k"}}), want: errcode.NetInvalidRequest},
		{name: "lowercase method", setup: keyed, frame: frame("get", "https://api.example.com/", nil), want: errcode.NetInvalidRequest},
		{name: "userinfo", setup: keyed, frame: frame("GET", "https://user@api.example.com/", nil), want: errcode.NetInvalidRequest},
		// Resolution.
		{name: "malformed connection url", setup: keyed, frame: frame("GET", "snug-connection://ex//evil.example.com/x", nil), want: errcode.NetInvalidRequest},
		// Gate 2: binding. Identity is the call's, never the frame's.
		{name: "no host-assigned identity", setup: keyed, app: "-", frame: frame("GET", "https://api.example.com/", nil), want: errcode.NetInvalidRequest},
		{name: "another app's grant", setup: keyed, app: "app2", frame: frame("GET", "https://api.example.com/", nil), want: errcode.NetNotApproved},
		// Gate 3: grant.
		{name: "no rows", frame: frame("GET", "https://api.example.com/", nil), want: errcode.NetNotApproved},
		{name: "declared row with a stored credential", setup: func(t *testing.T, r *rig) {
			r.declare(t, "app1", apiKeyReq("ex", apiHost))
			if err := r.d.grants.SetCredentials(t.Context(), "app1", "ex", map[string]string{"api_key": secretKey}); err != nil {
				t.Fatal(err)
			}
		}, frame: frame("GET", "https://api.example.com/", nil), want: errcode.NetNotApproved},
		{name: "declared keyless row", setup: func(t *testing.T, r *rig) { r.declare(t, "app1", noneReq("open", apiHost)) },
			frame: frame("GET", "https://api.example.com/", nil), want: errcode.NetNotApproved},
		{name: "imported row", setup: func(t *testing.T, r *rig) {
			forgeRow(t, r, store.Connection{AppID: "app1", Slot: "ex", RequirementJSON: canonical(t, apiKeyReq("ex", apiHost)), Status: store.StatusDeclared, Imported: true})
		}, frame: frame("GET", "https://api.example.com/", nil), want: errcode.NetImportedUnapproved},
		{name: "imported and local declared claimants", setup: func(t *testing.T, r *rig) {
			forgeRow(t, r, store.Connection{AppID: "app1", Slot: "ex", RequirementJSON: canonical(t, apiKeyReq("ex", apiHost)), Status: store.StatusDeclared, Imported: true})
			r.declare(t, "app1", apiKeyReq("ex2", apiHost))
		}, frame: frame("GET", "https://api.example.com/", nil), want: errcode.NetNotApproved},
		{name: "two approved claimants", setup: func(t *testing.T, r *rig) {
			keyed(t, r)
			r.connect(t, "app1", noneReq("open", apiHost), nil)
		}, frame: frame("GET", "https://api.example.com/", nil), want: errcode.NetAmbiguousConnection},
		{name: "suffix of a ceiling host", setup: keyed, frame: frame("GET", "https://evil.api.example.com/", nil), want: errcode.NetHostBlocked},
		{name: "ceiling host as a prefix", setup: keyed, frame: frame("GET", "https://api.example.com.evil/", nil), want: errcode.NetHostBlocked},
		{name: "trailing dot", setup: keyed, frame: frame("GET", "https://api.example.com./", nil), want: errcode.NetHostBlocked},
		{name: "ip literal", setup: keyed, frame: frame("GET", "https://198.51.100.7/", nil), want: errcode.NetHostBlocked},
		{name: "numeric spelling", setup: keyed, frame: frame("GET", "https://0x7f.1/", nil), want: errcode.NetHostBlocked},
		{name: "loopback literal", setup: keyed, frame: frame("GET", "https://[::1]/", nil), want: errcode.NetHostBlocked},
		{name: "staged host is not granted", setup: func(t *testing.T, r *rig) {
			keyed(t, r)
			if _, err := r.d.grants.StagePending(t.Context(), "app1", mustAdmit(t, apiKeyReq("ex", apiHost, "new.example.com"))); err != nil {
				t.Fatal(err)
			}
		}, frame: frame("GET", "https://new.example.com/", nil), want: errcode.NetHostBlocked},
		{name: "staged change keeps the old host", setup: func(t *testing.T, r *rig) {
			keyed(t, r)
			if _, err := r.d.grants.StagePending(t.Context(), "app1", mustAdmit(t, apiKeyReq("ex", apiHost, "new.example.com"))); err != nil {
				t.Fatal(err)
			}
		}, frame: frame("GET", "https://api.example.com/", nil)},
		{name: "declaredApiHosts edited without approval", setup: func(t *testing.T, r *rig) {
			forgeRow(t, r, store.Connection{AppID: "app1", Slot: "ex", RequirementJSON: canonical(t, noneReq("ex", apiHost, "new.example.com")),
				Status: store.StatusApproved, AllowedHosts: `["api.example.com"]`})
		}, frame: frame("GET", "https://new.example.com/", nil), want: errcode.NetHostBlocked},
		{name: "pre-collection LAN row", setup: func(t *testing.T, r *rig) {
			v := lanReq("hue", "192.168.1.20")
			delete(v, "declaredApiHosts")
			r.connect(t, "app1", v, nil)
			if c, _ := r.d.grants.Connection(t.Context(), "app1", "hue"); len(c.AllowedHosts) != 0 {
				t.Fatalf("pre-collection ceiling = %v, want []", c.AllowedHosts)
			}
		}, frame: frame("GET", "https://192.168.1.20/api", nil), want: errcode.NetHostBlocked},
		{name: "model-composed request to an unconnected host", setup: keyed, llm: true, frame: frame("GET", "https://other.example.com/", nil), want: errcode.NetHostBlocked},
		// Gate 4: ceiling.
		{name: "http to a ceiling host", setup: keyed, frame: frame("GET", "http://api.example.com/", nil), want: errcode.NetSchemeBlocked},
		{name: "ftp to a ceiling host", setup: keyed, frame: frame("GET", "ftp://api.example.com/", nil), want: errcode.NetSchemeBlocked},
		{name: "punycode on both sides", setup: func(t *testing.T, r *rig) {
			r.connect(t, "app1", noneReq("idn", "bücher.example.com"), nil)
		}, frame: frame("GET", "https://BÜCHER.Example.com/x", nil)},
		{name: "LAN http under desktop", setup: func(t *testing.T, r *rig) {
			r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
		}, frame: frame("GET", "http://192.168.1.20/api", nil)},
		{name: "LAN http under browser", policy: fetch.PolicyBrowser, setup: func(t *testing.T, r *rig) {
			r.connect(t, "app1", lanReq("hue", "192.168.1.20"), map[string]string{"username": secretKey})
		}, frame: frame("GET", "http://192.168.1.20/api", nil), want: errcode.NetSchemeBlocked},
		// Gate 5: SSRF.
		{name: "LAN https under browser", policy: fetch.PolicyBrowser, setup: func(t *testing.T, r *rig) {
			r.connect(t, "app1", lanReq("hue", "10.0.0.5"), map[string]string{"username": secretKey})
		}, frame: frame("GET", "https://10.0.0.5/api", nil), want: errcode.NetSSRFBlocked},
		{name: "localhost in the ceiling", setup: func(t *testing.T, r *rig) {
			r.connect(t, "app1", noneReq("local", "localhost"), nil)
		}, frame: frame("GET", "https://localhost/", nil), want: errcode.NetSSRFBlocked},
		{name: "sidecar host without a helper", setup: func(t *testing.T, r *rig) {
			r.connect(t, "app1", linkedReq("wa", "whatsapp.sidecar.invalid"), map[string]string{"helper_token": secretKey})
		}, frame: frame("GET", "https://whatsapp.sidecar.invalid/chats", nil), want: errcode.NetFetchFailed},
		{name: "sidecar name on a non-linked row", setup: func(t *testing.T, r *rig) {
			r.connect(t, "app1", noneReq("fake", "whatsapp.sidecar.invalid"), nil)
		}, frame: frame("GET", "https://whatsapp.sidecar.invalid/chats", nil), want: errcode.NetFetchFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(c *Config) {
				c.TransportPolicy = tc.policy
				c.Helpers = helpersOf(map[string]*fakeHelper{"other": {}})
			})
			if tc.setup != nil {
				tc.setup(t, r)
			}
			app := tc.app
			switch app {
			case "":
				app = "app1"
			case "-":
				app = ""
			}
			before := len(r.up.requests())
			del := fetch.DeliveryApp
			if tc.llm {
				del = fetch.DeliveryLLM
			}
			res, resp := r.netCtx(t, t.Context(), app, tc.frame, del)
			if res.Code != tc.want {
				t.Fatalf("Net(%s) = code %q (%+v), want %q", tc.frame[:min(len(tc.frame), 120)], res.Code, resp.Error, tc.want)
			}
			if tc.want == "" {
				if resp.Status != 200 {
					t.Fatalf("status = %d, want 200", resp.Status)
				}
				return
			}
			if n := len(r.up.requests()) - before; n != 0 {
				t.Errorf("refused request reached the upstream %d times", n)
			}
			if n := len(r.lanDial.Dials()); n != 0 {
				t.Errorf("refused request dialed the LAN %d times", n)
			}
			if n := r.reads.Load(); n != 0 {
				t.Errorf("refused request read credentials %d times", n)
			}
			if !res.Answer || resp.Error == nil || resp.Error.Retryable && tc.want != errcode.NetFetchFailed {
				t.Errorf("answer = %+v, want an error envelope", resp)
			}
		})
	}
}

func linkedReq(slot, host string) map[string]any {
	return map[string]any{
		"slot":             slot,
		"provider":         map[string]any{"name": "WhatsApp"},
		"kind":             "linked_device",
		"fields":           []any{map[string]any{"key": "helper_token", "label": "Helper token", "type": "secret"}},
		"declaredApiHosts": []any{host},
	}
}

func storeRow(app, slot, reqJSON string, imported bool) store.Connection {
	return store.Connection{AppID: app, Slot: slot, RequirementJSON: reqJSON, Status: store.StatusDeclared, Imported: imported}
}

// gatedResolver answers like its inner resolver once release is closed,
// and reports on asked that a lookup is waiting.
type gatedResolver struct {
	inner   transports.Resolver
	asked   chan struct{}
	release chan struct{}
}

func (g *gatedResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	select {
	case g.asked <- struct{}{}:
	default:
	}
	<-g.release
	return g.inner.LookupNetIP(ctx, network, host)
}

// TestGrantChangedWhileWaiting: gates 3 and 4 decide on the index as the
// request arrived, but the confirm wait (and gate 5's lookup) can last
// minutes. A revoke, a re-approval that moved the ceiling, or a second
// claimant appearing meanwhile refuses the request before any credential
// is read or anything is sent; a write to another of the app's rows that
// leaves the grant as it was does not.
//
// conformance: P3-X14-08, P3-X14-10, P3-X14-12
func TestGrantChangedWhileWaiting(t *testing.T) {
	ctx := t.Context()
	keyed := func(t *testing.T, r *rig) {
		r.connect(t, "app1", apiKeyReq("ex", apiHost), map[string]string{"api_key": secretKey})
	}
	cases := []struct {
		name   string
		setup  func(t *testing.T, r *rig)
		change func(t *testing.T, r *rig)
		method string
		url    string
		want   errcode.Code
	}{
		{"re-approval moved the ceiling", keyed, func(t *testing.T, r *rig) {
			if _, err := r.d.grants.StagePending(ctx, "app1", mustAdmit(t, apiKeyReq("ex", "other.example.com"))); err != nil {
				t.Fatal(err)
			}
			if _, err := r.d.grants.Reapprove(ctx, "app1", "ex"); err != nil {
				t.Fatal(err)
			}
		}, "POST", "https://api.example.com/send", errcode.NetHostBlocked},
		{"re-approval moved a connection URL's host", keyed, func(t *testing.T, r *rig) {
			if _, err := r.d.grants.StagePending(ctx, "app1", mustAdmit(t, apiKeyReq("ex", "other.example.com"))); err != nil {
				t.Fatal(err)
			}
			if _, err := r.d.grants.Reapprove(ctx, "app1", "ex"); err != nil {
				t.Fatal(err)
			}
		}, "POST", "snug-connection://ex/send", errcode.NetHostBlocked},
		{"keyless connection revoked", func(t *testing.T, r *rig) { r.connect(t, "app1", noneReq("open", apiHost), nil) },
			func(t *testing.T, r *rig) {
				if _, err := r.d.grants.Revoke(ctx, "app1", "open"); err != nil {
					t.Fatal(err)
				}
			}, "POST", "https://api.example.com/send", errcode.NetNotApproved},
		{"a second claimant approved", keyed, func(t *testing.T, r *rig) {
			r.connect(t, "app1", noneReq("open", apiHost), nil)
		}, "POST", "https://api.example.com/send", errcode.NetAmbiguousConnection},
		{"revoked during the lookup", keyed, func(t *testing.T, r *rig) {
			if _, err := r.d.grants.Revoke(ctx, "app1", "ex"); err != nil {
				t.Fatal(err)
			}
		}, "GET", "https://api.example.com/items", errcode.NetNotApproved},
		{"another row written", keyed, func(t *testing.T, r *rig) {
			r.connect(t, "app1", noneReq("open", "b.example.com"), nil)
		}, "POST", "https://api.example.com/send", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := &gatedResolver{asked: make(chan struct{}, 1), release: make(chan struct{})}
			r := newRig(t, func(c *Config) {
				c.ConfirmTimeout = time.Hour
				gate.inner = c.Public.Resolver
				c.Public.Resolver = gate
			})
			tc.setup(t, r)
			var body map[string]any
			if tc.method == "POST" {
				body = map[string]any{"body": `{"x":1}`}
			}
			ch := r.parkedNet(ctx, t, "app1", frame(tc.method, tc.url, body))
			if tc.method == "GET" {
				<-gate.asked
				tc.change(t, r)
				close(gate.release)
			} else {
				close(gate.release)
				cs := waitConfirms(t, r.d, 1)
				tc.change(t, r)
				if err := r.d.exec.DecideConfirm(cs[0].ID, true, fetch.RememberOnce); err != nil {
					t.Fatal(err)
				}
			}
			res := <-ch
			if res.Code != tc.want {
				t.Fatalf("Net after the change = %q, want %q", res.Code, tc.want)
			}
			if tc.want == "" {
				if got := r.up.last(t).Header.Get("X-Key"); got != secretKey {
					t.Errorf("upstream X-Key = %q, want the credential", got)
				}
				return
			}
			if n := len(r.up.requests()); n != 0 {
				t.Errorf("the refused request reached the upstream %d times", n)
			}
			if n := r.reads.Load(); n != 0 {
				t.Errorf("the refused request read credentials %d times", n)
			}
		})
	}
}

// TestSidecarStandDownNeedsALinkedDeviceRow: gate 5 stands down for a
// registered helper's sidecar name only on a linked_device row. A row of
// another kind whose ceiling names <helper>.sidecar.invalid is refused as
// a DNS miss would be, and the helper is never called: a row of another
// kind cannot borrow a helper's session.
//
// conformance: P3-X14-22
func TestSidecarStandDownNeedsALinkedDeviceRow(t *testing.T) {
	h := &fakeHelper{status: 200, body: `{"ok":true}`}
	r := newRig(t, func(c *Config) { c.Helpers = helpersOf(map[string]*fakeHelper{"sim": h}) })
	// The registry's borrow ban keeps a proposer from staging such a row
	// (the host is the sim entry's); a tampered file could still hold
	// one, so it is forged into storage here.
	forgeRow(t, r, store.Connection{AppID: "app1", Slot: "fake", RequirementJSON: canonical(t, noneReq("fake", "sim.sidecar.invalid")),
		Status: store.StatusApproved, AllowedHosts: `["sim.sidecar.invalid"]`})
	res, _ := r.net(t, "app1", frame("GET", "https://sim.sidecar.invalid/v1/threads", nil))
	if res.Code != errcode.NetFetchFailed {
		t.Fatalf("Net = %q, want NET_FETCH_FAILED", res.Code)
	}
	if n := len(h.requests()); n != 0 {
		t.Fatalf("the helper was called %d times for an api_key row", n)
	}
	if len(r.dialer.Dials()) != 0 {
		t.Fatal("a sidecar name reached the network")
	}
}
