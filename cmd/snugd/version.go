package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// linkedVersion is the release version, set when linking:
//
//	go build -ldflags "-X main.linkedVersion=1.2.3" ./cmd/snugd
//
// (scripts/deb.sh does). Nothing assigns it at run time; it is a variable
// only because the linker can set nothing else.
var linkedVersion string

// buildInfo is what snugd version reports.
type buildInfo struct {
	Version      string `json:"version"`
	Revision     string `json:"revision,omitempty"`     // VCS commit
	RevisionTime string `json:"revisionTime,omitempty"` // commit time, RFC 3339
	Modified     bool   `json:"modified"`               // built from a tree with uncommitted changes
	GoVersion    string `json:"goVersion"`
	OS           string `json:"os"`
	Arch         string `json:"arch"`
}

// readBuildInfo returns this binary's build information.
func readBuildInfo() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return buildInfoFrom(linkedVersion, bi)
}

// buildInfoFrom assembles buildInfo from a linker-set version (which wins)
// and the module's build information (nil when the binary has none). The
// version falls back to the module version (go install …@v1.2.3, or the
// VCS-derived pseudo-version Go stamps into builds from a checkout), then to
// "devel".
func buildInfoFrom(linked string, bi *debug.BuildInfo) buildInfo {
	info := buildInfo{Version: linked, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				info.RevisionTime = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			case "GOOS":
				info.OS = s.Value
			case "GOARCH":
				info.Arch = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	return info
}

// buildVersion returns snugd's version string: what the API sends as
// Snugd-Version and what snugd ctl compares with the daemon's.
func buildVersion() string { return readBuildInfo().Version }

// cmdVersion is snugd version [--json].
func cmdVersion(ctx context.Context, e env, args []string) int {
	flags := flag.NewFlagSet("snugd version", flag.ContinueOnError)
	flags.SetOutput(e.stderr)
	asJSON := flags.Bool("json", false, "print the build information as JSON")
	if code, ok := parseArgs(flags, args); !ok {
		return code
	}
	if err := writeVersion(e.stdout, readBuildInfo(), *asJSON); err != nil {
		fmt.Fprintf(e.stderr, "snugd version: %v\n", err)
		return exitNo
	}
	return exitOK
}

func writeVersion(w io.Writer, info buildInfo, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	rev := info.Revision
	if rev == "" {
		rev = "unknown"
	}
	if info.Modified {
		rev += " (modified)"
	}
	if info.RevisionTime != "" {
		rev += " " + info.RevisionTime
	}
	_, err := fmt.Fprintf(w, "snugd %s\nrevision %s\ngo       %s\nplatform %s/%s\n",
		info.Version, rev, info.GoVersion, info.OS, info.Arch)
	return err
}
