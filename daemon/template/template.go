package template

import (
	"io"
	"time"
)

// This file holds the package's API. The grammar is in grammar.go, the lint
// in lint.go, the render pass in render.go, the helpers in helpers.go and
// jwt.go, and query placement in query.go.

// A Finding is one lint violation. Path names the seat relative to the
// requirement ("request.headerTemplate.CB-ACCESS-SIGN", "fields"); Rule is a
// stable machine name ("template.unknown-identifier"); Message is a sentence
// for people ("unknown identifier api_secrt: did you mean api_secret?").
// Templates hold no credential values, so a Finding never carries one.
type Finding struct {
	Path    string
	Rule    string
	Message string
}

// Templates are a requirement's request templates: header name → template
// value and query parameter name → template value. Order is not significant.
type Templates struct {
	Header map[string]string
	Query  map[string]string
}

// A Set is a linted, compiled pair of templates, ready to render. It is
// immutable and safe for concurrent use. Compile is the only way to get a
// non-empty Set: a Set holds no unresolved name, so the engine has no
// unknown-token-as-literal fallback to reach. The zero Set renders
// nothing.
type Set struct {
	keys    []string // the field keys the templates reference, in first-reference order
	headers []entry  // sorted by name
	query   []entry  // sorted by name
	usesTS  bool     // some template reads the pass's timestamp
	bufHint int      // bytes a pass's values are expected to take
}

// An entry is one compiled header or query template.
type entry struct {
	name string
	prog program
}

// Compile lints both placements against one resolution of the declared
// field keys and, when there is no finding, returns the
// compiled Set. It reports every finding, never only the first; with any
// finding the Set is nil. Findings come in a fixed order: field keys, then
// header templates by name, then query templates by name, each value's
// findings in the order of their position.
func Compile(fieldKeys []string, t Templates) (*Set, []Finding) {
	res, findings := newResolver(fieldKeys) // one resolution serves both placements
	headers, f := compilePlacement(res, headerPlacement(), t.Header)
	findings = append(findings, f...)
	query, f := compilePlacement(res, queryPlacement(), t.Query)
	findings = append(findings, f...)
	if len(findings) > 0 {
		return nil, findings
	}
	s := &Set{keys: res.keys, headers: headers, query: query}
	for _, e := range append(headers[:len(headers):len(headers)], query...) {
		s.usesTS = s.usesTS || e.prog.usesTimestamp()
		s.bufHint += e.prog.sizeHint()
	}
	return s, nil
}

// Lint is Compile for callers that only want the findings.
func Lint(fieldKeys []string, t Templates) []Finding {
	_, f := Compile(fieldKeys, t)
	return f
}

// Request is what the request tokens read. URL and PathAndQuery are the URL
// exactly as it will be sent, after connection-relative resolution and before
// query credentials are added. An absent body is "". There is
// no timestamp here: request.timestamp is minted by the render pass,
// never taken from the request.
type Request struct {
	Method       string
	URL          string
	PathAndQuery string
	Body         string
}

// Env supplies the clock and the randomness a render pass uses. Zero values
// mean time.Now and crypto/rand.Reader. A pass reads the clock at most once;
// randomness is read only by cdp_jwt, for its nonce.
type Env struct {
	Now  func() time.Time
	Rand io.Reader
}

// A Pair is one rendered header or query parameter.
type Pair struct {
	Name  string
	Value string
}

// Rendered is the result of one render pass.
type Rendered struct {
	Headers []Pair // sorted by name
	Query   []Pair // sorted by name; values not yet percent-encoded
	// Secrets are the scrub candidates of this pass: every field value a
	// template referenced, every rendered value that used one, every
	// helper output inside such a value that read a field (the base64 of
	// user:pass without its "Basic ", a whole cdp_jwt, an HMAC), and the
	// percent-encoded form PlaceQuery gives such a query value when it
	// differs. Unique, longest first, so that a scrubber replacing them in
	// order never leaves the tail of a longer one behind.
	Secrets []string
}
