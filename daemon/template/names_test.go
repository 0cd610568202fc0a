package template

import (
	"strings"
	"testing"
)

// TestEditDistance: the optimal string alignment distance, a swap of
// neighbours counting one, at both ends of either string.
func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"a", "a", 0},
		{"ab", "ba", 1}, {"abcd", "acbd", 1}, {"abc", "acb", 1}, {"ca", "abc", 3},
		{"kitten", "sitting", 3}, {"body", "bdoy", 1}, {"x_api_key", "x_api_kye", 1},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	// A tie goes to the first candidate.
	if got := nearest("ab", []string{"ac", "ad"}); got != "ac" {
		t.Errorf(`nearest("ab", ["ac" "ad"]) = %q, want "ac"`, got)
	}
	// A candidate at distance 0 is the nearest: none after it is nearer.
	if got := nearest("ab", []string{"ab", "ac"}); got != "ab" {
		t.Errorf(`nearest("ab", ["ab" "ac"]) = %q, want "ab"`, got)
	}
}

// TestNameRules: the header and query name rules and the identifier
// start at each end of their ranges and length bound.
func TestNameRules(t *testing.T) {
	long := strings.Repeat("a", maxNameLen)
	for _, tc := range []struct {
		s             string
		header, query bool
	}{
		{"azAZ09-", true, true}, {"a_.[]", false, true}, {long, true, true}, {long + "a", false, false},
		{"", false, false}, {"a@", false, false}, {"a{", false, false}, {"a/", false, false}, {"a:", false, false},
	} {
		if got := isHeaderName(tc.s); got != tc.header {
			t.Errorf("isHeaderName(%q) = %t, want %t", tc.s, got, tc.header)
		}
		if got := isQueryName(tc.s); got != tc.query {
			t.Errorf("isQueryName(%q) = %t, want %t", tc.s, got, tc.query)
		}
	}
	for _, c := range []byte("azAZ09_") {
		if !isIdentStart(c) {
			t.Errorf("isIdentStart(%q) = false, want true", c)
		}
	}
	for _, c := range []byte("@[`{/:-.") {
		if isIdentStart(c) {
			t.Errorf("isIdentStart(%q) = true, want false", c)
		}
	}
	for c, want := range map[byte]bool{0x1f: false, 0x20: true, 0x7e: true, 0x7f: false} {
		if got := isPrintableASCII(c); got != want {
			t.Errorf("isPrintableASCII(%#x) = %t, want %t", c, got, want)
		}
	}
	if utf16Width(0xffff) != 1 || utf16Width(0x10000) != 2 {
		t.Error("utf16Width: want 1 below U+10000 and 2 from it")
	}
	if s := strings.Repeat("k", 64); clip(s) != s || clip(s+"k") != s+"…" {
		t.Error("clip: want 64 bytes kept and a longer name cut with an ellipsis")
	}
}

// TestEscapeComponent: exactly RFC 3986's unreserved characters stay;
// each byte next to an unreserved range is escaped, in uppercase hex.
func TestEscapeComponent(t *testing.T) {
	if got := escapeComponent("azAZ09-._~"); got != "azAZ09-._~" {
		t.Errorf("escapeComponent(unreserved) = %q", got)
	}
	if got, want := escapeComponent("`{@[/: \xff"), "%60%7B%40%5B%2F%3A%20%FF"; got != want {
		t.Errorf("escapeComponent(neighbours) = %q, want %q", got, want)
	}
}

// TestNameMessages: a bad header name and a bad query name are each
// described by their own rule.
func TestNameMessages(t *testing.T) {
	_, fs := Compile(nil, Templates{Header: map[string]string{"bad name": "x"}})
	if len(fs) != 1 || fs[0].Rule != RuleHeaderName || !strings.HasPrefix(fs[0].Message, "header name") {
		t.Errorf("Compile(header %q) = %v, want one %s finding about a header name", "bad name", fs, RuleHeaderName)
	}
	_, fs = Compile(nil, Templates{Query: map[string]string{"bad name": "x"}})
	if len(fs) != 1 || fs[0].Rule != RuleQueryName || !strings.HasPrefix(fs[0].Message, "query parameter name") {
		t.Errorf("Compile(query %q) = %v, want one %s finding about a query parameter name", "bad name", fs, RuleQueryName)
	}
}
