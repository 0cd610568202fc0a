package names

import (
	"unicode"
	"unicode/utf8"
)

// FoldsOnto reports whether key is not target but a decoder that matches
// names case-insensitively could take it for target: the two are equal
// under Unicode simple case folding (so "ThreadID", "threadſd" with a
// long s, and "Kelvin" with the Kelvin sign fold together), or once the
// Turkish dotless ı (U+0131) and dotted İ (U+0130) are taken as i, the
// way .NET's and Java's culture-sensitive comparisons do. A gate that
// looks for target by exact name refuses such a key rather than let a
// helper read it as target. Invalid UTF-8 compares byte by byte.
func FoldsOnto(key, target string) bool {
	if key == target {
		return false
	}
	for key != "" && target != "" {
		a, na := utf8.DecodeRuneInString(key)
		b, nb := utf8.DecodeRuneInString(target)
		if (a == utf8.RuneError && na == 1) || (b == utf8.RuneError && nb == 1) {
			if key[:na] != target[:nb] {
				return false
			}
			key, target = key[na:], target[nb:]
			continue
		}
		key, target = key[na:], target[nb:]
		if !runeFolds(a, b) {
			return false
		}
	}
	return key == "" && target == ""
}

// runeFolds reports whether a and b are one letter under simple folding
// plus the ı/İ pair.
func runeFolds(a, b rune) bool {
	a, b = dotless(a), dotless(b)
	if a == b {
		return true
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}

func dotless(r rune) rune {
	if r == 'ı' || r == 'İ' {
		return 'i'
	}
	return r
}
