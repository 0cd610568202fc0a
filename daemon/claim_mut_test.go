package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/snug/snugd/daemon/claim"
	"github.com/snug/snugd/daemon/claim/claimtest"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/internal/store"
)

// TestClaimCommitNeedsTheSameRow: a ceremony stores what it obtained only
// into the very row it started from. A row that changed in any one of
// the things approval froze while the claim ran (its requirement, its
// requirement version, its allowed hosts) takes nothing, each alone, as a
// tampered file or a write path that forgot one of them would leave it.
//
// conformance: P3-C12.12-22
func TestClaimCommitNeedsTheSameRow(t *testing.T) {
	other, _ := json.Marshal(map[string]any{
		"slot":             claimSlot,
		"provider":         map[string]any{"name": "SimpleFIN"},
		"kind":             "basic_auth",
		"fields":           []any{map[string]any{"key": "access_credentials", "label": "Bridge credentials", "type": "secret"}},
		"request":          map[string]any{"headerTemplate": map[string]any{"Authorization": "Basic {{base64(access_credentials)}}"}},
		"declaredApiHosts": []any{"bridge.simplefin.org"},
	})
	cases := []struct {
		name   string
		change func(t *testing.T, c *store.Connection)
	}{
		{"requirement", func(t *testing.T, c *store.Connection) {
			a, err := grants.Admit(other, grants.ProvenanceUser, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.RequirementJSON = a.Canonical
		}},
		{"requirement version", func(_ *testing.T, c *store.Connection) { c.RequirementVersion++ }},
		{"allowed hosts", func(_ *testing.T, c *store.Connection) {
			c.AllowedHosts = `["bridge.simplefin.org","evil.example"]`
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &claimtest.Bridge{}
			r := newClaimRig(t, b)
			r.approveSimpleFIN(t)
			b.OnClaim = func(w http.ResponseWriter, _ *http.Request, access string) {
				err := r.d.store.Update(context.Background(), func(tx *store.Tx) error {
					c, err := tx.Connection(claimApp, claimSlot)
					if err != nil {
						return err
					}
					tc.change(t, &c)
					return tx.ForgeConnectionForTest(c)
				})
				if err != nil {
					t.Errorf("change the row: %v", err)
				}
				io.WriteString(w, access)
			}
			_, err := r.d.pairing.ClaimSetupToken(t.Context(), claimApp, claimSlot, b.NewSetupToken(), false)
			if got := reasonOf(t, err); got != claim.ReasonConnectionChanged {
				t.Errorf("reason = %s (%v), want %s", got, err, claim.ReasonConnectionChanged)
			}
			if got := r.stored(t); len(got) != 0 {
				t.Errorf("a claim into a changed row stored %d values", len(got))
			}
		})
	}
}
