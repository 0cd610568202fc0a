package ident

import (
	"regexp"
	"strings"
	"testing"
)

// conformance: P3-C12.2-05
func TestValidSlot(t *testing.T) {
	re := regexp.MustCompile(SlotPattern)
	for _, s := range []string{"a", "openweather", "a-b", "0", "a-", strings.Repeat("a", 40), strings.Repeat("a", 41), "", "-a", "A", "aB", "a_b", "a.b", "é", "a b"} {
		if got, want := ValidSlot(s), re.MatchString(s); got != want {
			t.Errorf("ValidSlot(%q) = %v, want %v (SlotPattern)", s, got, want)
		}
	}
}

// FuzzValidSlot: ValidSlot is SlotPattern, byte for byte.
func FuzzValidSlot(f *testing.F) {
	for _, s := range []string{"a", "a-b", "-a", "A", strings.Repeat("z", 41)} {
		f.Add(s)
	}
	re := regexp.MustCompile(SlotPattern)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidSlot(s), re.MatchString(s); got != want {
			t.Fatalf("ValidSlot(%q) = %v, SlotPattern says %v", s, got, want)
		}
	})
}

func TestCheckAppID(t *testing.T) {
	cases := []struct {
		id   string
		want error
	}{
		{"app1", nil},
		{"com.example.app:1", nil},
		{"é", nil},
		{strings.Repeat("é", MaxAppIDChars), nil},
		{strings.Repeat("a", MaxAppIDChars+1), ErrAppIDText},
		{"", ErrAppIDText},
		{"a\x00b", ErrAppIDText},
		{"a\u0085b", ErrAppIDText},
		{"\xff", ErrAppIDText},
		{"_flow", ErrAppIDReserved},
	}
	for _, tc := range cases {
		if got := CheckAppID(tc.id); got != tc.want {
			t.Errorf("CheckAppID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}
