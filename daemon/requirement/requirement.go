package requirement

import "github.com/snug/snugd/daemon/template"

// A Requirement is a parsed, validated and normalized connection requirement.
// It describes what an app needs and is
// credential-free. Build one only with Parse: the zero value and hand-built
// values carry none of Parse's guarantees.
//
// Optional seats are absent when their zero value says so: an empty string,
// a nil slice or map, a nil pointer. Parse never produces an empty non-nil
// slice or map (an empty optional container, such as "scopes": [], means the
// same as an absent one), so reflect.DeepEqual compares two Requirements by
// meaning.
type Requirement struct {
	Slot     string
	Provider Provider
	Kind     Kind
	// Fields are the credential fields, in the wizard's input order.
	Fields       []Field
	Registration Registration
	Endpoints    Endpoints
	// Scopes are what review renders, in order.
	Scopes []string
	// PKCE is never nil for the OAuth kinds: absent means true.
	// For the other kinds it is whatever the author wrote, nil when absent.
	PKCE *bool
	// AuthorizeParams are extra authorization-request parameters. None of
	// them is a parameter snugd sets itself (ReservedAuthorizeParams).
	AuthorizeParams map[string]string
	Request         Request
	// UserLayer is the registry-synthesized second layer; nil
	// unless Parse ran with Options.AllowUserLayer.
	UserLayer *UserLayer
	LANHost   *LANHost
	// DeclaredAPIHosts are normalized (NormalizeHost) in the author's order,
	// or, beside a LANHost, the one collected RFC-1918 literal.
	DeclaredAPIHosts []string
	TestRequest      *TestRequest
}

// Provider names the third party. Name is printable ASCII.
type Provider struct {
	Name        string
	HomepageURL string
	DocsURL     string
}

// A Field is one credential field the wizard collects. Required is nil when
// the author did not say.
type Field struct {
	Key         string
	Label       string
	Type        FieldType
	Description string
	Placeholder string
	Required    *bool
}

// FieldType is how the wizard collects a field.
type FieldType string

// The four field types.
const (
	FieldText     FieldType = "text"
	FieldSecret   FieldType = "secret"
	FieldPassword FieldType = "password"
	FieldURL      FieldType = "url"
)

// Registration is the walkthrough for obtaining credentials. Instructions
// are plain text: render them as a numbered list, never as HTML or
// links, and render ConsoleURL with its full host visible.
type Registration struct {
	ConsoleURL   string
	Instructions []string
}

// Endpoints are the OAuth endpoints. Every non-empty one is an https URL
// whose host joins the derived ceiling.
type Endpoints struct {
	Authorize string
	Token     string
	Refresh   string
	Revoke    string
}

// Request holds the credential templates: header name (or
// query parameter name) to template value. Order is not significant.
type Request struct {
	HeaderTemplate map[string]string
	QueryTemplate  map[string]string
}

// Templates returns the templates in the form daemon/template takes.
func (rq Request) Templates() template.Templates {
	return template.Templates{Header: rq.HeaderTemplate, Query: rq.QueryTemplate}
}

// LANClassRFC1918 is the only lanHost class today (§12.11). Future classes
// are additive: a new constant with its own validator, never a widening of
// this one.
const LANClassRFC1918 = "rfc1918-ipv4-literal"

// LANHost declares that a host will be collected; it is never a host.
type LANHost struct {
	Class string
	Label string
}

// TestRequest is the probe the wizard runs after connecting: always GET.
type TestRequest struct {
	Method       string
	PathAndQuery string
}

// A UserLayer is the embedded org→user second layer of a two-layer provider.
// Only the registry synthesizes it, and Parse admits it only when
// Options.AllowUserLayer is set. Its shape is snugd's (the spec's .ts
// definition is not available): the seats of a requirement that
// describe one credential flow — kind, fields, registration, endpoints,
// scopes, pkce, authorizeParams, declaredApiHosts — under the same bounds.
// It has no identity or placement seats of its own (slot, provider,
// request, lanHost, testRequest) and never a nested userLayer.
type UserLayer struct {
	Kind             Kind
	Fields           []Field
	Registration     Registration
	Endpoints        Endpoints
	Scopes           []string
	PKCE             *bool
	AuthorizeParams  map[string]string
	DeclaredAPIHosts []string
}

// FieldKeys returns the declared field keys the templates resolve against:
// the requirement's own keys, then the userLayer's, in order. Keys are
// unique across both layers because both layers' values share one
// auth:<appId>:<slot>:<fieldKey> namespace.
func (r *Requirement) FieldKeys() []string {
	var keys []string
	for _, f := range r.Fields {
		keys = append(keys, f.Key)
	}
	if r.UserLayer != nil {
		for _, f := range r.UserLayer.Fields {
			keys = append(keys, f.Key)
		}
	}
	return keys
}
