package names

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"plain", "Work laptop", nil},
		{"accents", "Café de Flore", nil},
		{"japanese", "田中のiPhone", nil},
		{"emoji presentation", "Home ❤\ufe0f", nil},
		{"fullwidth passes, Display flags it", "Ｗork laptop", nil},
		{"empty", "", ErrEmpty},
		{"invalid utf8", "Work\xff", ErrNotUTF8},
		{"leading space", " Work", ErrPadded},
		{"trailing space", "Work ", ErrPadded},
		{"NFD", "Cafe\u0301", ErrNotNFC},
		{"nul", "Work\x00", ErrInvisible},
		{"escape", "Work\x1b[2J", ErrInvisible},
		{"C1", "Work\u0085", ErrInvisible},
		{"zero width space", "Pixel\u200b 8", ErrInvisible},
		{"BOM", "Pixel\ufeff 8", ErrInvisible},
		{"line separator", "Pixel\u2028 8", ErrInvisible},
		{"paragraph separator", "Pixel\u2029 8", ErrInvisible},
		{"RLO", "Work\u202elaptop", ErrInvisible},
		{"ALM", "Work\u061c", ErrInvisible},
		{"zero width joiner", "a\u200db", ErrInvisible},
		{"hangul filler U+3164", "Work laptop\u3164", ErrInvisible},
		{"hangul choseong filler U+115F", "Work\u115flaptop", ErrInvisible},
		{"hangul jungseong filler U+1160", "Work\u1160laptop", ErrInvisible},
		{"halfwidth hangul filler U+FFA0", "Work\uffa0laptop", ErrInvisible},
		{"combining grapheme joiner", "Wo\u034frk", ErrInvisible},
		{"khmer vowel inherent", "Wo\u17b4rk", ErrInvisible},
		{"braille blank", "Work\u2800laptop", ErrInvisible},
		{"no-break space", "Work\u00a0laptop", ErrInvisible},
		{"ideographic space", "Work\u3000laptop", ErrInvisible},
		{"tag character", "Work\U000e0041", ErrInvisible},
		{"variation selector 1", "Wo\ufe00rk", ErrInvisible},
		{"mongolian vowel separator", "Wo\u180erk", ErrInvisible},
		{"private use", "Work\ue000", ErrUnassigned},
		{"supplementary private use", "Work\U000f0000", ErrUnassigned},
		{"noncharacter", "Work\ufdd0", ErrUnassigned},
		{"noncharacter FFFF", "Work\uffff", ErrUnassigned},
		{"unassigned", "Work\u0378", ErrUnassigned},
		{"unassigned plane 3", "Work\U00033333", ErrUnassigned},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.in)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Check(%q) = %v, want %v", tc.in, err, tc.want)
			}
			if err != nil && len(tc.in) > 0 && strings.Contains(err.Error(), tc.in) {
				t.Errorf("Check(%q) error %q echoes the name", tc.in, err)
			}
		})
	}
}

func TestCheckCharError(t *testing.T) {
	err := Check("ab\u3164c")
	var ce *CharError
	if !errors.As(err, &ce) {
		t.Fatalf("Check = %v, want a *CharError", err)
	}
	if ce.Rune != 0x3164 || ce.Offset != 2 {
		t.Errorf("CharError = U+%04X at %d, want U+3164 at 2", ce.Rune, ce.Offset)
	}
	if got, want := err.Error(), "U+3164 at byte 2"; !strings.Contains(got, want) {
		t.Errorf("Error() = %q, want it to contain %q", got, want)
	}
}

