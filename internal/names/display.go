package names

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Look is what Inspect finds in a name: whether a person could mistake
// it for another, what that other would be, and why.
type Look struct {
	// Flagged reports whether the name should not be shown plainly: it
	// mixes scripts, uses fullwidth or other compatibility forms of
	// ASCII, is written in letters of another script that all look like
	// ASCII ones, or holds characters Check refuses.
	Flagged bool
	// LooksLike is the name's skeleton when it differs from the name:
	// compatibility forms folded (NFKC), lookalike letters of other
	// scripts replaced by the ASCII ones they resemble, and characters
	// that do not show themselves dropped. Empty when the same.
	LooksLike string
	// Reasons are short phrases, e.g. "contains fullwidth letters".
	Reasons []string
}

// Inspect reports whether s could pass for another name on a screen. The
// skeleton is in the spirit of Unicode TR39's: NFKC (fullwidth letters,
// mathematical alphanumerics, ligatures, compatibility spaces) and a
// table of the letters of other scripts most often taken for ASCII
// (Cyrillic, Greek, Armenian, Cherokee, and Latin's own dotless i and
// script g); it does not carry all of TR39's confusables data. Scripts
// count as mixed as TR39's highly restrictive level has it: one script,
// or Latin with Han and the Japanese kana, with Han and Bopomofo, or with
// Han and Hangul. Safe for concurrent use.
func Inspect(s string) Look {
	var (
		lk                           Look
		skel                         strings.Builder
		fullLetters, fullOther       bool
		compat, lookalike, invisible bool
		lookScripts                  []string
	)
	scripts := map[string]bool{}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if (r == utf8.RuneError && n <= 1) || checkRune(r) != nil {
			invisible = true
			continue
		}
		if sc := scriptOf(r); sc != "" {
			scripts[sc] = true
		}
		if r < utf8.RuneSelf {
			skel.WriteRune(r)
			continue
		}
		if a, ok := lookalikes[r]; ok {
			lookalike = true
			if sc := scriptOf(r); !slices.Contains(lookScripts, sc) {
				lookScripts = append(lookScripts, sc)
			}
			skel.WriteString(a)
			continue
		}
		k := norm.NFKC.String(string(r))
		if k != string(r) && isASCII(k) {
			switch {
			case r >= 0xFF01 && r <= 0xFF5E && unicode.IsLetter(r):
				fullLetters = true
			case r >= 0xFF01 && r <= 0xFF5E || r == 0x3000:
				fullOther = true
			default:
				compat = true
			}
			skel.WriteString(k)
			continue
		}
		skel.WriteRune(r)
	}
	if mixed := mixedScripts(scripts); mixed != "" {
		lk.Reasons = append(lk.Reasons, "mixes scripts ("+mixed+")")
	}
	if fullLetters {
		lk.Reasons = append(lk.Reasons, "contains fullwidth letters")
	} else if fullOther {
		lk.Reasons = append(lk.Reasons, "contains fullwidth characters")
	}
	if compat {
		lk.Reasons = append(lk.Reasons, "contains styled or compatibility forms of ASCII")
	}
	sk := skel.String()
	if lookalike && (isASCII(sk) || len(scripts) > 1) {
		slices.Sort(lookScripts)
		lk.Reasons = append(lk.Reasons, "contains "+strings.Join(lookScripts, " and ")+" letters that look like Latin ones")
	}
	if invisible {
		lk.Reasons = append(lk.Reasons, "contains characters that do not show")
	}
	lk.Flagged = len(lk.Reasons) > 0
	if lk.Flagged && sk != s {
		lk.LooksLike = sk
	}
	return lk
}

// Display renders s for a person deciding whether to trust it: in double
// quotes, every character Check refuses written as a visible escape
// (\u3164, \x1b; invalid bytes as \xff), and, when Inspect flags it,
// followed by what it looks like and why:
//
//	"Ｗork laptop" (looks like "Work laptop"; contains fullwidth letters)
//
// A name that passes Check and is not flagged is shown as it is, quoted.
func Display(s string) string {
	lk := Inspect(s)
	q := `"` + Escape(s) + `"`
	if !lk.Flagged {
		return q
	}
	why := strings.Join(lk.Reasons, "; ")
	if lk.LooksLike != "" {
		return fmt.Sprintf(`%s (looks like "%s"; %s)`, q, Escape(lk.LooksLike), why)
	}
	return fmt.Sprintf("%s (%s)", q, why)
}

