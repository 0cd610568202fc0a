package requirement

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/snug/snugd/daemon/template"
)

// MaxSize is the largest raw requirement Parse reads, in bytes. The largest
// requirement the bounds admit, userLayer included, encodes canonically in
// well under half of it, so every accepted requirement's canonical form
// parses again.
const MaxSize = 256 << 10

// Bounds of a requirement (lengths in UTF-16 code units).
const (
	maxProviderName   = 120
	maxURL            = 300
	minFields         = 1
	maxFields         = 8
	maxFieldLabel     = 80
	maxFieldDesc      = 200
	maxPlaceholder    = 60
	maxInstructions   = 10
	maxInstruction    = 300
	maxScopes         = 64
	maxScope          = 200
	maxAuthorizeParam = 16
	maxParamValue     = 300
	maxParamName      = 64
	maxLANLabel       = 80
	minHosts          = 1
	maxHosts          = 32
	maxTestPath       = 200
)

// Options say which channel a requirement arrived on, as far as parsing
// cares.
type Options struct {
	// AllowUserLayer admits the userLayer seat. Only the registry's
	// substitution code sets it: the decision
	// rests on the channel a requirement came from, never on what it says,
	// so every other caller — the user, assistant, starter-manifest and
	// user-docs channels, import, the writers' re-validation of a stored
	// row that did not come from the registry — leaves it false.
	AllowUserLayer bool
}

// The key sets of each object. Anything else is key.unknown: the schema is
// strict at every level, and the registry-only seats
// (pairing, webRegistration, webRedirectPosture, browserCallable, auth
// options, aliases) are simply not among them.
func topKeys() []string {
	return []string{
		"slot", "provider", "kind", "fields", "registration", "endpoints", "scopes",
		"pkce", "authorizeParams", "request", "userLayer", "lanHost",
		"declaredApiHosts", "testRequest",
	}
}

func userLayerKeys() []string {
	return []string{
		"kind", "fields", "registration", "endpoints", "scopes", "pkce",
		"authorizeParams", "declaredApiHosts",
	}
}

// ReservedAuthorizeParams returns the authorization-request parameters
// snugd sets (or must never let an author set) itself; authorizeParams may
// not name any of them, compared case-insensitively. Beyond
// the parameters of RFC 6749 and RFC 7636 it reserves nonce (a fixed nonce
// defeats replay protection; an OpenID flow mints its own), response_mode
// (it could move the code out of the callback snugd serves), request and
// request_uri (RFC 9101 request objects can override every other
// parameter), and the credential-bearing token, access_token, id_token,
// assertion, client_assertion, client_assertion_type, username and
// password.
func ReservedAuthorizeParams() []string {
	return []string{
		"response_type", "client_id", "client_secret", "redirect_uri", "scope",
		"state", "code", "code_challenge", "code_challenge_method",
		"code_verifier", "grant_type", "refresh_token", "nonce", "response_mode",
		"request", "request_uri", "token", "access_token", "id_token",
		"assertion", "client_assertion", "client_assertion_type", "username",
		"password",
	}
}

// Parse reads, validates and normalizes a connection requirement. On success
// it returns the Requirement and no violations; otherwise it returns nil
// and every violation it found, sorted by path (array indices numerically),
// rule and message — never only the first.
//
// raw must be one JSON object of at most MaxSize bytes, valid UTF-8, with
// no duplicate keys at any level. What Parse checks and normalizes is listed
// in the package documentation. It is safe for concurrent use.
func Parse(raw []byte, opts Options) (*Requirement, []Violation) {
	if len(raw) > MaxSize {
		return nil, []Violation{{Path: "$", Rule: RuleJSONTooLarge, Message: "requirement is larger than " + strconv.Itoa(MaxSize) + " bytes"}}
	}
	root, dups, err := decodeJSON(raw)
	if err != nil {
		return nil, []Violation{{Path: "$", Rule: RuleJSONSyntax, Message: err.Error()}}
	}
	p := &parser{opts: opts, keys: make(map[string]bool)}
	if len(dups) > 0 {
		for _, d := range dups {
			p.add(d.path, RuleJSONDuplicateKey, "key appears more than once in its object")
		}
		return nil, p.vs.sorted()
	}
	r := p.requirement(root)
	if len(p.vs) > 0 {
		return nil, p.vs.sorted()
	}
	return r, nil
}

