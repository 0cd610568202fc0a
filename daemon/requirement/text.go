package requirement

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// textProblem reports the first character-level problem of a free-text
// value: a control, format, private-use, surrogate, line/paragraph
// separator or noncharacter code point (text.control); leading or trailing
// whitespace (text.whitespace); or text not in NFC (text.nfc). Format
// characters (Cf) cover the zero-width characters, the bidi embeddings,
// overrides and isolates, the byte order mark, soft hyphens and the tag
// characters — everything that makes two strings look alike while
// differing, or reorders what a reviewer sees.
func textProblem(s string) (rule, msg string) {
	for _, r := range s {
		if invisibleRune(r) {
			return RuleTextControl, "contains a control, format, invisible or private-use character"
		}
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return RuleTextWhitespace, "must not begin or end with whitespace"
	}
	if !norm.NFC.IsNormalString(s) {
		return RuleTextNFC, "must be in Unicode normalization form NFC"
	}
	return "", ""
}

func invisibleRune(r rune) bool {
	switch {
	case r < utf8.RuneSelf:
		return r < 0x20 || r == 0x7F
	case r == utf8.RuneError:
		return true
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zl, unicode.Zp):
		return true
	case r >= 0xFDD0 && r <= 0xFDEF, r&0xFFFE == 0xFFFE:
		return true // noncharacters
	}
	return false
}

// printableASCII reports whether every byte of s is in U+0020–U+007E.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7E {
			return false
		}
	}
	return true
}

// markupProblem reports why s is not plain text. The host renders
// registration instructions, labels, descriptions, the lanHost label and
// the provider name as plain text; refusing markup at the schema keeps a
// rendering mistake from turning a requirement into phishing dressed in the
// host's chrome. Refused:
//
//   - an HTML/XML tag, comment, doctype or processing instruction: '<'
//     followed by a letter, '/', '!' or '?' ("<b>", "</a>", "<!--",
//     "<?xml"); a '<' before a space or digit ("a < b", "<3") is text;
//   - an HTML character reference: "&name;", "&#38;", "&#x26;";
//   - a Markdown link, image or reference definition: "](", "![", "]:";
//   - a script-bearing URL scheme: "javascript:", "vbscript:", and
//     "data:" followed by a media type ("data:text/html"), case-insensitive.
//
// Plain URLs are allowed (a step may say where to go; the host shows it as
// text, never as a link). The known false positives are text that merely
// looks like markup, such as "<your project id>" or "[docs](see below)";
// write "YOUR_PROJECT_ID" or rephrase instead.
func markupProblem(s string) string {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			if i+1 < len(s) {
				c := s[i+1]
				if c == '/' || c == '!' || c == '?' || isASCIILetter(c) {
					return "must be plain text: HTML or XML markup is not allowed"
				}
			}
		case '&':
			if isCharRef(s[i+1:]) {
				return "must be plain text: HTML character references are not allowed"
			}
		case ']':
			if i+1 < len(s) && (s[i+1] == '(' || s[i+1] == ':') {
				return "must be plain text: Markdown links are not allowed"
			}
		case '!':
			if i+1 < len(s) && s[i+1] == '[' {
				return "must be plain text: Markdown images are not allowed"
			}
		}
	}
	lower := asciiLower(s)
	for _, scheme := range []string{"javascript:", "vbscript:"} {
		if strings.Contains(lower, scheme) {
			return "must be plain text: script URLs are not allowed"
		}
	}
	for rest := lower; ; {
		i := strings.Index(rest, "data:")
		if i < 0 {
			break
		}
		if (i == 0 || !isASCIILetter(rest[i-1])) && looksLikeMediaType(rest[i+5:]) {
			return "must be plain text: data URLs are not allowed"
		}
		rest = rest[i+5:]
	}
	return ""
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isCharRef reports whether s (the text after an '&') starts with a complete
// HTML character reference.
func isCharRef(s string) bool {
	i := 0
	switch {
	case strings.HasPrefix(s, "#x") || strings.HasPrefix(s, "#X"):
		i = 2
		for i < len(s) && isHex(s[i]) {
			i++
		}
		return i > 2 && i < len(s) && s[i] == ';'
	case strings.HasPrefix(s, "#"):
		i = 1
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i > 1 && i < len(s) && s[i] == ';'
	}
	for i < len(s) && (isASCIILetter(s[i]) || isDigit(s[i])) {
		i++
	}
	return i > 0 && isASCIILetter(s[0]) && i < len(s) && s[i] == ';'
}

// looksLikeMediaType reports whether s starts with "type/" as in a data URL.
func looksLikeMediaType(s string) bool {
	i := 0
	for i < len(s) && (isASCIILetter(s[i]) || s[i] == '-' || s[i] == '+' || s[i] == '.') {
		i++
	}
	return i > 0 && i < len(s) && s[i] == '/'
}
