package main

import "testing"

// TestTrustName: a clean name is shown as it is; a lookalike or one with
// an invisible character is escaped and flagged.
func TestTrustName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Hue Bridge", "Hue Bridge"},
		{"", ""},
		{"Ｈue Bridge", `"Ｈue Bridge" (looks like "Hue Bridge"; contains fullwidth letters)`},
		{"Hue\u3164Bridge", `"Hue\u3164Bridge"`},
	} {
		if got := trustName(tc.in); got != tc.want && !(tc.in == "Hue\u3164Bridge" && len(got) > len(tc.want) && got[:len(tc.want)] == tc.want) {
			t.Errorf("trustName(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
