package template

import (
	"errors"
	"net/url"
	"strings"
)

// PlaceQuery places rendered query pairs onto rawURL: it appends
// name=value for each pair, in order, after the URL's existing query (with
// "?" or "&" as needed) and before any fragment. Names and values are
// percent-encoded: RFC 3986 unreserved characters (A-Z a-z 0-9 - . _ ~) are
// kept, every other byte becomes %XX (a space is %20, never +). The bytes of
// rawURL, its existing query included, are preserved exactly.
//
// Call it after the ceiling checks, on the URL the executor will send
// (placement after the ceiling); the result is secret-bearing. An
// error never contains the URL or a value.
func PlaceQuery(rawURL string, q []Pair) (string, error) {
	if _, err := url.Parse(rawURL); err != nil {
		return "", errors.New("place query: the url does not parse")
	}
	if len(q) == 0 {
		return rawURL, nil
	}
	base, frag := rawURL, ""
	if i := strings.IndexByte(rawURL, '#'); i >= 0 {
		base, frag = rawURL[:i], rawURL[i:]
	}
	n := len(rawURL) + 1
	for _, p := range q {
		if p.Name == "" {
			return "", errors.New("place query: a parameter has an empty name")
		}
		n += 3*(len(p.Name)+len(p.Value)) + 2
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(base)
	switch i := strings.IndexByte(base, '?'); {
	case i < 0:
		b.WriteByte('?')
	case i == len(base)-1 || strings.HasSuffix(base, "&"):
	default:
		b.WriteByte('&')
	}
	for i, p := range q {
		if i > 0 {
			b.WriteByte('&')
		}
		writeEscaped(&b, p.Name)
		b.WriteByte('=')
		writeEscaped(&b, p.Value)
	}
	b.WriteString(frag)
	return b.String(), nil
}

// escapeComponent is the encoding PlaceQuery gives a name or a value.
func escapeComponent(s string) string {
	for i := 0; i < len(s); i++ {
		if !isUnreserved(s[i]) {
			var b strings.Builder
			b.Grow(len(s) + 2*(len(s)-i))
			writeEscaped(&b, s)
			return b.String()
		}
	}
	return s
}

func writeEscaped(b *strings.Builder, s string) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
}

// isUnreserved reports whether c is an RFC 3986 unreserved character.
func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
