package daemon

import (
	"encoding/json"
	"testing"
)

// simRequirement is what an app declares for the registry's sim entry
// (host sim.sidecar.invalid, field helper_token); the borrow ban
// substitutes the entry's pinned values.
func simRequirement(slot string) []byte {
	b, _ := json.Marshal(map[string]any{
		"slot":             slot,
		"provider":         map[string]any{"name": "Snug Simulator"},
		"kind":             "linked_device",
		"fields":           []any{map[string]any{"key": "helper_token", "label": "Helper token", "type": "secret"}},
		"declaredApiHosts": []any{"sim.sidecar.invalid"},
	})
	return b
}

// connectSim declares and approves app's sim row in slot and, when values
// is not nil, stores them.
func (r *rig) connectSim(t testing.TB, app, slot string, values map[string]string) {
	t.Helper()
	res, err := r.d.proposers.ProposeUser(t.Context(), app, slot, simRequirement(slot))
	if err != nil {
		t.Fatalf("ProposeUser: %v", err)
	}
	if !res.Borrowed {
		t.Fatalf("the sim requirement did not borrow the registry's values: %+v", res)
	}
	if _, err := r.d.grants.Approve(t.Context(), app, slot); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if values != nil {
		if err := r.d.grants.SetCredentials(t.Context(), app, slot, values); err != nil {
			t.Fatalf("SetCredentials: %v", err)
		}
	}
}
