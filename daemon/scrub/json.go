package scrub

import (
	"strings"
	"unicode/utf8"
)

// The JSON-escaped spellings of a candidate: how encoding/json,
// PHP's json_encode and .NET's System.Text.Json write the candidate inside
// a JSON string. Each escapes a class of bytes its own way, so a spelling
// is a choice per class present in the candidate, with one hex case for
// all its \u escapes (an encoder is consistent within one string).

// jsonClass is a class of runes the encoders treat alike.
type jsonClass uint8

const (
	jPlain     jsonClass = iota // never escaped
	jSlash                      // "/": raw (Go, .NET), \/ (PHP), \u002f
	jQuote                      // `"`: \" (Go, PHP), \u0022 (.NET, PHP's JSON_HEX_QUOT)
	jBackslash                  // `\`: \\, \u005c
	jShortCtl                   // \b \f \n \r \t: short, \u00XX
	jCtl                        // the other C0 controls: \u00XX only
	jDel                        // DEL: raw, \u007f (.NET)
	jHTML                       // < > &: raw (PHP), \u003c (Go, .NET)
	jNet                        // ' + `: raw, \u00XX (.NET, PHP's JSON_HEX_APOS)
	jNonASCII                   // a non-ASCII rune: raw (Go), \uXXXX (PHP, .NET)
	jLineSep                    // U+2028, U+2029: raw, \u2028 (Go)
	numJSONClasses
)

// jsonMode is how one spelling writes a class.
type jsonMode uint8

const (
	mRaw   jsonMode = iota // the rune itself
	mShort                 // a two-byte escape: \/ \" \\ \n …
	mU                     // \uXXXX
)

// jsonModes lists each class's modes.
var jsonModes = [numJSONClasses][]jsonMode{
	jPlain:     {mRaw},
	jSlash:     {mRaw, mShort, mU},
	jQuote:     {mShort, mU},
	jBackslash: {mShort, mU},
	jShortCtl:  {mShort, mU},
	jCtl:       {mU},
	jDel:       {mRaw, mU},
	jHTML:      {mRaw, mU},
	jNet:       {mRaw, mU},
	jNonASCII:  {mRaw, mU},
	jLineSep:   {mRaw, mU},
}

// maxJSONSpellings bounds the combinations tried for one candidate; past
// it, the encoders' uniform spellings stand in.
const maxJSONSpellings = 48

func classOf(r rune) jsonClass {
	switch {
	case r == '/':
		return jSlash
	case r == '"':
		return jQuote
	case r == '\\':
		return jBackslash
	case r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
		return jShortCtl
	case r < 0x20:
		return jCtl
	case r == 0x7f:
		return jDel
	case r == '<' || r == '>' || r == '&':
		return jHTML
	case r == '\'' || r == '+' || r == '`':
		return jNet
	case r == '\u2028' || r == '\u2029':
		return jLineSep
	case r >= utf8.RuneSelf && r != utf8.RuneError:
		return jNonASCII
	}
	return jPlain
}

// appendJSONSpellings appends the JSON-escaped spellings of c that differ
// from it (duplicates are the caller's to drop).
func appendJSONSpellings(out []string, c string) []string {
	var present []jsonClass
	var seen [numJSONClasses]bool
	for _, r := range c {
		if k := classOf(r); k != jPlain && !seen[k] {
			seen[k] = true
			present = append(present, k)
		}
	}
	if len(present) == 0 {
		return out
	}
	combos := 1
	for _, k := range present {
		combos *= len(jsonModes[k])
	}
	var modes [numJSONClasses]jsonMode
	if combos*2 > maxJSONSpellings {
		// The uniform spellings: short escapes with "/" raw (Go without
		// HTML escaping) and escaped (PHP), Go's default, .NET's default,
		// and everything as \u.
		for _, u := range [][numJSONClasses]jsonMode{
			{jSlash: mRaw, jQuote: mShort, jBackslash: mShort, jShortCtl: mShort, jCtl: mU},
			{jSlash: mShort, jQuote: mShort, jBackslash: mShort, jShortCtl: mShort, jCtl: mU, jNonASCII: mU, jLineSep: mU},
			{jSlash: mRaw, jQuote: mShort, jBackslash: mShort, jShortCtl: mShort, jCtl: mU, jHTML: mU, jLineSep: mU},
			{jSlash: mRaw, jQuote: mU, jBackslash: mShort, jShortCtl: mShort, jCtl: mU, jDel: mU, jHTML: mU, jNet: mU, jNonASCII: mU, jLineSep: mU},
			{jSlash: mU, jQuote: mU, jBackslash: mU, jShortCtl: mU, jCtl: mU, jDel: mU, jHTML: mU, jNet: mU, jNonASCII: mU, jLineSep: mU},
		} {
			out = appendJSON(out, c, &u, false)
			out = appendJSON(out, c, &u, true)
		}
		return out
	}
	for i := range combos {
		usesU, n := false, i // n: the combination's digits, one per class
		for _, k := range present {
			ms := jsonModes[k]
			modes[k] = ms[n%len(ms)]
			n /= len(ms)
			usesU = usesU || modes[k] == mU
		}
		out = appendJSON(out, c, &modes, false)
		if usesU {
			out = appendJSON(out, c, &modes, true)
		}
	}
	return out
}

// appendJSON appends c spelled with modes (hex digits uppercase when
// upper), unless that is c itself.
func appendJSON(out []string, c string, modes *[numJSONClasses]jsonMode, upper bool) []string {
	hex := "0123456789abcdef"
	if upper {
		hex = "0123456789ABCDEF"
	}
	var b strings.Builder
	b.Grow(len(c) + 8)
	u := func(r rune) {
		b.WriteString(`\u`)
		for sh := 12; sh >= 0; sh -= 4 {
			b.WriteByte(hex[(r>>sh)&0xf])
		}
	}
	changed := false
	for i, w := 0, 0; i < len(c); i += w {
		r, n := utf8.DecodeRuneInString(c[i:])
		w = n
		if r == utf8.RuneError && n == 1 {
			b.WriteByte(c[i]) // invalid UTF-8 has no escape; keep the byte
			continue
		}
		k := classOf(r)
		switch modes[k] {
		case mRaw:
			if k == jPlain || jsonModes[k][0] == mRaw {
				b.WriteString(c[i : i+n])
				continue
			}
			fallthrough // a class without a raw mode: short or \u
		case mShort:
			if s := shortEscape(r); s != "" {
				b.WriteString(s)
			} else {
				u(r)
			}
		case mU:
			if r > 0xffff {
				r1, r2 := utf16Pair(r)
				u(r1)
				u(r2)
			} else {
				u(r)
			}
		}
		changed = true
	}
	if !changed {
		return out
	}
	return append(out, b.String())
}

// shortEscape is r's two-byte JSON escape, "" when it has none.
func shortEscape(r rune) string {
	switch r {
	case '/':
		return `\/`
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	return ""
}

// utf16Pair is r's UTF-16 surrogate pair (r > U+FFFF).
func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
