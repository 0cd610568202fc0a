package names

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Errors Check returns; each says what is wrong, never echoing the name.
var (
	ErrEmpty      = errors.New("name is empty")
	ErrNotUTF8    = errors.New("name is not valid UTF-8")
	ErrNotNFC     = errors.New("name is not in Unicode normalization form C (NFC)")
	ErrPadded     = errors.New("name starts or ends with a space")
	ErrInvisible  = errors.New("name holds a character that does not show itself")
	ErrUnassigned = errors.New("name holds an unassigned or private-use code point")
)

// A CharError says which character made Check refuse a name, by code
// point and offset, so a caller can tell the person without showing the
// character itself.
type CharError struct {
	Err    error // ErrInvisible or ErrUnassigned
	Rune   rune
	Offset int // byte offset in the name
}

func (e *CharError) Error() string {
	return fmt.Sprintf("%v: U+%04X at byte %d", e.Err, e.Rune, e.Offset)
}

func (e *CharError) Unwrap() error { return e.Err }

// Check reports whether s may be used as a name a person reads: valid
// UTF-8 in NFC, not empty, not padded with spaces, and without a
// character that does not show itself or may show as anything: controls
// (Cc), format characters (Cf: bidi controls, zero-width spaces and
// joiners, the BOM), line and paragraph separators, spaces other than
// U+0020, surrogates, private-use and unassigned code points,
// noncharacters, and the default-ignorable fillers that Unicode files
// under letters (the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0,
// U+034F and the like), the braille blank U+2800 and variation selectors
// other than the emoji ones (U+FE0E, U+FE0F). It does not bound the
// length: callers have their own limits. A name that passes may still
// look like another; Display says so. The error is one of the Err values
// (a *CharError for a character), and never contains the name.
func Check(s string) error {
	if s == "" {
		return ErrEmpty
	}
	if !utf8.ValidString(s) {
		return ErrNotUTF8
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return ErrPadded
	}
	for i, r := range s {
		if err := checkRune(r); err != nil {
			return &CharError{Err: err, Rune: r, Offset: i}
		}
	}
	if !norm.NFC.IsNormalString(s) {
		return ErrNotNFC
	}
	return nil
}

// checkRune returns ErrInvisible, ErrUnassigned or nil.
func checkRune(r rune) error {
	switch {
	case r == ' ':
		return nil
	case isInvisible(r):
		return ErrInvisible
	case unicode.Is(unicode.Co, r) || isNoncharacter(r) || !isAssigned(r):
		return ErrUnassigned
	}
	return nil
}

// isInvisible reports whether r does not show itself (or shows as
// nothing but space): see Check.
func isInvisible(r rune) bool {
	switch {
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Cs, unicode.Zl, unicode.Zp, unicode.Zs):
		return true // U+0020 is let through by checkRune
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		return true // U+034F, U+115F, U+1160, U+17B4, U+17B5, U+3164, U+FFA0, …
	case unicode.Is(unicode.Variation_Selector, r):
		return r != 0xFE0E && r != 0xFE0F
	}
	return r == 0x2800 || r == 0x1D159 || (r >= 0x1D173 && r <= 0x1D17A) || r == 0x180E || r == 0xFFFC
}

func isNoncharacter(r rune) bool {
	return r >= 0xFDD0 && r <= 0xFDEF || r&0xFFFE == 0xFFFE
}

// isAssigned reports whether r has a general category in this Go's
// Unicode tables (Go 1.26: Unicode 15.0). Go's unicode.C counts the
// unassigned (Cn) too, so the assigned kinds of C are named one by one.
func isAssigned(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}
