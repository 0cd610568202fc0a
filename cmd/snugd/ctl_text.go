package main

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/snug/snugd/internal/names"
)

// shown returns s as snugd ctl prints text that came from outside (app
// ids, slots, host names, origins, provider names, import reports,
// journal fields, error messages): every character that would act on the
// terminal or on the reading order instead of showing itself is written
// as a visible escape. C0 and C1 controls and DEL (NUL, ESC sequences
// that redraw the screen, a carriage return that overwrites a line) become
// \x00, \x1b…; format characters (Cf: bidi overrides and isolates,
// zero-width spaces and joiners, the BOM), line and paragraph separators
// and other invisible code points become \u202e…; bytes that are not UTF-8
// become \xff. What an administrator reads is then what is there: a
// host name cannot hide a second origin behind a right-to-left override,
// and an app id cannot look like another.
//
// Printable text, spaces and tabs aside, passes unchanged; a backslash is
// not doubled, so an escape is told from literal text by reading it.
func shown(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && hidden(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

// hidden reports whether r does not show itself on a terminal: a control
// (tab included: it moves the cursor), a format character, a line or
// paragraph separator, a private-use or unassigned code point, or any
// other rune Go does not count as graphic. The ASCII space is shown.
func hidden(r rune) bool {
	if r == ' ' {
		return false
	}
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Co) ||
		!unicode.IsGraphic(r) || r == utf8.RuneError
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || hidden(r) {
			return true
		}
		i += n
	}
	return false
}

// shownArgs applies shown to every string (and fmt.Stringer) argument of
// a print call: c.out and c.fail print through it, so no command can
// forget.
func shownArgs(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		switch t := v.(type) {
		case string:
			out[i] = shown(t)
		case error:
			out[i] = shown(t.Error())
		case fmt.Stringer:
			out[i] = shown(t.String())
		default:
			out[i] = v
		}
	}
	return out
}

// jsonShown is the --json output's shown: it writes JSON with every hidden
// non-ASCII rune (bidi controls, zero-width and other format characters,
// separators, U+FFFD) spelled as a \u escape. Such runes can only be
// inside JSON strings, where the escape means the same character, so the
// document is unchanged for a program and readable for a person. ASCII
// passes as encoding/json wrote it (it escapes the C0 controls itself;
// newlines and tabs outside strings are its indentation), except DEL.
type jsonShown struct{ w io.Writer }

func (j jsonShown) Write(p []byte) (int, error) {
	if !needsEscape(string(p)) {
		return j.w.Write(p)
	}
	var b strings.Builder
	for _, r := range string(p) {
		if r < 0x7f || !hidden(r) {
			b.WriteRune(r)
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		} else {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	if _, err := io.WriteString(j.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// trustName shows a name a device gave itself (a bridge's, a helper's
// label) in a table: as it is when the names rule finds nothing to flag,
// else escaped and flagged (names.Display), so a lookalike or an invisible
// character cannot pass for a name the person knows.
func trustName(s string) string {
	if s == "" || (names.Check(s) == nil && !names.Inspect(s).Flagged) {
		return s
	}
	return names.Display(s)
}
