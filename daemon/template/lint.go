package template

import (
	"fmt"
	"slices"
	"strings"
)

// The lint's rule names. They are part of the API (they reach hosts in the
// details of a 422): never rename or reuse one. doc.go says what each means.
const (
	RuleTooManyEntries      = "template.too-many-entries"
	RuleHeaderName          = "template.header-name"
	RuleQueryName           = "template.query-name"
	RuleReservedHeader      = "template.reserved-header"
	RuleDuplicateHeader     = "template.duplicate-header"
	RuleReservedFieldKey    = "template.reserved-field-key"
	RuleTooLong             = "template.too-long"
	RuleNonPrintable        = "template.non-printable"
	RuleWhitespace          = "template.whitespace"
	RuleStrayClose          = "template.stray-close"
	RuleUnclosed            = "template.unclosed"
	RuleEmptyPlaceholder    = "template.empty-placeholder"
	RuleUnterminatedLiteral = "template.unterminated-literal"
	RuleBadEscape           = "template.bad-escape"
	RuleSyntax              = "template.syntax"
	RuleUnknownIdentifier   = "template.unknown-identifier"
	RuleUnknownHelper       = "template.unknown-helper"
	RuleArity               = "template.arity"
	RuleNestedCall          = "template.nested-call"
	RuleCDPJWTArgument      = "template.cdp-jwt-argument"
)

// Seats of the requirement that Finding paths start with.
const (
	headerSeat = "request.headerTemplate"
	querySeat  = "request.queryTemplate"
	fieldsSeat = "fields"
)

// Envelope bounds of requirements and templates.
const (
	maxEntries = 8
	maxNameLen = 64
)

// resolver is the one resolution of the declared field keys that both
// placements are linted against. It also numbers the keys the
// templates reference, in first-reference order, for the compiled Set.
type resolver struct {
	declared []string // usable declared keys, in the order given
	isKey    map[string]bool
	index    map[string]int // referenced key → index into keys
	keys     []string
}

// newResolver resolves the declared field keys once. A key that spells a
// helper or the request namespace is refused and left out: it
// would read as something it is not.
func newResolver(fieldKeys []string) (*resolver, []Finding) {
	r := &resolver{isKey: make(map[string]bool, len(fieldKeys)), index: make(map[string]int)}
	var findings []Finding
	for _, k := range fieldKeys {
		if why := reservedFieldKey(k); why != "" {
			findings = append(findings, Finding{Path: fieldsSeat, Rule: RuleReservedFieldKey,
				Message: fmt.Sprintf("field key %s %s: a field key may not spell a helper or a request token", clip(k), why)})
			continue
		}
		if !r.isKey[k] {
			r.isKey[k] = true
			r.declared = append(r.declared, k)
		}
	}
	return r, findings
}

func reservedFieldKey(k string) string {
	if _, ok := lookupHelper(k); ok {
		return "is the helper " + k
	}
	if k == "request" || strings.HasPrefix(k, "request.") {
		return "is the request token namespace"
	}
	return ""
}

// field resolves a declared field key to its index among the referenced
// keys.
func (r *resolver) field(name string) (int, bool) {
	if !r.isKey[name] {
		return 0, false
	}
	if i, ok := r.index[name]; ok {
		return i, true
	}
	r.index[name] = len(r.keys)
	r.keys = append(r.keys, name)
	return len(r.keys) - 1, true
}

// nearest names the declared key or request token closest to name.
func (r *resolver) nearest(name string) string {
	tokens := requestTokens()
	return nearest(name, append(slices.Clip(r.declared), tokens[:]...))
}

// nearest returns the candidate at the least optimal-string-alignment
// distance from name (a transposition costs one edit, as a typist's
// transposed characters should); the first such candidate wins a tie.
func nearest(name string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := editDistance(name, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance over bytes
// (identifiers are ASCII).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// A placement is one of the two template seats with its own name rule.
type placement struct {
	seat     string
	nameRule string
	name     func(string) bool
}

func headerPlacement() placement {
	return placement{seat: headerSeat, nameRule: RuleHeaderName, name: isHeaderName}
}

func queryPlacement() placement {
	return placement{seat: querySeat, nameRule: RuleQueryName, name: isQueryName}
}

// isHeaderName matches ^[A-Za-z0-9-]{1,64}$.
func isHeaderName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isQueryName matches ^[A-Za-z0-9_.\[\]-]{1,64}$.
func isQueryName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '.' || c == '[' || c == ']' || c == '-') {
			return false
		}
	}
	return true
}

// reservedHeader reports whether a header template may not name h: the
// framing headers of ruling R15 (Host, Content-Length, Transfer-Encoding)
// and, with them, the rest of the framing and hop-by-hop set that ruling R3
// refuses from an app (Connection, TE, Trailer, Upgrade, Keep-Alive,
// Proxy-*). A credential template has no business with any of them.
func reservedHeader(h string) bool {
	switch l := strings.ToLower(h); l {
	case "host", "content-length", "transfer-encoding", // framing headers
		"connection", "te", "trailer", "upgrade", "keep-alive": // hop-by-hop headers
		return true
	default:
		return strings.HasPrefix(l, "proxy-")
	}
}

// compilePlacement lints and compiles one placement's entries, in name
// order, against the shared resolver.
func compilePlacement(res *resolver, pl placement, m map[string]string) ([]entry, []Finding) {
	var findings []Finding
	if len(m) > maxEntries {
		findings = append(findings, Finding{Path: pl.seat, Rule: RuleTooManyEntries,
			Message: fmt.Sprintf("%d entries; the limit is %d", len(m), maxEntries)})
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	entries := make([]entry, 0, len(names))
	seen := make(map[string]string, len(names))
	for _, n := range names {
		path := pl.seat + "." + n
		if !pl.name(n) {
			findings = append(findings, Finding{Path: path, Rule: pl.nameRule, Message: nameMessage(pl, n)})
		} else if pl.seat == headerSeat {
			if reservedHeader(n) {
				findings = append(findings, Finding{Path: path, Rule: RuleReservedHeader,
					Message: "a header template may not set " + n})
			}
			l := strings.ToLower(n)
			if other, dup := seen[l]; dup {
				findings = append(findings, Finding{Path: path, Rule: RuleDuplicateHeader,
					Message: fmt.Sprintf("header %s is also set as %s: header names are case-insensitive", n, other)})
			}
			seen[l] = n
		}
		prog, f := parseValue(res, path, m[n])
		findings = append(findings, f...)
		entries = append(entries, entry{name: n, prog: prog})
	}
	return entries, findings
}

func nameMessage(pl placement, n string) string {
	if pl.seat == headerSeat {
		return fmt.Sprintf("header name %q must match ^[A-Za-z0-9-]{1,64}$", clip(n))
	}
	return fmt.Sprintf("query parameter name %q must match ^[A-Za-z0-9_.\\[\\]-]{1,64}$", clip(n))
}
