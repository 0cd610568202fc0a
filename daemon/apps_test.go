package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
)

// TestApps: every app with its connections, and what needs attention:
// a proposal, missing credentials, an expiring and an expired token, a
// LAN device without a pin, waiting confirms; nothing for a complete,
// keyless or revoked row. No value ever appears.
func TestApps(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConfirmTimeout = time.Hour })
	ctx := context.Background()
	now := r.d.now()
	r.declare(t, "app1", apiKeyReq("proposed", "a.example.com"))
	r.connect(t, "app1", apiKeyReq("nokey", "b.example.com"), nil)
	r.connect(t, "app1", apiKeyReq("done", apiHost), map[string]string{"api_key": secretKey})
	r.connect(t, "app1", noneReq("open", "open.example.com"), nil)
	r.connect(t, "app2", apiKeyReq("soon", "c.example.com"), map[string]string{"api_key": secretKey})
	r.connect(t, "app2", apiKeyReq("gone", "d.example.com"), map[string]string{"api_key": secretKey})
	r.connect(t, "app2", lanReq("bridge", "192.168.1.20"), map[string]string{"username": secretKey})
	r.connect(t, "app2", apiKeyReq("old", "e.example.com"), map[string]string{"api_key": secretKey})
	if _, err := r.d.grants.Revoke(ctx, "app2", "old"); err != nil {
		t.Fatal(err)
	}
	// Tokens obtained an hour ago: one lasts two hours (expires within a
	// day), one lasted half an hour.
	expire := func(slot string, in time.Duration) {
		err := r.d.store.Update(ctx, func(tx *store.Tx) error {
			st, _, err := grants.ReadConnState(tx, "app2", slot)
			if err != nil {
				return err
			}
			at, secs := now.Add(-time.Hour).UnixMilli(), int64(in/time.Second)
			st.ObtainedAt, st.ExpiresIn = &at, &secs
			return grants.WriteConnState(tx, "app2", slot, st)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	expire("soon", 2*time.Hour)
	expire("gone", 30*time.Minute)
	parked := r.parkedNet(ctx, t, "app1", post(`{"n":1}`))
	waitConfirms(t, r.d, 1)

	apps, err := r.d.records.Apps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 2 || apps[0].AppID != "app1" || apps[1].AppID != "app2" || len(apps[0].Connections) != 4 || len(apps[1].Connections) != 4 {
		t.Fatalf("Apps = %+v", apps)
	}
	if apps[0].PendingConfirms != 1 {
		t.Errorf("app1 pending confirms = %d, want 1", apps[0].PendingConfirms)
	}
	got := map[string]grants.AttentionKind{}
	for _, a := range apps {
		for _, at := range a.Attention {
			got[a.AppID+"/"+at.Slot] = at.Kind
			if strings.Contains(at.Message, secretKey) {
				t.Errorf("an attention message carries a value: %q", at.Message)
			}
		}
	}
	want := map[string]grants.AttentionKind{
		"app1/proposed": grants.AttentionProposal,
		"app1/nokey":    grants.AttentionCredentials,
		"app1/":         grants.AttentionConfirm,
		"app2/soon":     grants.AttentionExpiring,
		"app2/gone":     grants.AttentionExpired,
		"app2/bridge":   grants.AttentionPin,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("attention %s = %q, want %q", k, got[k], w)
		}
	}
	for _, k := range []string{"app1/done", "app1/open", "app2/old"} {
		if g, ok := got[k]; ok {
			t.Errorf("attention %s = %q, want none", k, g)
		}
	}
	// The connection rows carry state, expiry and a pin once recorded.
	r.setPin(t, "app2", "bridge", r.lanPin())
	apps, _ = r.d.records.Apps(ctx)
	for _, cs := range apps[1].Connections {
		switch cs.Slot {
		case "bridge":
			if cs.LANPin != r.lanPin() {
				t.Errorf("bridge pin = %q, want the recorded one", cs.LANPin)
			}
		case "soon":
			if cs.Credentials != grants.ConnConnected || cs.ExpiresAt == nil || !cs.ExpiresAt.Equal(now.Add(time.Hour).Truncate(time.Millisecond)) {
				t.Errorf("soon = %+v", cs)
			}
		}
	}
	for _, at := range apps[1].Attention {
		if at.Kind == grants.AttentionPin {
			t.Errorf("a pinned LAN device still needs attention: %+v", at)
		}
	}
	r.d.exec.DecideConfirm(r.d.exec.Confirms(context.Background())[0].ID, false, fetch.RememberOnce)
	<-parked
}
