package main

import (
	"runtime"
	"strings"
	"testing"

	"github.com/snug/snugd/linkdevice"
)

// TestCtlDoctorShowsHelperSandbox: doctor says how a helper is confined
// on this machine, the Landlock ABI first; a warning where it is not.
func TestCtlDoctorShowsHelperSandbox(t *testing.T) {
	td := startDaemon(t)
	_, out, errOut := td.ctl(t, "", "doctor")
	c := linkdevice.Probe()
	want := "WARN  helper sandbox"
	if runtime.GOOS == "linux" && c.Confined() {
		want = "OK    helper sandbox   " + c.String()
	}
	if !strings.Contains(out, want) {
		t.Errorf("doctor printed\n%s\nstderr %q; want a line %q", out, errOut, want)
	}
	if runtime.GOOS == "linux" && c.Landlock > 0 && !strings.Contains(out, "landlock ABI ") {
		t.Errorf("doctor printed\n%s\nwant the Landlock ABI", out)
	}
}
