package main

import (
	"fmt"
	"strings"
	"unicode"
)

// visible makes s safe to print on a terminal: control characters (C0,
// DEL, C1), bidirectional overrides and isolates, and other invisible
// format characters become \u{XXXX} escapes, so a value a host or an app
// chose cannot move the cursor, recolour the screen or reorder what the
// administrator reads. Invalid UTF-8 shows as \u{FFFD}.
func visible(s string) string {
	clean := true
	for _, r := range s {
		if !printable(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if printable(r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, `\u{%04X}`, r)
		}
	}
	return b.String()
}

func printable(r rune) bool {
	if r == unicode.ReplacementChar {
		return false
	}
	return unicode.IsPrint(r) || r == ' '
}
