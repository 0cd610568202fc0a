package requirement

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxExponent bounds the decimal exponent of a number's canonical
// scientific spelling, so every canonical form is itself accepted.
const maxExponent = 999_999_999

// errNumberRange is returned for a number whose exponent is out of range.
var errNumberRange = errors.New("number exponent out of range")

// writeCanonical writes v in the canonical form: object keys
// sorted recursively by their UTF-8 bytes, no whitespace, arrays in their
// original order, strings with the minimal escapes (only '"', '\\' and the
// control characters; no HTML escaping, non-ASCII as UTF-8) and numbers in
// one deterministic spelling. Two documents mean the same value exactly
// when their canonical forms are equal strings; callers compare them with
// ==, never through a digest.
//
// A number is written as its exact decimal value laid out the way
// ECMAScript's Number.prototype.toString lays out a number (integers up to
// 21 digits plainly, "0.000001" down to 1e-6, exponent form beyond), but
// without rounding to a float64: 1.0, 1e0 and 10e-1 all become "1", -0
// becomes "0", and 12345678901234567890 stays exact. A number whose
// value needs a decimal exponent beyond ±999,999,999 (1e1000000000,
// 10e999999999) is refused with errNumberRange.
func writeCanonical(b *strings.Builder, v *jsonValue) error {
	switch v.kind {
	case jsonNull:
		b.WriteString("null")
	case jsonBool:
		if v.b {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case jsonNumber:
		n, err := canonicalNumber(v.s)
		if err != nil {
			return err
		}
		b.WriteString(n)
	case jsonString:
		writeString(b, v.s)
	case jsonArray:
		b.WriteByte('[')
		for i, item := range v.items {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, item); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case jsonObject:
		members := slices.Clone(v.members)
		slices.SortFunc(members, func(x, y jsonMember) int { return strings.Compare(x.name, y.name) })
		b.WriteByte('{')
		for i, m := range members {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, m.name)
			b.WriteByte(':')
			if err := writeCanonical(b, m.value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	}
	return nil
}

// writeString writes s as a JSON string with the minimal escapes. s is
// valid UTF-8 (the decoder and the schema guarantee it); an invalid byte is
// written as U+FFFD rather than passed through.
func writeString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b.WriteString(`\"`)
			case c == '\\':
				b.WriteString(`\\`)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\f':
				b.WriteString(`\f`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xF])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// canonicalNumber rewrites a JSON number literal (already grammar-checked)
// in the one spelling Canonical documents.
func canonicalNumber(lit string) (string, error) {
	neg := false
	if lit[0] == '-' {
		neg = true
		lit = lit[1:]
	}
	mant, exp := lit, ""
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant, exp = lit[:i], lit[i+1:]
	}
	e := int64(0)
	if exp != "" {
		digits := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(exp, "+"), "-"), "0")
		if len(digits) > 18 {
			return "", errNumberRange
		}
		if digits != "" {
			n, err := strconv.ParseInt(digits, 10, 64)
			if err != nil {
				return "", errNumberRange
			}
			e = n
		}
		if strings.HasPrefix(exp, "-") {
			e = -e
		}
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	// value = 0.D × 10^n with D the significant digits.
	digits := intPart + frac
	n := int64(len(intPart)) + e
	trimmed := strings.TrimLeft(digits, "0")
	n -= int64(len(digits) - len(trimmed))
	digits = strings.TrimRight(trimmed, "0")
	if digits == "" {
		return "0", nil
	}
	k := int64(len(digits))
	if n-1 > maxExponent || n-1 < -maxExponent {
		return "", errNumberRange
	}
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", int(n-k))
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", int(-n)) + digits
	default:
		out = digits[:1]
		if k > 1 {
			out += "." + digits[1:]
		}
		if n-1 >= 0 {
			out += "e+" + strconv.FormatInt(n-1, 10)
		} else {
			out += "e" + strconv.FormatInt(n-1, 10)
		}
	}
	if neg {
		out = "-" + out
	}
	return out, nil
}