type parser struct {
	opts Options
	vs   violations
	// keys are the field keys seen so far, across both layers.
	keys map[string]bool
}

func (p *parser) add(path, rule, msg string) { p.vs.add(path, rule, msg) }

// A seat is an object member: its value and its path.
type seat struct {
	v    *jsonValue
	path string
}

// object checks that v is an object and that every key is one of known,
// and returns the members by name.
func (p *parser) object(v *jsonValue, path string, known []string) (map[string]seat, bool) {
	if v.kind != jsonObject {
		p.typeMismatch(v, rootPath(path), "an object")
		return nil, false
	}
	m := make(map[string]seat, len(v.members))
	for i, mem := range v.members {
		if !slices.Contains(known, mem.name) {
			p.add(joinKey(path, mem.name, i), RuleKeyUnknown, "unknown key: the requirement schema is strict at every level")
			continue
		}
		m[mem.name] = seat{v: mem.value, path: schemaPath(path, mem.name)}
	}
	return m, true
}

// schemaPath appends a key the schema defines (and so is safe to show).
func schemaPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func rootPath(path string) string {
	if path == "" {
		return "$"
	}
	return path
}

func (p *parser) typeMismatch(v *jsonValue, path, want string) {
	p.add(path, RuleTypeMismatch, "must be "+want+", not "+v.typeName())
}

// str returns a present seat's string value.
func (p *parser) str(s seat) (string, bool) {
	if s.v.kind != jsonString {
		p.typeMismatch(s.v, s.path, "a string")
		return "", false
	}
	return s.v.s, true
}

// required returns the named seat, reporting key.missing when it is absent.
func (p *parser) required(m map[string]seat, parent, name string) (seat, bool) {
	s, ok := m[name]
	if !ok {
		p.add(schemaPath(parent, name), RuleKeyMissing, "required key is missing")
	}
	return s, ok
}

// length reports string.empty or string.too-long for s and whether it was
// within bounds. Lengths count UTF-16 code units: the spec's schema is
// TypeScript, whose string length counts them, and the template lint
// bounds a template value the same way, so one requirement never mixes two
// ways of counting and is never laxer than the reference.
func (p *parser) length(path, s string, max int) bool {
	if s == "" {
		p.add(path, RuleStringEmpty, "must not be empty")
		return false
	}
	if n := utf16Len(s); n > max {
		p.add(path, RuleStringTooLong, "is "+strconv.Itoa(n)+" characters long; the limit is "+strconv.Itoa(max))
		return false
	}
	return true
}

// credential runs the detector over one free-text value.
func (p *parser) credential(path, s string) {
	if reason, ok := DetectCredential(s); ok {
		p.add(path, RuleCredentialDetected, "looks like a credential ("+reason+"); a requirement holds field definitions, never credential values")
	}
}

// text validates a free-text seat: bounds, characters, NFC, and for prose
// seats the plain-text rule, then the credential detector.
func (p *parser) text(path, s string, max int, prose bool) {
	p.length(path, s, max)
	if rule, msg := textProblem(s); rule != "" {
		p.add(path, rule, msg)
	}
	if prose {
		if msg := markupProblem(s); msg != "" {
			p.add(path, RuleTextMarkup, msg)
		}
	}
	p.credential(path, s)
}

