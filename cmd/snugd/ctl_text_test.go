package main

import "testing"

// TestTrustName: a clean name is shown as it is; a lookalike or one with
// an invisible character is escaped and flagged.
func TestTrustName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Hue Bridge", "Hue Bridge"},
		{"", ""},
		{"Ｈue Bridge", `"Ｈue Bridge" (looks like "Hue Bridge"; contains fullwidth letters)`},
		{"Hue\u3164Bridge", `"Hue\u3164Bridge" (looks like "HueBridge"; contains characters that do not show)`},
	} {
		if got := trustName(tc.in); got != tc.want {
			t.Errorf("trustName(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
