package starter_test

import (
	"testing"

	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/starter"
)

// TestStartersAreWrittenAsTheRegistryResolvesThem: every bundled
// requirement names a registry provider, so the install act's proposal
// goes through the borrow ban; each is written exactly as the registry
// resolves it, so the borrow changes nothing and the strong review shows
// what the starter's own connection.json says.
func TestStartersAreWrittenAsTheRegistryResolvesThem(t *testing.T) {
	c, err := starter.Load()
	if err != nil {
		t.Fatalf("starter.Load() = %v", err)
	}
	g, err := registry.Load()
	if err != nil {
		t.Fatalf("registry.Load() = %v", err)
	}
	for _, id := range c.IDs() {
		m, _ := c.Lookup(id)
		for _, r := range m.Requirements {
			res, err := g.Resolve(r)
			if err != nil || !res.Borrowed {
				t.Errorf("%s/%s: Resolve = %+v, %v; want a borrow", id, r.Slot, res, err)
				continue
			}
			if got, want := res.Requirement.Canonical(), r.Canonical(); got != want {
				t.Errorf("%s/%s resolves to\n%s\nwant the bundled\n%s", id, r.Slot, got, want)
			}
		}
	}
}