func (p *parser) requirement(v *jsonValue) *Requirement {
	m, ok := p.object(v, "", topKeys())
	if !ok {
		return nil
	}
	r := &Requirement{}
	if s, ok := p.required(m, "", "slot"); ok {
		if slot, ok := p.str(s); ok {
			if !ValidSlot(slot) {
				p.add(s.path, RuleSlotPattern, "must match "+SlotPattern+" (lowercase; mixed case is never folded)")
			}
			p.credential(s.path, slot)
			r.Slot = slot
		}
	}
	if s, ok := p.required(m, "", "provider"); ok {
		r.Provider = p.provider(s)
	}
	f := p.flow(m, "")
	r.Kind, r.Fields, r.Registration, r.Endpoints = f.kind, f.fields, f.registration, f.endpoints
	r.Scopes, r.PKCE, r.AuthorizeParams = f.scopes, f.pkce, f.authorizeParams
	if s, ok := m["request"]; ok {
		r.Request = p.request(s)
	}
	if s, ok := m["lanHost"]; ok {
		r.LANHost = p.lanHost(s)
	}
	r.DeclaredAPIHosts = p.topHosts(m)
	if s, ok := m["testRequest"]; ok {
		r.TestRequest = p.testRequest(s)
	}
	if s, ok := m["userLayer"]; ok {
		if !p.opts.AllowUserLayer {
			// The channel decides, never the content,
			// so the content is not even read.
			p.add(s.path, RuleUserLayerChannel, "userLayer is accepted only from the host's registry, never from this channel")
		} else {
			r.UserLayer = p.userLayer(s)
		}
	}

	// Coherence rules for the three kinds that carry rules.
	switch r.Kind {
	case KindNone:
		for _, name := range []string{"headerTemplate", "queryTemplate"} {
			if s, ok := m["request"]; ok && s.v.kind == jsonObject && hasMember(s.v, name) {
				p.add("request."+name, RuleKindSeatForbidden, "kind none carries no request template in either placement")
			}
		}
	case KindLinkedDevice:
		if _, ok := m["lanHost"]; ok {
			p.add("lanHost", RuleKindSeatForbidden, "kind linked_device carries no lanHost: a helper is a capability, not a network host")
		}
	}
	if _, lan := m["lanHost"]; lan {
		// Exactly one host source. An endpoint's or a userLayer's
		// host would join the collected address in the ceiling, freezing
		// a public host into a row reviewed as a device on the user's own
		// network, and a pre-collection row would derive a non-empty
		// ceiling before any address exists.
		if s, ok := m["endpoints"]; ok {
			p.add(s.path, RuleLANHostOffClass, "beside a lanHost there are no endpoints: the collected address is the row's only host")
		}
		if s, ok := m["userLayer"]; ok && p.opts.AllowUserLayer {
			p.add(s.path, RuleLANHostOffClass, "beside a lanHost there is no userLayer: the collected address is the row's only host")
		}
	}

	p.lintTemplates(r)
	return r
}

func hasMember(v *jsonValue, name string) bool {
	for _, m := range v.members {
		if m.name == name {
			return true
		}
	}
	return false
}

// flow holds the seats a requirement and its userLayer share.
type flow struct {
	kind            Kind
	fields          []Field
	registration    Registration
	endpoints       Endpoints
	scopes          []string
	pkce            *bool
	authorizeParams map[string]string
}

// flow reads the shared seats of one layer and applies the per-kind rules
// that concern them: none carries no fields, linked_device at least
// one field and no endpoints, and the OAuth kinds default pkce to true.
func (p *parser) flow(m map[string]seat, parent string) flow {
	var f flow
	kindOK := false
	if s, ok := p.required(m, parent, "kind"); ok {
		if k, ok := p.str(s); ok {
			f.kind = Kind(k)
			if kindOK = f.kind.Valid(); !kindOK {
				p.add(s.path, RuleKindUnknown, "must be one of the seven kinds: api_key, bearer_token, basic_auth, oauth2_client_creds, oauth2_auth_code, linked_device, none")
			}
		}
	}
	if s, ok := m["fields"]; ok {
		f.fields = p.fields(s)
	}
	if s, ok := m["registration"]; ok {
		f.registration = p.registration(s)
	}
	if s, ok := m["endpoints"]; ok {
		f.endpoints = p.endpoints(s)
	}
	if s, ok := m["scopes"]; ok {
		f.scopes = p.scopes(s)
	}
	if s, ok := m["pkce"]; ok {
		if s.v.kind != jsonBool {
			p.typeMismatch(s.v, s.path, "a boolean")
		} else {
			b := s.v.b
			f.pkce = &b
		}
	}
	if s, ok := m["authorizeParams"]; ok {
		f.authorizeParams = p.authorizeParams(s)
	}
	if !kindOK {
		return f
	}
	switch f.kind {
	case KindNone:
		if s, ok := m["fields"]; ok {
			p.add(s.path, RuleKindSeatForbidden, "kind none carries no credential fields")
		}
	case KindLinkedDevice:
		if _, ok := m["fields"]; !ok {
			p.add(schemaPath(parent, "fields"), RuleKindSeatRequired, "kind linked_device must declare at least one credential field (the helper token's slot)")
		}
		if s, ok := m["endpoints"]; ok {
			p.add(s.path, RuleKindSeatForbidden, "kind linked_device carries no endpoints: it never redirects, and an endpoint would widen its ceiling")
		}
	case KindOAuth2AuthCode, KindOAuth2ClientCreds:
		if f.pkce == nil {
			t := true // public-client posture
			f.pkce = &t
		}
	}
	return f
}

