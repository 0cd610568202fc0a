package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeTestSummary: the summary README shows for scripts/test.sh
// lists the parts the script runs, in its order, with their count, and
// the sentence above it names each.
func TestReadmeTestSummary(t *testing.T) {
	script, err := os.ReadFile("../../scripts/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, m := range regexp.MustCompile(`(?m)^part "([^"]+)"`).FindAllStringSubmatch(string(script), -1) {
		parts = append(parts, m[1])
	}
	if len(parts) < 2 {
		t.Fatalf("found %d parts in scripts/test.sh: the pattern is looking at the wrong lines", len(parts))
	}
	block := regexp.MustCompile(`(?s)    == summary\n(.*?)    summary: ([^\n]*)\n`).FindStringSubmatch(string(readme))
	if block == nil {
		t.Fatal("README.md shows no test summary block")
	}
	var shown []string
	for _, m := range regexp.MustCompile(`(?m)^    passed   (.+) \(\d+ s\)$`).FindAllStringSubmatch(block[1], -1) {
		shown = append(shown, m[1])
	}
	if !slices.Equal(shown, parts) {
		t.Errorf("README's summary lists %q; scripts/test.sh runs %q", shown, parts)
	}
	if want := fmt.Sprintf("%d passed, 0 failed, 0 skipped", len(parts)); block[2] != want {
		t.Errorf("README's summary count = %q, want %q", block[2], want)
	}
	lead := string(readme)[:strings.Index(string(readme), "    == summary")]
	lead = lead[strings.LastIndex(lead, "Every part runs"):]
	for _, word := range []string{"gofmt", "go vet", "staticcheck", "go test -race", "node --test", "packaging", "end-to-end"} {
		if !strings.Contains(lead, word) {
			t.Errorf("the sentence before README's summary does not name %q", word)
		}
	}
}

// TestReadmePutsSnugdOnPath: every example after README's first section
// calls the binary snugd, so that section puts it on PATH (go install,
// or go build -o onto a directory on PATH) beside the two commands, and
// runs a snugd command there.
func TestReadmePutsSnugdOnPath(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	first, _, ok := strings.Cut(s[strings.Index(s, "## The two commands"):], "\n## ")
	if !ok {
		t.Fatal("README.md has no section after \"The two commands\"")
	}
	for _, want := range []string{"go run ./cmd/snugd\n", "scripts/test.sh\n", "go install ./cmd/snugd", "go build -o /usr/local/bin/snugd ./cmd/snugd", "\n    snugd ctl status\n", "without `sudo`"} {
		if !strings.Contains(first, want) {
			t.Errorf("README's first section lacks %q", want)
		}
	}
}