func TestDisplay(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "Work laptop", `"Work laptop"`},
		{"accents", "Café", `"Café"`},
		{"japanese with latin", "田中のiPhone", `"田中のiPhone"`},
		{"korean with latin", "민수의 Galaxy", `"민수의 Galaxy"`},
		{"all cyrillic word", "Работа", `"Работа"`},
		{"greek word", "Ελληνικά", `"Ελληνικά"`},
		{"fullwidth W", "Ｗork laptop", `"Ｗork laptop" (looks like "Work laptop"; contains fullwidth letters)`},
		{"fullwidth digit", "Laptop ２", `"Laptop ２" (looks like "Laptop 2"; contains fullwidth characters)`},
		{"math bold", "𝐖ork laptop", `"𝐖ork laptop" (looks like "Work laptop"; contains styled or compatibility forms of ASCII)`},
		{"cyrillic o in latin", "Wоrk laptop", `"Wоrk laptop" (looks like "Work laptop"; mixes scripts (Cyrillic, Latin); contains Cyrillic letters that look like Latin ones)`},
		{"whole cyrillic lookalike", "сое", `"сое" (looks like "coe"; contains Cyrillic letters that look like Latin ones)`},
		{"greek in latin", "Αpple", `"Αpple" (looks like "Apple"; mixes scripts (Greek, Latin); contains Greek letters that look like Latin ones)`},
		{"cyrillic and greek", "\u0391\u043e", `"Αо" (looks like "Ao"; mixes scripts (Cyrillic, Greek); contains Cyrillic and Greek letters that look like Latin ones)`},
		{"hangul filler", "Work laptop\u3164\u115f", `"Work laptop\u3164\u115f" (looks like "Work laptop"; contains characters that do not show)`},
		{"zero width", "Pixel\u200b\ufeff\u2028 8", `"Pixel\u200b\ufeff\u2028 8" (looks like "Pixel 8"; contains characters that do not show)`},
		{"escape sequence", "a\x1b[2Jb", `"a\x1b[2Jb" (looks like "a[2Jb"; contains characters that do not show)`},
		{"quote", `say "hi"`, `"say \"hi\""`},
		{"invalid", "ab\xff", `"ab\xff" (looks like "ab"; contains characters that do not show)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Display(tc.in); got != tc.want {
				t.Errorf("Display(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestFoldsOnto(t *testing.T) {
	tests := []struct {
		key, target string
		want        bool
	}{
		{"threadId", "threadId", false}, // the field itself
		{"threadıd", "threadId", true},  // dotless ı
		{"threadİd", "threadId", true},  // dotted İ
		{"THREADID", "threadId", true},
		{"threadid", "threadId", true},
		{"threadſd", "threadSd", true}, // long s folds onto s
		{"\u212aey", "key", true},      // Kelvin sign
		{"thread_id", "threadId", false},
		{"threadIds", "threadId", false},
		{"thread", "threadId", false},
		{"text", "threadId", false},
		{"", "threadId", false},
		{"threadΙd", "threadId", false}, // Greek capital iota does not fold onto i
		{"ÿ", "Ÿ", true},
		{"\xff", "\xff", false},
		{"a\xff", "A\xff", true},
		{"a\xff", "A\xfe", false},
	}
	for _, tc := range tests {
		if got := FoldsOnto(tc.key, tc.target); got != tc.want {
			t.Errorf("FoldsOnto(%q, %q) = %v, want %v", tc.key, tc.target, got, tc.want)
		}
	}
}

// FuzzName holds the rule's invariants on any input: Check never panics
// and passes only valid NFC without a refused character; Display and
// Escape show nothing that does not show itself, and a name Check
// passes and Inspect does not flag is shown as itself.
func FuzzName(f *testing.F) {
	for _, s := range []string{"Work laptop", "Ｗork laptop", "Wоrk", "Pixel\u200b\ufeff\u2028 8", "Work\u3164", "Cafe\u0301", "\xff", "田中のiPhone"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := Check(s)
		if err == nil {
			if !utf8.ValidString(s) || !norm.NFC.IsNormalString(s) {
				t.Fatalf("Check(%q) passed a name that is not valid NFC", s)
			}
			for _, r := range s {
				if checkRune(r) != nil {
					t.Fatalf("Check(%q) passed U+%04X", s, r)
				}
			}
		}
		d := Display(s)
		if !utf8.ValidString(d) {
			t.Fatalf("Display(%q) = %q is not UTF-8", s, d)
		}
		for _, r := range d {
			if checkRune(r) != nil {
				t.Fatalf("Display(%q) = %q shows U+%04X raw", s, d, r)
			}
		}
		lk := Inspect(s)
		if err == nil && !lk.Flagged && !strings.ContainsAny(s, `"\`) && d != `"`+s+`"` {
			t.Fatalf("Display(%q) = %q, want the name itself quoted", s, d)
		}
		if lk.Flagged != (len(lk.Reasons) > 0) {
			t.Fatalf("Inspect(%q) = %+v: Flagged disagrees with Reasons", s, lk)
		}
	})
}

// FuzzFoldsOnto: the fold test is symmetric and irreflexive, and covers
// every pair strings.EqualFold (Unicode simple folding) matches.
func FuzzFoldsOnto(f *testing.F) {
	f.Add("threadıd", "threadId")
	f.Add("THREADID", "threadId")
	f.Add("\u212aey", "key")
	f.Add("a\xff", "A\xff")
	f.Fuzz(func(t *testing.T, a, b string) {
		if FoldsOnto(a, a) {
			t.Fatalf("FoldsOnto(%q, itself) = true", a)
		}
		if FoldsOnto(a, b) != FoldsOnto(b, a) {
			t.Fatalf("FoldsOnto(%q, %q) != FoldsOnto(%q, %q)", a, b, b, a)
		}
		if a != b && utf8.ValidString(a) && utf8.ValidString(b) && strings.EqualFold(a, b) && !FoldsOnto(a, b) {
			t.Fatalf("FoldsOnto(%q, %q) = false, but they fold together", a, b)
		}
	})
}