func (p *parser) provider(s seat) Provider {
	var pr Provider
	m, ok := p.object(s.v, s.path, []string{"name", "homepageUrl", "docsUrl"})
	if !ok {
		return pr
	}
	if n, ok := p.required(m, s.path, "name"); ok {
		if name, ok := p.str(n); ok {
			pr.Name = name
			p.providerName(n.path, name)
		}
	}
	pr.HomepageURL = p.optionalURL(m, "homepageUrl", false)
	pr.DocsURL = p.optionalURL(m, "docsUrl", false)
	return pr
}

// providerName applies the provider-name rule: printable ASCII (which NFC leaves alone), so
// homoglyphs, fullwidth forms, zero-width and bidi characters cannot make a
// name look like — or dodge the registry key of — another provider. Pure
// ASCII lookalikes ("5potify") pass by design and the registry's host
// trigger carries them. Surrounding and doubled spaces are refused too:
// the registry compares names case-insensitively, and "Spotify "
// would otherwise be a registry key of its own.
func (p *parser) providerName(path, name string) {
	p.length(path, name, maxProviderName)
	if name == "" {
		return
	}
	if !printableASCII(name) {
		p.add(path, RuleTextASCII, "must be printable ASCII (U+0020 to U+007E): look-alike letters, fullwidth forms, zero-width and bidi characters are refused")
	} else if strings.HasPrefix(name, " ") || strings.HasSuffix(name, " ") || strings.Contains(name, "  ") {
		p.add(path, RuleTextWhitespace, "must not begin or end with a space or contain two spaces in a row")
	}
	if msg := markupProblem(name); msg != "" {
		p.add(path, RuleTextMarkup, msg)
	}
	p.credential(path, name)
}

func (p *parser) optionalURL(m map[string]seat, name string, endpoint bool) string {
	s, ok := m[name]
	if !ok {
		return ""
	}
	u, ok := p.str(s)
	if !ok {
		return ""
	}
	p.url(s.path, u, endpoint)
	return u
}

// url validates an https URL seat. Every URL in a requirement is held to
// the rules its host would face in the ceiling: the display URLs
// (homepageUrl, docsUrl, consoleUrl) as well as the endpoints, because a
// reviewer reads all of them as "where this goes". The URL must be
// printable ASCII without spaces or backslashes, start with exactly
// "https://", carry no userinfo (not even an empty '@'), name a DNS host
// written in normalized form (lowercase, punycode) that is neither an IP
// literal nor a numeric spelling, carry a port only in canonical decimal
// 1–65535, use valid percent escapes, carry no query parameter named like a
// credential with a value, and not look like a credential anywhere.
// Endpoints additionally carry no fragment (RFC 6749 §3.1, §3.2).
func (p *parser) url(path, s string, endpoint bool) {
	p.length(path, s, maxURL)
	if s == "" {
		return
	}
	if !printableASCII(s) || strings.ContainsAny(s, " \\") {
		p.add(path, RuleURLInvalid, "must be printable ASCII without spaces or backslashes; percent-encode other characters")
		return
	}
	rest, ok := strings.CutPrefix(s, "https://")
	if !ok {
		p.add(path, RuleURLScheme, "must be an https URL starting with https://")
		return
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if strings.ContainsRune(authority, '@') {
		p.add(path, RuleURLUserinfo, "must not carry userinfo")
		return
	}
	host := authority
	if !strings.HasPrefix(host, "[") {
		if i := strings.LastIndexByte(host, ':'); i >= 0 {
			host = authority[:i]
			if !canonicalPort(authority[i+1:]) {
				p.add(path, RuleURLPort, "port must be a decimal number from 1 to 65535 without leading zeros")
			}
		}
	}
	if n, err := NormalizeHost(host); err != nil {
		p.add(path, RuleURLHost, err.Error())
	} else if n != host {
		p.add(path, RuleURLHostNotNormalized, "host must be written in its normalized form: lowercase, internationalized labels in punycode")
	}
	u, err := url.Parse(s)
	if err != nil {
		p.add(path, RuleURLInvalid, "is not a valid URL")
		return
	}
	if endpoint && strings.ContainsRune(s, '#') {
		p.add(path, RuleURLFragment, "an OAuth endpoint must not carry a fragment")
	}
	p.credentialParams(path, u.RawQuery)
	p.credential(path, s)
}

// credentialParams refuses a query that gives a credential-named parameter
// a value.
func (p *parser) credentialParams(path, rawQuery string) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		p.add(path, RuleURLInvalid, "query is not valid")
		return
	}
	for name, values := range q {
		if isCredentialName(name) && slices.ContainsFunc(values, func(v string) bool { return v != "" }) {
			p.add(path, RuleURLCredentialParam, "query carries a credential-named parameter with a value; credentials are placed by templates, never written into a requirement")
			return
		}
	}
}

