package sdk

import (
	"os/exec"
	"testing"
)

// TestRunnerFrameRules runs the host SDK's own unit tests (test/*.test.mjs,
// Node's test runner over a minimal stand-in for the DOM) from go test, so
// that the frame rules the runner enforces for the micro-apps it hosts are
// checked wherever the Go tests run: the open-url-request schema, unknown
// frame types ignored, and storage refused by a host that offers none.
// scripts/test.sh runs the same files as its "host SDK" part.
//
// conformance: P1-OU4-01, P1-OU4-02, P1-OU4-03, P1-OU4-04, P1-OU4-05, P1-OU4-06
// conformance: P1-R2-01, P1-F2-14, P1-R6-07
func TestRunnerFrameRules(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (apt-get install nodejs)")
	}
	out, err := exec.CommandContext(t.Context(), node, "--test", "test/").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test test/: %v\n%s", err, out)
	}
}
