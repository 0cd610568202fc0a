package registry

import (
	"maps"
	"slices"

	"github.com/snug/snugd/daemon/requirement"
)

// An Entry is one pinned provider, as Entries and Lookup return it: a copy
// the caller may keep and change without touching the registry. Every seat
// was reviewed with the data file it came from; see the package
// documentation for what each means and the rules it passed at load.
type Entry struct {
	ID          string
	DisplayName string
	// Aliases are further names that trigger the borrow ban.
	Aliases     []string
	HomepageURL string
	DocsURL     string
	// Hosts are the pinned hosts, normalized: a borrowed requirement's
	// declaredApiHosts, and exactly the ceiling it derives. Empty for a LAN
	// entry, whose one host is the address the user collects.
	Hosts []string
	// LANHost is set on a LAN entry.
	LANHost *requirement.LANHost
	// Registration is the entry walkthrough; an option with a walkthrough
	// of its own replaces it for that flow.
	Registration requirement.Registration
	// Scopes are the entry-level scope pin; nil when the entry
	// pins none.
	Scopes      []string
	TestRequest *requirement.TestRequest
	// Options are the alternative complete credential flows, in file order.
	Options []Option
	// DefaultOption is the ID of the option a declaration whose field list
	// matches no option gets.
	DefaultOption string
	Pairing       *Pairing
	// BrowserCallable is tri-state: nil means unknown and must be disclosed
	// as unknown, never rendered as "works".
	BrowserCallable *bool
	// DesktopRedirect is the vouched desktop OAuth redirect posture; ""
	// means not vouched, and the desktop flow refuses at entry.
	DesktopRedirect RedirectPosture
	// WebRedirect and WebRegistration are the web-surface seats; both or
	// neither are set.
	WebRedirect     WebRedirectPosture
	WebRegistration *requirement.Registration
	Helper          *Helper
	Sources         []Source
	// TokenAuth is how a confidential client authenticates at the token
	// endpoint; "" on an entry without an OAuth option.
	TokenAuth TokenAuth
	// ScopeSeparator joins an authorization request's scopes: " " or ",";
	// "" on an entry without an OAuth option.
	ScopeSeparator string
	// Revocation says how a grant is withdrawn at the provider, and where
	// the user removes access there; nil when the entry does not say (it
	// has no authorization-code option).
	Revocation *Revocation
}

// An Option is one complete credential flow of an entry, exactly as a
// borrow applies it: its own kind, fields, endpoints, walkthrough (the
// entry's when it has none), templates, pkce, authorizeParams and
// userLayer. It carries no identity seat.
type Option struct {
	ID    string
	Label string
	Kind  requirement.Kind
	// Fields are the pinned field list; a declaration whose set of field
	// keys equals this list's selects this option.
	Fields          []requirement.Field
	Registration    requirement.Registration
	Endpoints       requirement.Endpoints
	PKCE            *bool
	AuthorizeParams map[string]string
	Request         requirement.Request
	UserLayer       *requirement.UserLayer
}

// RedirectPosture is a desktop OAuth redirect posture the registry vouches
// for.
type RedirectPosture string

// PostureLoopback: the provider's client registration accepts a loopback
// redirect (snugd's own /oauth/callback on 127.0.0.1). It is representable
// only beside PKCE.
const PostureLoopback RedirectPosture = "loopback"

// WebRedirectPosture is a web-surface redirect posture (since 1.0).
type WebRedirectPosture string

// PostureOriginCallback, the sole member today: the provider's client
// registration can accept the connecting web origin's /oauth/callback as an
// exact authorized redirect URI.
const PostureOriginCallback WebRedirectPosture = "origin-callback"

// Family is a pairing family. Exactly three exist.
type Family string

// The three pairing families.
const (
	// FamilyExchange is a local pairing exchange (press the button, then
	// POST) against the collected LAN address. Only on a LAN entry.
	FamilyExchange Family = "exchange"
	// FamilyDeviceLink is start → QR → poll; the poll releases a
	// once-minted helper token (DESIGN.md, "Linked-device helpers").
	FamilyDeviceLink Family = "device-link"
	// FamilyTokenClaim: the user pastes a one-time setup token, the host
	// decodes a claim URL, POSTs it once and receives the durable
	// credential.
	FamilyTokenClaim Family = "token-claim"
)

// Families returns the three pairing families.
func Families() []Family {
	return []Family{FamilyExchange, FamilyDeviceLink, FamilyTokenClaim}
}

// Pairing is an entry's pairing seat: registry data over an ordinary kind,
// never a kind and never a seat of a requirement row. Every family
// carries a verify probe, run before any credential is written.
type Pairing struct {
	Family Family
	// Field is the key of the option field that receives the credential
	// the ceremony yields.
	Field  string
	Verify Probe
	// Exchange is the exchange family's request.
	Exchange *Exchange
	// AccessPath is the token-claim family's pinned access path: the path
	// of the returned access URL must equal it exactly.
	AccessPath string
	// HelperID is the device-link family's helper: the entry's Helper.ID.
	HelperID string
}