func canonicalPort(s string) bool {
	if s == "" || s[0] == '0' || len(s) > 5 || !allBytes(s, isDigit) {
		return false
	}
	n, _ := strconv.Atoi(s)
	return n >= 1 && n <= 65535
}

// array checks that s is an array of min..max entries and returns them.
func (p *parser) array(s seat, min, max int) []*jsonValue {
	if s.v.kind != jsonArray {
		p.typeMismatch(s.v, s.path, "an array")
		return nil
	}
	switch n := len(s.v.items); {
	case n < min:
		p.add(s.path, RuleArrayTooShort, "must have at least "+strconv.Itoa(min)+" entries")
	case n > max:
		p.add(s.path, RuleArrayTooLong, "has "+strconv.Itoa(n)+" entries; the limit is "+strconv.Itoa(max))
	}
	return s.v.items
}

func (p *parser) fields(s seat) []Field {
	items := p.array(s, minFields, maxFields)
	var out []Field
	for i, item := range items {
		out = append(out, p.field(seat{v: item, path: indexPath(s.path, i)}))
	}
	return out
}

func (p *parser) field(s seat) Field {
	var f Field
	m, ok := p.object(s.v, s.path, []string{"key", "label", "type", "description", "placeholder", "required"})
	if !ok {
		return f
	}
	if k, ok := p.required(m, s.path, "key"); ok {
		if key, ok := p.str(k); ok {
			f.Key = key
			switch {
			case !validFieldKey(key):
				p.add(k.path, RuleFieldKeyPattern, "must match ^[a-z0-9_]{1,40}$")
			case key[0] == '_':
				// The slot's own state lives beside its fields in
				// snug_secrets (auth:<appId>:<slot>:_connection), so a
				// field key may not begin with "_" and alias it.
				p.add(k.path, RuleFieldKeyReserved, "must not begin with _: such names are reserved for snugd's connection state")
			case p.keys[key]:
				p.add(k.path, RuleFieldKeyDuplicate, "another field already uses this key; keys are unique across both layers")
			default:
				p.keys[key] = true
			}
			// A key becomes part of a secret's storage name, so it is
			// scanned like any text: a 32-hex-digit key fits the charset.
			p.credential(k.path, key)
		}
	}
	if l, ok := p.required(m, s.path, "label"); ok {
		if label, ok := p.str(l); ok {
			f.Label = label
			p.text(l.path, label, maxFieldLabel, true)
		}
	}
	if t, ok := p.required(m, s.path, "type"); ok {
		if typ, ok := p.str(t); ok {
			f.Type = FieldType(typ)
			switch f.Type {
			case FieldText, FieldSecret, FieldPassword, FieldURL:
			default:
				p.add(t.path, RuleFieldType, "must be one of text, secret, password, url")
			}
		}
	}
	if d, ok := m["description"]; ok {
		if desc, ok := p.str(d); ok {
			f.Description = desc
			p.text(d.path, desc, maxFieldDesc, true)
		}
	}
	if ph, ok := m["placeholder"]; ok {
		if placeholder, ok := p.str(ph); ok {
			f.Placeholder = placeholder
			// A placeholder is sample input, rendered as an input's
			// placeholder, never as markup; "<your key>" is fine here.
			p.text(ph.path, placeholder, maxPlaceholder, false)
		}
	}
	if rq, ok := m["required"]; ok {
		if rq.v.kind != jsonBool {
			p.typeMismatch(rq.v, rq.path, "a boolean")
		} else {
			b := rq.v.b
			f.Required = &b
		}
	}
	return f
}

func validFieldKey(k string) bool {
	if len(k) == 0 || len(k) > 40 {
		return false
	}
	return allBytes(k, func(c byte) bool { return c >= 'a' && c <= 'z' || isDigit(c) || c == '_' })
}