// Escape writes every character of s that Check refuses as a visible
// escape: \xNN for ASCII controls and for bytes that are not UTF-8,
// \uNNNN (\UNNNNNNNN above the BMP) for the rest. A double quote and a
// backslash are escaped too, so the result reads unambiguously inside
// quotes. Everything else passes unchanged.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case checkRune(r) == nil:
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// scriptOf names r's script, "" for Common and Inherited (digits,
// punctuation, spaces, combining marks) which mix with any script.
func scriptOf(r rune) string {
	for _, name := range []string{"Latin", "Cyrillic", "Greek", "Han", "Hiragana", "Katakana", "Hangul", "Armenian", "Arabic", "Hebrew", "Cherokee"} {
		if unicode.Is(unicode.Scripts[name], r) {
			return name
		}
	}
	if unicode.In(r, unicode.Common, unicode.Inherited) {
		return ""
	}
	for name, t := range unicode.Scripts {
		if unicode.Is(t, r) {
			return name
		}
	}
	return "Unknown"
}

// allowedMixes are the script sets TR39's highly restrictive level
// accepts beside a single script.
var allowedMixes = [][]string{
	{"Han", "Hiragana", "Katakana", "Latin"},
	{"Bopomofo", "Han", "Latin"},
	{"Han", "Hangul", "Latin"},
}

// mixedScripts names the scripts of a mix the rule does not accept,
// sorted and comma-separated; "" when the mix is fine.
func mixedScripts(set map[string]bool) string {
	if len(set) <= 1 {
		return ""
	}
	have := make([]string, 0, len(set))
	for sc := range set {
		have = append(have, sc)
	}
	slices.Sort(have)
	for _, ok := range allowedMixes {
		if subset(have, ok) {
			return ""
		}
	}
	return strings.Join(have, ", ")
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// lookalikes maps letters of other scripts to the ASCII they are most
// often taken for (a subset of TR39's confusables.txt). Read-only.
var lookalikes = map[rune]string{
	// Cyrillic
	'а': "a", 'в': "B", 'е': "e", 'ѕ': "s", 'і': "i", 'ј': "j", 'о': "o", 'р': "p", 'с': "c", 'у': "y", 'х': "x",
	'ԁ': "d", 'ԛ': "q", 'ԝ': "w", 'һ': "h", 'ӏ': "l", 'ɡ': "g", 'ү': "y", 'ѡ': "w", 'к': "k", 'м': "m", 'н': "H", 'т': "T",
	'А': "A", 'В': "B", 'Е': "E", 'З': "3", 'К': "K", 'М': "M", 'Н': "H", 'О': "O", 'Р': "P", 'С': "C", 'Т': "T",
	'У': "Y", 'Х': "X", 'Ѕ': "S", 'І': "I", 'Ј': "J", 'Ԛ': "Q", 'Ԝ': "W", 'Ү': "Y", 'Һ': "h", 'Ӏ': "I", 'Ь': "b",
	// Greek
	'Α': "A", 'Β': "B", 'Ε': "E", 'Ζ': "Z", 'Η': "H", 'Ι': "I", 'Κ': "K", 'Μ': "M", 'Ν': "N", 'Ο': "O", 'Ρ': "P",
	'Τ': "T", 'Υ': "Y", 'Χ': "X", 'ο': "o", 'ν': "v", 'ρ': "p", 'α': "a", 'ι': "i", 'κ': "k", 'υ': "u", 'ϲ': "c", 'ϳ': "j",
	// Armenian
	'օ': "o", 'ս': "u", 'ց': "g", 'հ': "h", 'ո': "n", 'Տ': "S", 'Օ': "O",
	// Cherokee
	'Ꭺ': "A", 'Ᏼ': "B", 'Ꮯ': "C", 'Ꭼ': "E", 'Ꮋ': "H", 'Ꭻ': "J", 'Ꮶ': "K", 'Ꮇ': "M", 'Ꮲ': "P", 'Ꮪ': "S", 'Ꭲ': "T", 'Ꮃ': "W", 'Ꮓ': "Z",
	// Latin beyond ASCII
	'ı': "i", 'ɑ': "a", 'ǀ': "l", 'ʏ': "y", 'ᴠ': "v", 'ᴡ': "w", 'ꮃ': "w",
}
