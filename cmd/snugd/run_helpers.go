package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/linkdevice"
)

// helperTable is snugd's literal helper table: a registry helper id → the
// executable run for it, a bare name looked up only in snugd's own install
// directory (linkdevice.Config.Dir), with fixed arguments. Nothing an app
// or a requirement says reaches it. The simulator ships inside snugd as
// the hidden snugd helper sim, so its entry names snugd's own executable;
// this overrides the registry's executable name (snugd-helper-sim), which
// names the separate program a packager may install instead. Every
// registry helper needs an entry here (TestEveryRegistryHelperHasAnEntry).
func helperTable(self string) map[string]linkdevice.Spec {
	return map[string]linkdevice.Spec{
		"sim": {Executable: self, Args: []string{"helper", "sim"}},
	}
}

// simStandingTarget is the sim entry's standing-approval target rule:
// a reply is a POST to /v1/threads/{target}/messages whose body's
// threadId names the same thread.
var simStandingTarget = fetch.StandingTarget{
	Trigger: "reply", Method: linkdevice.SimSendMethod, PathPattern: linkdevice.SimSendPath, BodyField: linkdevice.SimTargetField,
}

// standingTargets answers Config.StandingTargets from the registry: a
// requirement that binds the sim entry's device-link pairing may arm its
// reply rule; nothing else may arm anything.
func standingTargets(reg *registry.Registry) func(*requirement.Requirement) []fetch.StandingTarget {
	return func(r *requirement.Requirement) []fetch.StandingTarget {
		if p, ok := reg.Pairing(r); ok && p.Family == registry.FamilyDeviceLink && p.HelperID == "sim" {
			return []fetch.StandingTarget{simStandingTarget}
		}
		return nil
	}
}

// newHelpers builds the helper supervisor for the daemon in dataDir: the
// table above, executables from the directory of snugd's own executable
// (symlinks resolved), session directories under <dataDir>/helpers, PATH
// as a helper's whole environment. The daemon runs it and subscribes to
// its events.
func newHelpers(dataDir string, log *slog.Logger) (*linkdevice.Supervisor, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find snugd's own executable: %w", err)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	cfg := linkdevice.Config{
		Helpers:  helperTable(filepath.Base(exe)),
		Dir:      filepath.Dir(exe),
		StateDir: filepath.Join(dataDir, "helpers"),
		Env:      []string{"PATH=" + os.Getenv("PATH")},
		Logger:   log.With("component", "helpers"),
	}
	if runtime.GOOS == "linux" {
		// Each helper starts through snugd helper confine: Landlock,
		// no_new_privs, and a reaper that ends every descendant with
		// the session; anything reparented to snugd ends too.
		cfg.Confine = []string{exe, "helper", linkdevice.ConfineCommand}
		cfg.ReapOrphans = true
	}
	return linkdevice.New(cfg)
}