func (p *parser) registration(s seat) Registration {
	var reg Registration
	m, ok := p.object(s.v, s.path, []string{"consoleUrl", "instructions"})
	if !ok {
		return reg
	}
	reg.ConsoleURL = p.optionalURL(m, "consoleUrl", false)
	if in, ok := m["instructions"]; ok {
		reg.Instructions = p.stringArray(in, 0, maxInstructions, func(path, step string) {
			p.text(path, step, maxInstruction, true)
		})
	}
	return reg
}

// stringArray reads an array of strings with min..max entries, checking
// each with check. An empty array (when min is 0) reads as nil.
func (p *parser) stringArray(s seat, min, max int, check func(path, v string)) []string {
	var out []string
	for i, item := range p.array(s, min, max) {
		path := indexPath(s.path, i)
		if item.kind != jsonString {
			p.typeMismatch(item, path, "a string")
			continue
		}
		check(path, item.s)
		out = append(out, item.s)
	}
	return out
}

func (p *parser) endpoints(s seat) Endpoints {
	var e Endpoints
	m, ok := p.object(s.v, s.path, []string{"authorize", "token", "refresh", "revoke"})
	if !ok {
		return e
	}
	e.Authorize = p.optionalURL(m, "authorize", true)
	e.Token = p.optionalURL(m, "token", true)
	e.Refresh = p.optionalURL(m, "refresh", true)
	e.Revoke = p.optionalURL(m, "revoke", true)
	return e
}

// scopes reads up to 64 scopes of at most 200 characters, each an RFC 6749
// §3.3 scope-token (%x21 / %x23-5B / %x5D-7E: printable ASCII without
// space, '"' or '\'), listed once.
func (p *parser) scopes(s seat) []string {
	seen := make(map[string]bool)
	return p.stringArray(s, 0, maxScopes, func(path, scope string) {
		p.length(path, scope, maxScope)
		if scope == "" {
			return
		}
		if !allBytes(scope, func(c byte) bool { return c >= 0x21 && c <= 0x7E && c != '"' && c != '\\' }) {
			p.add(path, RuleScopeCharset, "must be an OAuth scope token: printable ASCII without spaces, quotes or backslashes")
		}
		if seen[scope] {
			p.add(path, RuleScopeDuplicate, "scope is listed twice")
		}
		seen[scope] = true
		p.credential(path, scope)
	})
}

func (p *parser) authorizeParams(s seat) map[string]string {
	if s.v.kind != jsonObject {
		p.typeMismatch(s.v, s.path, "an object")
		return nil
	}
	if n := len(s.v.members); n > maxAuthorizeParam {
		p.add(s.path, RuleObjectTooLarge, "has "+strconv.Itoa(n)+" parameters; the limit is 16")
	}
	var out map[string]string
	for i, mem := range s.v.members {
		path := joinKey(s.path, mem.name, i)
		switch {
		case !validParamName(mem.name):
			p.add(path, RuleAuthorizeParamName, "name must match ^[A-Za-z0-9_.\\[\\]-]{1,64}$")
		case slices.Contains(ReservedAuthorizeParams(), strings.ToLower(mem.name)):
			p.add(path, RuleAuthorizeParamReserved, "snugd sets this OAuth parameter itself; a requirement may not")
		}
		p.credential(path, mem.name)
		if mem.value.kind != jsonString {
			p.typeMismatch(mem.value, path, "a string")
			continue
		}
		v := mem.value.s
		p.text(path, v, maxParamValue, false)
		if out == nil {
			out = make(map[string]string)
		}
		out[mem.name] = v
	}
	return out
}

// validParamName is the query-name charset of query placements, which authorize
// parameters share because they land in the authorize URL's query.
func validParamName(n string) bool {
	if len(n) == 0 || len(n) > maxParamName {
		return false
	}
	return allBytes(n, func(c byte) bool {
		return isASCIILetter(c) || isDigit(c) || strings.IndexByte("_.[]-", c) >= 0
	})
}

func (p *parser) request(s seat) Request {
	var rq Request
	m, ok := p.object(s.v, s.path, []string{"headerTemplate", "queryTemplate"})
	if !ok {
		return rq
	}
	if h, ok := m["headerTemplate"]; ok {
		rq.HeaderTemplate = p.templateMap(h)
	}
	if q, ok := m["queryTemplate"]; ok {
		rq.QueryTemplate = p.templateMap(q)
	}
	return rq
}