// Probe is a verify probe: what to ask a counterparty and what a live one
// answers. HTTP families (exchange, token-claim) set Method and Path,
// relative to the collected address or the pinned host; the device-link
// family sets RPC, the helper protocol's method ("verify").
type Probe struct {
	Method string
	Path   string
	RPC    string
	// Expect says, for people and for the code that checks it, what a
	// live counterparty speaking the expected protocol answers.
	Expect string
}

// Exchange is the exchange family's pairing request.
type Exchange struct {
	Method string
	Path   string
	// Body is the request body, JSON; "<host>" in it stands for this
	// machine's name (lan.DeviceType).
	Body   string
	Expect string
}

// Helper is a linked-device helper: its ID names its symbolic host
// (<ID>.sidecar.invalid) and Executable is the bare file name snugd looks
// up in its own install directory, never a path.
type Helper struct {
	ID         string
	Executable string
}

// SidecarSuffix is the domain every helper's symbolic host ends in. It is
// reserved by RFC 2606 and never resolves.
const SidecarSuffix = ".sidecar.invalid"

// Source cites the provider documentation an entry was checked against.
type Source struct {
	URL     string
	Checked string // YYYY-MM-DD
	Note    string
}

// export returns a deep copy of e for a caller.
func (e *entry) export() Entry {
	out := Entry{
		ID:              e.id,
		DisplayName:     e.displayName,
		Aliases:         slices.Clone(e.aliases),
		HomepageURL:     e.homepageURL,
		DocsURL:         e.docsURL,
		Hosts:           slices.Clone(e.hosts),
		LANHost:         clonePtr(e.lanHost),
		Registration:    cloneRegistration(e.registration),
		Scopes:          slices.Clone(e.scopes),
		TestRequest:     clonePtr(e.testRequest),
		DefaultOption:   e.options[e.defaultOption].id,
		BrowserCallable: clonePtr(e.browserCallable),
		DesktopRedirect: e.desktopRedirect,
		WebRedirect:     e.webRedirect,
		Helper:          clonePtr(e.helper),
		Sources:         slices.Clone(e.sources),
		Revocation:      clonePtr(e.revocation),
	}
	if slices.ContainsFunc(e.options, func(o *option) bool { return o.base.Kind.IsOAuth() }) {
		p := e.oauthProtocol()
		out.TokenAuth, out.ScopeSeparator = p.TokenAuth, p.ScopeSeparator
	}
	if e.webRegistration != nil {
		r := cloneRegistration(*e.webRegistration)
		out.WebRegistration = &r
	}
	if e.pairing != nil {
		p := *e.pairing
		p.Exchange = clonePtr(p.Exchange)
		out.Pairing = &p
	}
	for _, o := range e.options {
		out.Options = append(out.Options, o.export())
	}
	return out
}

func (o *option) export() Option {
	b := o.base
	return Option{
		ID:              o.id,
		Label:           o.label,
		Kind:            b.Kind,
		Fields:          cloneFields(b.Fields),
		Registration:    cloneRegistration(b.Registration),
		Endpoints:       b.Endpoints,
		PKCE:            clonePtr(b.PKCE),
		AuthorizeParams: maps.Clone(b.AuthorizeParams),
		Request: requirement.Request{
			HeaderTemplate: maps.Clone(b.Request.HeaderTemplate),
			QueryTemplate:  maps.Clone(b.Request.QueryTemplate),
		},
		UserLayer: cloneUserLayer(b.UserLayer),
	}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneRegistration(r requirement.Registration) requirement.Registration {
	return requirement.Registration{ConsoleURL: r.ConsoleURL, Instructions: slices.Clone(r.Instructions)}
}

func cloneFields(fs []requirement.Field) []requirement.Field {
	out := slices.Clone(fs)
	for i := range out {
		out[i].Required = clonePtr(out[i].Required)
	}
	return out
}

func cloneUserLayer(ul *requirement.UserLayer) *requirement.UserLayer {
	if ul == nil {
		return nil
	}
	return &requirement.UserLayer{
		Kind:             ul.Kind,
		Fields:           cloneFields(ul.Fields),
		Registration:     cloneRegistration(ul.Registration),
		Endpoints:        ul.Endpoints,
		Scopes:           slices.Clone(ul.Scopes),
		PKCE:             clonePtr(ul.PKCE),
		AuthorizeParams:  maps.Clone(ul.AuthorizeParams),
		DeclaredAPIHosts: slices.Clone(ul.DeclaredAPIHosts),
	}
}
