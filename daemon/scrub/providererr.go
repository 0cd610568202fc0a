package scrub

import (
	"encoding/json"
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxProviderErrorChars bounds the provider error text shown to a human.
const MaxProviderErrorChars = 160

// providerErrorFields are the named fields of the recognized error
// envelopes, in the order they are tried: the common REST shape
// ({"error":{"message"}}), OAuth's error_description, plain {"message"},
// GraphQL and JSON:API ({"errors":[{"message"}]}), RFC 9457 problem
// details (detail, then title), and a bare string error.
func providerErrorFields() [][]any {
	return [][]any{
		{"error", "message"},
		{"error_description"},
		{"message"},
		{"errors", 0, "message"},
		{"errors", 0, "detail"},
		{"detail"},
		{"title"},
		{"error"},
		{"error", "description"},
		{"msg"},
	}
}

// ProviderErrorText bounds a provider's error body for a human:
// it scrubs the body with the caller's candidate set (raw values;
// their percent-encoded spellings are added here) FIRST, then extracts a
// named field of a recognized error envelope or, failing that, a
// best-effort head that is never markup or structure, and then scrubs its
// own output again, because decoding JSON (\u escapes) or HTML entities
// can reconstitute a value the first scrub removed. also, when not nil,
// is a further scrub applied to the extract before it is cut to length (a
// cut would leave the head of what that scrub looks for): the executor
// passes its §14.2 and §15 scrubs there. The result is at most
// MaxProviderErrorChars characters of single-line text without tags; ""
// when nothing safe remains. The executor passes gate 10's injected
// values; the OAuth flow passes the form parameters it submitted. It is
// not a credential guard: the value scrub is the control.
func ProviderErrorText(body string, candidates []string, also func(string) string) string {
	body = strings.ToValidUTF8(body, "\uFFFD")
	scrubbed := values(body, candidates) // scrub first
	text := extractProviderError(scrubbed)
	text = values(text, candidates) // re-scrub the extract
	if also != nil {
		text = also(text)
	}
	return Clip(text, MaxProviderErrorChars)
}

// extractProviderError returns the named field of a recognized envelope,
// or the safe head of the body, as plain single-line text.
func extractProviderError(body string) string {
	t := strings.TrimSpace(body)
	if t == "" {
		return ""
	}
	switch t[0] {
	case '{', '[':
		var v any
		if json.Unmarshal([]byte(t), &v) != nil {
			return "" // structure we cannot read: nothing
		}
		for _, path := range providerErrorFields() {
			if s, ok := lookupString(v, path); ok {
				if s = plainText(s); s != "" {
					return s
				}
			}
		}
		return "" // an unrecognized envelope is structure, never a head
	case '<':
		return plainText(htmlHead(t))
	}
	return plainText(t)
}

// lookupString follows path (object keys and array indexes) in v.
func lookupString(v any, path []any) (string, bool) {
	for _, step := range path {
		switch k := step.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return "", false
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return "", false
			}
			v = a[k]
		}
	}
	s, ok := v.(string)
	return s, ok
}

// htmlHead returns the <title> of an HTML page when it has one, else its
// text with scripts, styles, comments and tags removed.
func htmlHead(s string) string {
	lower := asciiLower(s)
	if i := strings.Index(lower, "<title"); i >= 0 {
		if j := strings.IndexByte(lower[i:], '>'); j >= 0 {
			start := i + j + 1
			if k := strings.Index(lower[start:], "</title"); k >= 0 {
				if t := strings.TrimSpace(s[start : start+k]); t != "" {
					return t
				}
			}
		}
	}
	for _, tag := range []string{"script", "style"} {
		s = dropElements(s, tag)
	}
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case strings.HasPrefix(s[i:], "<!--"):
			end := strings.Index(s[i+4:], "-->")
			if end < 0 {
				return b.String()
			}
			i += 4 + end + 2
		case c == '<':
			depth++
		case c == '>':
			if depth > 0 {
				depth--
			}
			b.WriteByte(' ')
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// dropElements removes every <tag …>…</tag> element (case-insensitive),
// each leaving a space, in one pass: the body is the provider's and may
// hold a million elements.
func dropElements(s, tag string) string {
	open, closing := "<"+tag, "</"+tag
	lower := asciiLower(s)
	var b strings.Builder
	gt := true // whether a '>' may still follow
	for {
		i := strings.Index(lower, open)
		if i < 0 {
			break
		}
		j := strings.Index(lower[i:], closing)
		if j < 0 {
			s = s[:i]
			break
		}
		end := i + j + len(closing)
		if gt {
			if k := strings.IndexByte(lower[end:], '>'); k >= 0 {
				end += k + 1
			} else {
				gt = false
			}
		}
		b.WriteString(s[:i])
		b.WriteByte(' ')
		s, lower = s[end:], lower[end:]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s)
	return b.String()
}

// plainText makes s one line of plain text: HTML entities decoded, then
// every tag, angle bracket and control or format character removed and
// whitespace collapsed.
func plainText(s string) string {
	s = html.UnescapeString(s)
	var b strings.Builder
	space := false
	depth := 0
	for _, r := range s {
		switch {
		case r == '<':
			depth++
			continue
		case r == '>':
			if depth > 0 {
				depth--
			}
			space = true
			continue
		case depth > 0:
			continue
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// Clip cuts s to at most n runes, marking a cut with an ellipsis.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for count < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i] + "…"
}

// asciiLower lowercases ASCII letters only, so byte offsets are kept.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