// templateMap reads one placement's name → template map. Its envelope
// (entry count, name charset, value length, refused header names) and its
// grammar are the template lint's; this reads the JSON shape and runs the
// credential detector over names, static text and quoted literals.
func (p *parser) templateMap(s seat) map[string]string {
	if s.v.kind != jsonObject {
		p.typeMismatch(s.v, s.path, "an object")
		return nil
	}
	var out map[string]string
	for i, mem := range s.v.members {
		path := joinKey(s.path, mem.name, i)
		p.credential(path, mem.name)
		if mem.value.kind != jsonString {
			p.typeMismatch(mem.value, path, "a string")
			continue
		}
		for _, t := range templateTexts(mem.value.s) {
			p.credential(path, t)
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[mem.name] = mem.value.s
	}
	return out
}

// templateTexts returns the parts of a template value that are the author's
// own text rather than references: the static text (with every placeholder
// replaced by a space) and each quoted literal inside a placeholder, escapes
// undone. It follows the template grammar loosely — the lint judges
// well-formedness — so an unclosed placeholder's remainder counts as text.
func templateTexts(v string) []string {
	var static strings.Builder
	var literals []string
	for {
		i := strings.Index(v, "{{")
		if i < 0 {
			static.WriteString(v)
			break
		}
		static.WriteString(v[:i])
		static.WriteByte(' ')
		rest := v[i+2:]
		end := -1
		for j := 0; j < len(rest); j++ {
			if rest[j] == '\'' {
				var lit strings.Builder
				k := j + 1
				for ; k < len(rest) && rest[k] != '\''; k++ {
					if rest[k] == '\\' && k+1 < len(rest) {
						k++
					}
					lit.WriteByte(rest[k])
				}
				literals = append(literals, lit.String())
				j = k
				continue
			}
			if strings.HasPrefix(rest[j:], "}}") {
				end = j
				break
			}
		}
		if end < 0 {
			static.WriteString(rest)
			break
		}
		v = rest[end+2:]
	}
	return append([]string{static.String()}, literals...)
}

func (p *parser) lanHost(s seat) *LANHost {
	m, ok := p.object(s.v, s.path, []string{"class", "label"})
	if !ok {
		return &LANHost{}
	}
	lh := &LANHost{}
	if c, ok := p.required(m, s.path, "class"); ok {
		if class, ok := p.str(c); ok {
			lh.Class = class
			if class != LANClassRFC1918 {
				p.add(c.path, RuleLANHostClass, "must be "+LANClassRFC1918)
			}
		}
	}
	if l, ok := p.required(m, s.path, "label"); ok {
		if label, ok := p.str(l); ok {
			lh.Label = label
			p.text(l.path, label, maxLANLabel, true)
		}
	}
	return lh
}

// topHosts reads the requirement's declaredApiHosts and applies the host
// XOR of the host rules:
//
//	lanHost  declaredApiHosts               verdict
//	absent   1..32 hostnames                accepted
//	absent   absent or []                   refused (hosts.required / array.too-short)
//	present  absent                         accepted: pre-collection
//	present  exactly one RFC-1918 literal   accepted: post-collection
//	present  off-class host, ≥2 hosts, []   refused
//
// A none requirement needs declaredApiHosts even beside a lanHost:
// keyless never means "no host gate".
func (p *parser) topHosts(m map[string]seat) []string {
	_, lan := m["lanHost"]
	s, ok := m["declaredApiHosts"]
	if !ok {
		if !lan {
			p.add("declaredApiHosts", RuleHostsRequired, "declaredApiHosts is required unless a lanHost declares a host still to be collected")
		} else if k, ok := m["kind"]; ok && k.v.kind == jsonString && Kind(k.v.s) == KindNone {
			p.add("declaredApiHosts", RuleHostsRequired, "kind none always declares its hosts: keyless never means no host gate")
		}
		return nil
	}
	if !lan {
		return p.hosts(s)
	}
	items := p.array(s, 1, maxHosts)
	if len(items) > 1 {
		p.add(s.path, RuleLANHostCount, "beside a lanHost, declaredApiHosts holds exactly one collected address")
	}
	var out []string
	for i, item := range items {
		path := indexPath(s.path, i)
		if item.kind != jsonString {
			p.typeMismatch(item, path, "a string")
			continue
		}
		if !IsRFC1918Literal(item.s) {
			p.add(path, RuleLANHostOffClass, "beside a lanHost the host must be an RFC 1918 IPv4 address in canonical dotted-quad form")
		}
		out = append(out, item.s)
	}
	return out
}

// hosts reads a declaredApiHosts list of 1..32 hostnames and normalizes
// each (NormalizeHost). Two entries that normalize alike are refused.
func (p *parser) hosts(s seat) []string {
	var out []string
	seen := make(map[string]bool)
	for i, item := range p.array(s, minHosts, maxHosts) {
		path := indexPath(s.path, i)
		if item.kind != jsonString {
			p.typeMismatch(item, path, "a string")
			continue
		}
		n, err := NormalizeHost(item.s)
		if err != nil {
			he := err.(*HostError)
			p.add(path, he.Rule, he.Error())
			continue
		}
		if seen[n] {
			p.add(path, RuleHostDuplicate, "normalizes to a host already listed")
		}
		seen[n] = true
		p.credential(path, n)
		out = append(out, n)
	}
	return out
}

func (p *parser) testRequest(s seat) *TestRequest {
	tr := &TestRequest{}
	m, ok := p.object(s.v, s.path, []string{"method", "pathAndQuery"})
	if !ok {
		return tr
	}
	if ms, ok := p.required(m, s.path, "method"); ok {
		if method, ok := p.str(ms); ok {
			tr.Method = method
			if method != "GET" {
				p.add(ms.path, RuleTestRequestMethod, "must be exactly GET")
			}
		}
	}
	if ps, ok := p.required(m, s.path, "pathAndQuery"); ok {
		if pq, ok := p.str(ps); ok {
			tr.PathAndQuery = pq
			p.testPath(ps.path, pq)
		}
	}
	return tr
}

// testPath checks testRequest.pathAndQuery: at most 200 characters of
// printable ASCII without spaces, starting with '/' but not "//" (which
// would name another host), with no '#', no backslash, valid percent
// escapes, and no credential in it.
func (p *parser) testPath(path, pq string) {
	p.length(path, pq, maxTestPath)
	if pq == "" {
		return
	}
	switch {
	case !strings.HasPrefix(pq, "/"):
		p.add(path, RuleTestRequestPath, "must start with '/'")
	case strings.HasPrefix(pq, "//"):
		p.add(path, RuleTestRequestPath, "must not start with '//'")
	case !printableASCII(pq) || strings.ContainsAny(pq, " #\\"):
		p.add(path, RuleTestRequestPath, "must be printable ASCII without spaces, '#' or backslashes")
	default:
		u, err := url.ParseRequestURI(pq)
		if err != nil || u.Host != "" || u.Scheme != "" {
			p.add(path, RuleTestRequestPath, "is not a valid path and query")
			break
		}
		p.credentialParams(path, u.RawQuery)
	}
	p.credential(path, pq)
}

func (p *parser) userLayer(s seat) *UserLayer {
	m, ok := p.object(s.v, s.path, userLayerKeys())
	if !ok {
		return nil
	}
	f := p.flow(m, s.path)
	ul := &UserLayer{
		Kind: f.kind, Fields: f.fields, Registration: f.registration, Endpoints: f.endpoints,
		Scopes: f.scopes, PKCE: f.pkce, AuthorizeParams: f.authorizeParams,
	}
	if h, ok := m["declaredApiHosts"]; ok {
		ul.DeclaredAPIHosts = p.hosts(h)
	}
	return ul
}

// lintTemplates runs the template lint over both placements
// with one resolution of the declared field keys (both layers), and turns
// its findings into violations. A finding's message is dropped for a fixed
// sentence if it could carry a credential-shaped fragment.
func (p *parser) lintTemplates(r *Requirement) {
	var keys []string
	for _, k := range r.FieldKeys() {
		if validFieldKey(k) && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, f := range template.Lint(keys, r.Request.Templates()) {
		path, rule, msg := f.Path, f.Rule, f.Message
		if path == "" || !printableASCII(path) || len(path) > 200 {
			path = "request"
		} else if _, hit := DetectCredential(path); hit {
			path = "request"
		}
		if rule == "" {
			rule = RuleTemplateInvalid
		}
		if _, hit := DetectCredential(msg); hit || msg == "" {
			msg = "the template is not valid"
		}
		p.add(path, rule, msg)
	}
}

// utf16Len is the length of s in UTF-16 code units: the number of its
// characters, counting each one outside the Basic Multilingual Plane twice.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}
