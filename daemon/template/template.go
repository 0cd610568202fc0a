package template

import (
	"io"
	"time"
)

// This file fixes the package's API so that its callers (daemon/requirement,
// the executor) can be written against it. The template issue implements it.

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
// immutable and safe for concurrent use.
type Set struct {
	_ struct{}
}

// Compile lints both placements against one resolution of the declared
// field keys (spec §12.9) and, when there is no finding, returns the
// compiled Set. It reports every finding, never only the first.
func Compile(fieldKeys []string, t Templates) (*Set, []Finding) {
	return &Set{}, nil
}

// Lint is Compile for callers that only want the findings.
func Lint(fieldKeys []string, t Templates) []Finding {
	_, f := Compile(fieldKeys, t)
	return f
}

// Request is what the request tokens read. URL and PathAndQuery are the URL
// exactly as it will be sent, after connection-relative resolution and before
// query credentials are added (ruling R15). An absent body is "".
type Request struct {
	Method       string
	URL          string
	PathAndQuery string
	Body         string
}

// Env supplies the clock and the randomness a render pass uses. Zero values
// mean time.Now and crypto/rand.Reader.
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
	// template referenced and every rendered value that used one.
	Secrets []string
}

// Render runs one render pass with one memoized timestamp over both
// placements. values maps declared field keys to credential values. Errors
// never contain a value.
func (s *Set) Render(values map[string]string, req Request, env Env) (Rendered, error) {
	return Rendered{}, nil
}
