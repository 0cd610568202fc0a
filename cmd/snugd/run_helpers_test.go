package main

import (
	"testing"

	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/linkdevice"
)

// TestEveryRegistryHelperHasAnEntry: each helper the registry names has
// an executable in main's table, so its sidecar host is served, and the
// table names nothing the registry does not. The simulator's entry is
// snugd's own executable with "helper sim".
func TestEveryRegistryHelperHasAnEntry(t *testing.T) {
	reg, err := registry.Load()
	if err != nil {
		t.Fatal(err)
	}
	table := helperTable("snugd")
	ids := map[string]bool{}
	for _, h := range reg.Helpers() {
		ids[h.ID] = true
		if _, ok := table[h.ID]; !ok {
			t.Errorf("registry helper %q has no entry in helperTable", h.ID)
		}
	}
	for id := range table {
		if !ids[id] {
			t.Errorf("helperTable names %q, which the registry does not", id)
		}
	}
	if s := table["sim"]; s.Executable != "snugd" || len(s.Args) != 2 || s.Args[0] != "helper" || s.Args[1] != "sim" {
		t.Errorf("sim entry = %+v, want snugd helper sim", s)
	}
	if _, err := linkdevice.New(linkdevice.Config{Helpers: table, Dir: t.TempDir(), StateDir: t.TempDir()}); err != nil {
		t.Errorf("the supervisor refuses main's table: %v", err)
	}
}
