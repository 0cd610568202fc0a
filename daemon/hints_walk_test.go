package daemon

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/pairing"
)

// ceremonyRows proposes (borrowing the shipped registry's entries, so
// each pairing seat is the registry's) and approves a SimpleFIN claim, a
// Hue LAN pairing, a simulator link and a Spotify sign-in on app1.
func ceremonyRows(t *testing.T, r *rig) {
	t.Helper()
	for slot, req := range map[string]map[string]any{
		"bank": {
			"slot": "bank", "provider": map[string]any{"name": "SimpleFIN"}, "kind": "basic_auth",
			"fields":           []any{map[string]any{"key": "access_credentials", "label": "Access credentials", "type": "secret"}},
			"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
			"declaredApiHosts": []any{"beta-bridge.simplefin.org"},
		},
		"hue": {
			"slot": "hue", "provider": map[string]any{"name": "Philips Hue"}, "kind": "api_key",
			"fields":  []any{map[string]any{"key": "application_key", "label": "Application key", "type": "secret"}},
			"request": map[string]any{"headerTemplate": map[string]any{"hue-application-key": "{{application_key}}"}},
			"lanHost": map[string]any{"class": "rfc1918-ipv4-literal", "label": "Bridge IP address"},
		},
		"chat": {
			"slot": "chat", "provider": map[string]any{"name": "Snug Simulator"}, "kind": "linked_device",
			"fields":           []any{map[string]any{"key": "helper_token", "label": "Helper token", "type": "secret"}},
			"declaredApiHosts": []any{"sim.sidecar.invalid"},
		},
		"music": {
			"slot": "music", "provider": map[string]any{"name": "Spotify"}, "kind": "oauth2_auth_code",
			"fields":           []any{map[string]any{"key": "client_id", "label": "Client ID", "type": "text"}},
			"endpoints":        map[string]any{"authorize": "https://accounts.spotify.com/authorize", "token": "https://accounts.spotify.com/api/token"},
			"declaredApiHosts": []any{"api.spotify.com"},
		},
	} {
		raw, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.d.proposers.ProposeUser(t.Context(), "app1", slot, raw); err != nil {
			t.Fatalf("ProposeUser %s: %v", slot, err)
		}
		if _, err := r.d.grants.Approve(t.Context(), "app1", slot); err != nil {
			t.Fatalf("Approve %s: %v", slot, err)
		}
	}
}

// commitVerified stores what a pairing ceremony stores, through its
// guarded commit: the field and the family's verify marker.
func commitVerified(t *testing.T, d *Daemon, app, slot, field string, mark func(s *grants.ConnState, at int64)) {
	t.Helper()
	before, err := d.grants.Connection(t.Context(), app, slot)
	if err != nil {
		t.Fatal(err)
	}
	err = d.grants.CommitIfUnchanged(t.Context(), before, grants.CommitChange, func(tx *store.Tx) error {
		return grants.WriteVerified(tx, app, slot, field, store.Secret("ceremony-"+slot), mark)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// connOf returns slot's summary and attention in apps.
func connOf(t *testing.T, apps []grants.AppSummary, app, slot string) (grants.ConnSummary, []grants.Attention) {
	t.Helper()
	for _, a := range apps {
		if a.AppID != app {
			continue
		}
		var at []grants.Attention
		for _, x := range a.Attention {
			if x.Slot == slot {
				at = append(at, x)
			}
		}
		for _, c := range a.Connections {
			if c.Slot == slot {
				return c, at
			}
		}
	}
	t.Fatalf("no %s/%s in %+v", app, slot, apps)
	return grants.ConnSummary{}, nil
}

// TestHintsCeremonyConnected is the connected and turned-down states of
// the ceremony rows that cmd/snugd's TestHintsWalkEveryKind cannot reach
// without the ceremonies: once each ceremony has stored what it stores,
// nothing needs attention and the row reads connected; when the provider
// or the device then turns it down, the hint sends it back to that
// ceremony (a pinned bridge whose certificate changed to pair lan
// --repin, which shows both fingerprints first).
func TestHintsCeremonyConnected(t *testing.T) {
	r := newRig(t)
	ctx := t.Context()
	ceremonyRows(t, r)
	if err := r.d.grants.SetTypedCredentials(ctx, "app1", "music", map[string]string{"client_id": "my-client"}); err != nil {
		t.Fatal(err)
	}
	commitVerified(t, r.d, "app1", "bank", "access_credentials", func(s *grants.ConnState, at int64) { s.ClaimVerifiedAt = &at })
	commitVerified(t, r.d, "app1", "hue", "application_key", func(s *grants.ConnState, at int64) {
		s.LANVerifiedAt = &at
		s.LANPin = &grants.LANPin{Fingerprint: strings.Repeat("ab:", 31) + "ab"}
	})
	commitVerified(t, r.d, "app1", "chat", "helper_token", func(s *grants.ConnState, at int64) { s.LinkVerifiedAt = &at })
	// What the sign-in stores (daemon/pairing's oauthflow.go): the token,
	// and the state connected.
	before, err := r.d.grants.Connection(ctx, "app1", "music")
	if err != nil {
		t.Fatal(err)
	}
	err = r.d.grants.CommitIfUnchanged(ctx, before, grants.CommitChange, func(tx *store.Tx) error {
		if err := tx.PutSecret(store.FieldKey("app1", "music", grants.AccessTokenField), store.Secret("at-"+secretKey)); err != nil {
			return err
		}
		st, _, err := grants.ReadConnState(tx, "app1", "music")
		if err != nil {
			return err
		}
		st.Status, st.LastError = grants.ConnConnected, ""
		return grants.WriteConnState(tx, "app1", "music", st)
	})
	if err != nil {
		t.Fatal(err)
	}
	apps, err := r.d.records.Apps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, slot := range []string{"bank", "hue", "chat", "music"} {
		if cs, at := connOf(t, apps, "app1", slot); cs.Credentials != grants.ConnConnected || len(at) != 0 {
			t.Errorf("%s after its ceremony: %s, %+v; want connected and nothing to do", slot, cs.Credentials, at)
		}
	}

	for _, tc := range []struct {
		slot   string
		status grants.ConnStatus
		msg    string
		want   string
	}{
		{"bank", grants.ConnError, pairing.AccessRevokedMessage, "the connection reports an error (" + pairing.AccessRevokedMessage + "): snugd ctl pair claim app1 bank"},
		{"hue", grants.ConnError, pairing.PinChangedMessage, "the connection reports an error (" + pairing.PinChangedMessage + "): snugd ctl pair lan app1 hue --repin"},
		{"chat", grants.ConnExpired, "", "the credentials expired: pair again: snugd ctl pair link app1 chat"},
		{"music", grants.ConnExpired, pairing.OauthExpiredMessage, "the token expired: sign in again: snugd ctl connect app1 music"},
		{"music", grants.ConnError, pairing.OauthFailedMessage, "the connection reports an error (" + pairing.OauthFailedMessage + "): snugd ctl connect app1 music"},
	} {
		r.d.grants.MarkConnection(ctx, "app1", tc.slot, tc.status, tc.msg)
		apps, err := r.d.records.Apps(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, at := connOf(t, apps, "app1", tc.slot); len(at) != 1 || at[0].Message != tc.want {
			t.Errorf("%s %s: %+v, want %q", tc.slot, tc.status, at, tc.want)
		}
	}
}
