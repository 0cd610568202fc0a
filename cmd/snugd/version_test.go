package main

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestBuildInfoFrom(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef"},
		{Key: "vcs.time", Value: "2026-11-30T08:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
		{Key: "GOOS", Value: "darwin"},
		{Key: "GOARCH", Value: "arm64"},
	}
	tests := []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   buildInfo
	}{
		{name: "no build info", want: buildInfo{Version: "devel", GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}},
		{name: "linked version wins", linked: "1.2.3", bi: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-x"}},
			want: buildInfo{Version: "1.2.3", GoVersion: "go1.26.0", OS: runtime.GOOS, Arch: runtime.GOARCH}},
		{name: "module version", bi: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.4.0"}},
			want: buildInfo{Version: "v1.4.0", GoVersion: "go1.26.0", OS: runtime.GOOS, Arch: runtime.GOARCH}},
		{name: "devel module", bi: &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			want: buildInfo{Version: "devel", Revision: "0123456789abcdef", RevisionTime: "2026-11-30T08:00:00Z", Modified: true, GoVersion: "go1.26.0", OS: "darwin", Arch: "arm64"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := buildInfoFrom(tc.linked, tc.bi); got != tc.want {
				t.Errorf("buildInfoFrom(%q, …) = %+v, want %+v", tc.linked, got, tc.want)
			}
		})
	}
}

func runVersion(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	e := env{stdout: &out, stderr: &errOut, getenv: func(string) string { return "" }}
	code := dispatch(context.Background(), e, append([]string{"version"}, args...))
	return code, out.String(), errOut.String()
}

func TestVersionCommand(t *testing.T) {
	info := readBuildInfo()
	if buildVersion() != info.Version || info.Version == "" {
		t.Errorf("buildVersion() = %q, readBuildInfo().Version = %q, want the same non-empty string", buildVersion(), info.Version)
	}

	code, out, errOut := runVersion(t)
	if code != exitOK || !strings.HasPrefix(out, "snugd "+info.Version+"\n") || !strings.Contains(out, "go       "+info.GoVersion) ||
		!strings.Contains(out, "platform "+runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("snugd version = %d, %q (stderr %q)", code, out, errOut)
	}

	code, out, _ = runVersion(t, "--json")
	var got buildInfo
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil || got != info {
		t.Errorf("snugd version --json = %d, %s (%v), want %+v", code, out, err, info)
	}

	if code, _, errOut := runVersion(t, "extra"); code != exitUsage || !strings.Contains(errOut, "unexpected argument") {
		t.Errorf("snugd version extra = %d, %q, want %d", code, errOut, exitUsage)
	}
	if code, _, _ := runVersion(t, "--yaml"); code != exitUsage {
		t.Errorf("snugd version --yaml = %d, want %d", code, exitUsage)
	}
}

func TestWriteVersionText(t *testing.T) {
	var b bytes.Buffer
	info := buildInfo{Version: "1.0.0", Revision: "abc", RevisionTime: "2026-11-30T08:00:00Z", Modified: true, GoVersion: "go1.26.0", OS: "linux", Arch: "amd64"}
	if err := writeVersion(&b, info, false); err != nil {
		t.Fatal(err)
	}
	want := "snugd 1.0.0\nrevision abc (modified) 2026-11-30T08:00:00Z\ngo       go1.26.0\nplatform linux/amd64\n"
	if b.String() != want {
		t.Errorf("writeVersion = %q, want %q", b.String(), want)
	}
}
