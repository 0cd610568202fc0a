// Package ident holds the two identifier rules every layer checks: the
// slot rule and the app-id rule (API.md). They are written
// here once; daemon/requirement names the slot rule for the schema
// (requirement.ValidSlot), the daemon refuses a bad app id as BAD_REQUEST,
// and the store checks both again as its last line before storage.
//
// Imports: the standard library only, so the store can import it.
package ident

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SlotPattern is the slot rule: lowercase and dash-only by
// construction, because SQLite compares bytes exactly and a mixed-case form
// would fork one provider into two rows.
const SlotPattern = `^[a-z0-9][a-z0-9-]{0,39}$`

// ValidSlot reports whether s matches SlotPattern. Mixed case is rejected,
// never folded.
func ValidSlot(s string) bool {
	if len(s) == 0 || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return false
		}
	}
	return true
}

// MaxAppIDChars bounds a host-assigned app identity (API.md: 1–128
// characters).
const MaxAppIDChars = 128

// The ways an app id breaks the rule. Their text is safe to show.
var (
	// ErrAppIDText is an app id that is not 1–128 characters of text:
	// invalid UTF-8 (a path can carry %FF) and control characters (which
	// no credential key may hold) are refused.
	ErrAppIDText = errors.New("app id must be 1-128 characters of text, without control or format characters")
	// ErrAppIDReserved is an app id that begins with "_": auth:_flow:<id>
	// and auth:_state_hmac are app-agnostic keys beside the apps'
	// auth:<appId>:… slices, and such an id could alias them.
	ErrAppIDReserved = errors.New("app id must not begin with _: such names are reserved for snugd's own state")
)

// CheckAppID returns ErrAppIDText or ErrAppIDReserved when id breaks the
// app-id rule, and nil when it keeps it.
func CheckAppID(id string) error {
	// Format characters (Cf: bidi overrides, zero-width joiners and
	// spaces, the BOM) are refused as host names refuse them: an app id
	// is printed to the administrator, and one that reads as another id
	// is a lie about whose credential is being approved.
	if n := utf8.RuneCountInString(id); n == 0 || n > MaxAppIDChars || !utf8.ValidString(id) ||
		strings.ContainsFunc(id, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) {
		return ErrAppIDText
	}
	if id[0] == '_' {
		return ErrAppIDReserved
	}
	return nil
}
