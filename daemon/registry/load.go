package registry

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/requirement"
)

// The keys of each object in a data file. Anything else is RuleKeyUnknown,
// except an auth option's identity seats, which get their own rule.
func entryKeys() []string {
	return []string{
		"id", "displayName", "aliases", "homepageUrl", "docsUrl", "sources",
		"hosts", "lanHost", "registration", "scopes", "testRequest", "options",
		"defaultOption", "pairing", "browserCallable", "desktopRedirectPosture",
		"webRedirectPosture", "webRegistration", "helper",
		"tokenAuth", "scopeSeparator", "revocation", // revocation.go
	}
}

// optionFlowKeys are the requirement seats an auth option carries.
func optionFlowKeys() []string {
	return []string{"kind", "fields", "registration", "endpoints", "pkce", "authorizeParams", "request", "userLayer"}
}

// identityKeys are the seats that belong to the entry and never to an auth
// option: which hosts may receive a credential, under which name
// and with which privilege breadth is a per-provider decision, never a
// per-flow one.
func identityKeys() []string {
	return []string{"displayName", "name", "provider", "aliases", "hosts", "declaredApiHosts", "lanHost", "scopes", "slot"}
}

// entry decodes and checks one data file. It returns nil when the file
// has any problem; the problems are in l.errs.
func (l *loader) entry(file string, raw []byte) *entry {
	l.file = file
	if err := checkStrict(file, raw); err != nil {
		l.errs = append(l.errs, err)
		return nil
	}
	before := len(l.errs)
	m, _ := l.members(raw, "", entryKeys())
	if m == nil {
		return nil
	}
	e := &entry{file: file}
	e.id = l.str(m, "", "id", true)
	if e.id != "" && (!requirement.ValidSlot(e.id) || file != e.id+".json") {
		l.fail("id", RuleID, "an entry ID matches "+requirement.SlotPattern+" and names its file, <id>.json")
	}
	e.displayName = l.str(m, "", "displayName", true)
	e.aliases = l.strings(m, "", "aliases")
	l.names(e)
	e.homepageURL = l.str(m, "", "homepageUrl", false)
	e.docsURL = l.str(m, "", "docsUrl", false)
	e.sources = l.sources(m)
	e.hosts = l.strings(m, "", "hosts")
	_, isLAN := m["lanHost"]
	e.helper = l.helperSeat(m)
	l.hosts(e, isLAN)
	e.browserCallable = l.boolean(m, "", "browserCallable")
	if reg, ok := m["registration"]; ok {
		if r, ok := l.registrationBlock(reg, "registration", RuleRegistration); ok {
			e.registration = r
		}
	}

	items := l.array(m, "", "options")
	if len(items) == 0 || len(items) > maxOptions {
		l.fail("options", RuleOptionCount, "an entry offers 1 to "+strconv.Itoa(maxOptions)+" auth options")
	}
	ids := make(map[string]bool)
	for i, item := range items {
		o := l.option(e, m, item, indexPath("options", i))
		if o == nil {
			continue
		}
		if ids[o.id] {
			l.fail(indexPath("options", i)+".id", RuleOptionID, "two options share an ID")
		}
		ids[o.id] = true
		e.options = append(e.options, o)
	}
	if len(l.errs) > before || len(e.options) == 0 {
		// The remaining rules read the options' parsed requirements.
		return nil
	}
	l.defaultOption(e, m)
	base := e.options[e.defaultOption].base
	e.lanHost, e.scopes, e.testRequest = base.LANHost, base.Scopes, base.TestRequest
	l.fieldSets(e)
	l.ceiling(e)
	l.helperRules(e)
	e.pairing = l.pairingSeat(e, m)
	l.desktop(e, m)
	l.web(e, m)
	l.protocolSeats(e, m)
	if len(l.errs) > before {
		return nil
	}
	return e
}

// names checks the display name and aliases: each must be a valid
// provider.name (the rule requirement.Parse applies), and no two may
// fold to the same name.
func (l *loader) names(e *entry) {
	if len(e.aliases) > maxAliases {
		l.fail("aliases", RuleName, "an entry has at most "+strconv.Itoa(maxAliases)+" aliases")
	}
	seen := make(map[string]bool)
	for i, n := range append([]string{e.displayName}, e.aliases...) {
		p := "displayName"
		if i > 0 {
			p = indexPath("aliases", i-1)
		}
		if n == "" {
			if i > 0 {
				l.fail(p, RuleName, "an alias must not be empty")
			}
			continue
		}
		doc, _ := json.Marshal(map[string]any{
			"slot": "name-check", "provider": map[string]string{"name": n},
			"kind": "none", "declaredApiHosts": []string{"example.com"},
		})
		if _, vs := requirement.Parse(doc, requirement.Options{}); len(vs) > 0 {
			l.fail(p, RuleName, "not a valid provider name: "+vs[0].Message)
		}
		if seen[foldName(n)] {
			l.fail(p, RuleNameDuplicate, "the entry lists this name twice (names compare case-insensitively)")
		}
		seen[foldName(n)] = true
	}
}

// sources checks that the entry cites at least one page of provider
// documentation with the date it was checked.
func (l *loader) sources(m map[string]json.RawMessage) []Source {
	items := l.array(m, "", "sources")
	if len(items) == 0 {
		l.fail("sources", RuleSource, "an entry cites at least one documentation page it was checked against")
	}
	var out []Source
	for i, item := range items {
		p := indexPath("sources", i)
		sm, _ := l.members(item, p, []string{"url", "checked", "note"})
		if sm == nil {
			continue
		}
		s := Source{URL: l.str(sm, p, "url", true), Checked: l.str(sm, p, "checked", true), Note: l.str(sm, p, "note", false)}
		if u, err := url.Parse(s.URL); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			l.fail(p+".url", RuleSource, "must be an https URL")
		}
		if _, err := time.Parse(time.DateOnly, s.Checked); err != nil {
			l.fail(p+".checked", RuleSource, "must be a date, YYYY-MM-DD")
		}
		if s.Note != "" {
			l.text(p+".note", RuleText, s.Note, maxNote)
		}
		out = append(out, s)
	}
	return out
}

// text checks a free-text registry seat that requirement.Parse never sees
// (a label, a source note, what a probe expects) by handing it to Parse
// where it would sit in a requirement, as one registration instruction:
// plain prose without markup, no control or invisible characters, nothing
// credential-shaped, and at most max characters.
func (l *loader) text(path, rule, s string, max int) {
	if n := utf8.RuneCountInString(s); n == 0 || n > max {
		l.fail(path, rule, "is 1 to "+strconv.Itoa(max)+" characters")
		return
	}
	doc, _ := json.Marshal(map[string]any{
		"slot": "text-check", "provider": map[string]string{"name": "check"},
		"kind": "none", "declaredApiHosts": []string{"example.com"},
		"registration": map[string]any{"instructions": []string{s}},
	})
	if _, vs := requirement.Parse(doc, requirement.Options{}); len(vs) > 0 {
		l.fail(path, rule, vs[0].Message)
	}
}

// hosts checks the pinned hosts: already normal (NormalizeHost is the
// identity on each), unique, present on an ordinary entry and absent on a
// LAN entry, and under .invalid only as the entry's helper's symbolic host.
func (l *loader) hosts(e *entry, isLAN bool) {
	switch {
	case isLAN && len(e.hosts) > 0:
		l.fail("hosts", RuleHostCount, "a LAN entry pins no host: its one host is the address the user collects")
	case !isLAN && (len(e.hosts) == 0 || len(e.hosts) > 32):
		l.fail("hosts", RuleHostCount, "an entry pins 1 to 32 hosts")
	}
	seen := make(map[string]bool)
	for i, h := range e.hosts {
		p := indexPath("hosts", i)
		if n, err := requirement.NormalizeHost(h); err != nil || n != h {
			l.fail(p, RuleHostNotNormal, "a pinned host is written in normalized form (lowercase, punycode, no trailing dot), and is a DNS name")
		}
		if seen[h] {
			l.fail(p, RuleHostDuplicate, "the entry pins this host twice")
		}
		seen[h] = true
		if (h == "invalid" || strings.HasSuffix(h, ".invalid")) && (e.helper == nil || h != e.helper.ID+SidecarSuffix) {
			l.fail(p, RuleHostSidecar, "a host under .invalid is only ever the entry's own helper's symbolic host")
		}
	}
}

// registrationBlock validates a walkthrough ({consoleUrl?, instructions?})
// with the rules requirement.Parse applies to registration.
func (l *loader) registrationBlock(raw json.RawMessage, path, rule string) (requirement.Registration, bool) {
	doc, _ := json.Marshal(map[string]any{
		"slot": "registration-check", "provider": map[string]string{"name": "check"},
		"kind": "none", "declaredApiHosts": []string{"example.com"}, "registration": raw,
	})
	r, vs := requirement.Parse(doc, requirement.Options{})
	for _, v := range vs {
		l.fail(path, rule, v.String())
	}
	if len(vs) > 0 {
		return requirement.Registration{}, false
	}
	return r.Registration, true
}

// option decodes one auth option and validates it combined with its entry:
// the combination must be a valid requirement (the registry is
// the one channel that may set AllowUserLayer).
func (l *loader) option(e *entry, m map[string]json.RawMessage, raw json.RawMessage, path string) *option {
	keys := append(append([]string{"id", "label"}, optionFlowKeys()...), identityKeys()...)
	om, _ := l.members(raw, path, keys)
	if om == nil {
		return nil
	}
	o := &option{id: l.str(om, path, "id", true), label: l.str(om, path, "label", true)}
	if o.id != "" && !requirement.ValidSlot(o.id) {
		l.fail(path+".id", RuleOptionID, "an option ID matches "+requirement.SlotPattern)
	}
	if o.label != "" {
		l.text(path+".label", RuleText, o.label, maxLabel)
	}
	for _, k := range identityKeys() {
		if _, ok := om[k]; ok {
			l.fail(path+"."+k, RuleOptionIdentity, "an auth option carries no identity seat (display name, hosts, aliases, lanHost, scopes): those belong to the entry")
		}
	}
	doc := map[string]any{
		"slot": e.id,
		"provider": struct {
			Name        string `json:"name"`
			HomepageURL string `json:"homepageUrl,omitempty"`
			DocsURL     string `json:"docsUrl,omitempty"`
		}{e.displayName, e.homepageURL, e.docsURL},
	}
	for _, k := range optionFlowKeys() {
		if v, ok := om[k]; ok {
			doc[k] = v
		}
	}
	if _, ok := doc["registration"]; !ok {
		if v, ok := m["registration"]; ok {
			doc["registration"] = v // the entry walkthrough serves an option without its own
		}
	}
	for _, k := range []string{"scopes", "lanHost", "testRequest"} {
		if v, ok := m[k]; ok {
			doc[k] = v
		}
	}
	if _, lan := m["lanHost"]; !lan && len(e.hosts) > 0 {
		doc["declaredApiHosts"] = e.hosts
	}
	b, err := json.Marshal(doc)
	if err != nil {
		l.fail(path, RuleJSON, "cannot be combined with its entry")
		return nil
	}
	r, vs := requirement.Parse(b, requirement.Options{AllowUserLayer: true})
	for _, v := range vs {
		l.fail(path, RuleOptionRequirement, "combined with its entry: "+v.String())
	}
	if len(vs) > 0 {
		return nil
	}
	o.base = r
	o.fieldSet = fieldSet(r.FieldKeys())
	return o
}

// fieldSet is the match key of a list of field keys: sorted, unique,
// joined by NUL.
func fieldSet(keys []string) string {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	return strings.Join(slices.Compact(keys), "\x00")
}

func (l *loader) defaultOption(e *entry, m map[string]json.RawMessage) {
	if _, ok := m["defaultOption"]; !ok {
		if len(e.options) > 1 {
			l.fail("defaultOption", RuleOptionDefault, "an entry with several options names its default")
		}
		return
	}
	id := l.str(m, "", "defaultOption", true)
	i := slices.IndexFunc(e.options, func(o *option) bool { return o.id == id })
	if i < 0 {
		l.fail("defaultOption", RuleOptionDefault, "names no option of the entry")
		return
	}
	e.defaultOption = i
}

// fieldSets refuses two options a declaration could not tell apart.
func (l *loader) fieldSets(e *entry) {
	seen := make(map[string]string)
	for _, o := range e.options {
		if other, ok := seen[o.fieldSet]; ok {
			l.fail("options", RuleOptionFields, "options "+other+" and "+o.id+" pin the same set of field keys, so a declaration could not pick between them")
		}
		seen[o.fieldSet] = o.id
	}
}

// ceiling checks that a borrowed requirement's frozen ceiling is exactly
// the entry's pinned hosts: every endpoint and userLayer host is pinned,
// and a LAN entry's pre-collection ceiling is empty.
func (l *loader) ceiling(e *entry) {
	want := slices.Sorted(slices.Values(e.hosts))
	for _, o := range e.options {
		if got := requirement.DeriveAllowedHosts(o.base); !slices.Equal(got, want) {
			l.fail("options", RuleHostCeiling, "option "+o.id+" would derive a ceiling other than the pinned hosts: every endpoint and userLayer host must be pinned")
		}
	}
}

// helperSeat decodes the linked-device helper seat.
func (l *loader) helperSeat(m map[string]json.RawMessage) *Helper {
	raw, ok := m["helper"]
	if !ok {
		return nil
	}
	hm, _ := l.members(raw, "helper", []string{"id", "executable"})
	if hm == nil {
		return nil
	}
	h := &Helper{ID: l.str(hm, "helper", "id", true), Executable: l.str(hm, "helper", "executable", true)}
	if n, err := requirement.NormalizeHost(h.ID + SidecarSuffix); !requirement.ValidSlot(h.ID) || err != nil || n != h.ID+SidecarSuffix {
		l.fail("helper.id", RuleHelper, "a helper ID is one DNS label matching "+requirement.SlotPattern)
	}
	if !validExecutable(h.Executable) {
		l.fail("helper.executable", RuleHelper, "an executable is a bare file name of lowercase letters, digits, '.', '_' and '-', never a path")
	}
	return h
}

func validExecutable(s string) bool {
	if len(s) == 0 || len(s) > 64 || strings.Contains(s, "..") || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// helperRules binds a helper to linked_device: a helper entry's options are
// all linked_device and its one host is the helper's symbolic host, and a
// linked_device option needs a helper to serve it.
func (l *loader) helperRules(e *entry) {
	for _, o := range e.options {
		if (o.base.Kind == requirement.KindLinkedDevice) != (e.helper != nil) {
			l.fail("helper", RuleHelperKind, "a helper serves linked_device options only, and a linked_device option needs the entry's helper")
			break
		}
	}
	if e.helper != nil && !slices.Equal(e.hosts, []string{e.helper.ID + SidecarSuffix}) {
		l.fail("hosts", RuleHelperHost, "a helper entry pins exactly one host, the helper's symbolic host "+e.helper.ID+SidecarSuffix)
	}
}

// pairingSeat decodes and checks the pairing seat.
func (l *loader) pairingSeat(e *entry, m map[string]json.RawMessage) *Pairing {
	raw, ok := m["pairing"]
	if !ok {
		if e.helper != nil {
			l.fail("helper", RulePairingHelper, "a helper is linked by the device-link family: the entry needs that pairing seat")
		}
		return nil
	}
	pm, _ := l.members(raw, "pairing", []string{"family", "field", "verify", "exchange", "accessPath"})
	if pm == nil {
		return nil
	}
	p := &Pairing{Family: Family(l.str(pm, "pairing", "family", true)), Field: l.str(pm, "pairing", "field", true)}
	if !slices.Contains(Families(), p.Family) {
		l.fail("pairing.family", RulePairingFamily, "exactly three pairing families exist: exchange, device-link, token-claim")
		return nil
	}
	if v, ok := pm["verify"]; ok {
		p.Verify = l.probe(v, p.Family)
	} else {
		l.fail("pairing.verify", RulePairingVerify, "every pairing family carries a verify probe, run before any credential is written")
	}

	_, hasExchange := pm["exchange"]
	_, hasAccess := pm["accessPath"]
	switch {
	case hasExchange != (p.Family == FamilyExchange):
		l.fail("pairing.exchange", RulePairingSeat, "the exchange seat belongs to the exchange family, which needs it")
	case hasAccess != (p.Family == FamilyTokenClaim):
		l.fail("pairing.accessPath", RulePairingSeat, "the pinned access path belongs to the token-claim family, which needs it")
	}
	if hasExchange && p.Family == FamilyExchange {
		p.Exchange = l.exchange(pm["exchange"])
	}
	if hasAccess && p.Family == FamilyTokenClaim {
		p.AccessPath = l.str(pm, "pairing", "accessPath", true)
		if !validPath(p.AccessPath) {
			l.fail("pairing.accessPath", RulePairingSeat, "an access path is an absolute path of unreserved characters, without a query")
		}
	}
	if (p.Family == FamilyExchange) != e.isLAN() {
		l.fail("pairing.family", RulePairingLAN, "the exchange family runs against a collected LAN address: it is the family of LAN entries, and only of them")
	}
	if p.Family == FamilyDeviceLink {
		if e.helper == nil {
			l.fail("pairing.family", RulePairingHelper, "the device-link family needs the entry's helper")
		} else {
			p.HelperID = e.helper.ID
		}
	} else if e.helper != nil {
		l.fail("pairing.family", RulePairingHelper, "a helper is linked by the device-link family")
	}
	switch {
	case len(e.options) != 1:
		l.fail("pairing", RulePairingField, "a pairing ceremony yields one credential flow: the entry offers exactly one option")
	case !slices.ContainsFunc(e.options[0].base.Fields, func(f requirement.Field) bool { return f.Key == p.Field }):
		l.fail("pairing.field", RulePairingField, "names no field of the entry's option")
	}
	return p
}

// probe decodes a verify probe. HTTP families probe with a GET (a probe
// changes nothing); device-link asks the helper's verify method.
func (l *loader) probe(raw json.RawMessage, fam Family) Probe {
	const path = "pairing.verify"
	vm, _ := l.members(raw, path, []string{"method", "path", "rpc", "expect"})
	if vm == nil {
		return Probe{}
	}
	pr := Probe{
		Method: l.str(vm, path, "method", false),
		Path:   l.str(vm, path, "path", false),
		RPC:    l.str(vm, path, "rpc", false),
		Expect: l.str(vm, path, "expect", false),
	}
	l.text(path+".expect", RulePairingVerify, pr.Expect, maxNote) // what a live counterparty answers
	if fam == FamilyDeviceLink {
		if pr.RPC != "verify" || pr.Method != "" || pr.Path != "" {
			l.fail(path, RulePairingVerify, "a device-link probe is the helper's verify method: rpc \"verify\", no method or path")
		}
	} else if pr.Method != "GET" || !validPath(pr.Path) || pr.RPC != "" {
		l.fail(path, RulePairingVerify, "an HTTP probe is a GET of an absolute path of unreserved characters, without rpc")
	}
	return pr
}

func (l *loader) exchange(raw json.RawMessage) *Exchange {
	const path = "pairing.exchange"
	xm, _ := l.members(raw, path, []string{"method", "path", "body", "expect"})
	if xm == nil {
		return nil
	}
	x := &Exchange{
		Method: l.str(xm, path, "method", true),
		Path:   l.str(xm, path, "path", true),
		Body:   l.str(xm, path, "body", true),
		Expect: l.str(xm, path, "expect", true),
	}
	if x.Method != "POST" || !validPath(x.Path) {
		l.fail(path, RulePairingSeat, "the exchange is a POST to an absolute path of unreserved characters")
	}
	if !json.Valid([]byte(x.Body)) || len(x.Body) > maxNote {
		l.fail(path+".body", RulePairingSeat, "the exchange body is JSON of at most "+strconv.Itoa(maxNote)+" bytes")
	} else if reason, bad := requirement.DetectCredential(x.Body); bad {
		l.fail(path+".body", RulePairingSeat, "holds "+reason)
	}
	l.text(path+".expect", RulePairingSeat, x.Expect, maxNote)
	return x
}

// validPath reports whether s is an absolute path of RFC 3986 unreserved
// characters and '/', 1 to 200 characters, not starting with "//".
func validPath(s string) bool {
	if len(s) == 0 || len(s) > 200 || s[0] != '/' || strings.HasPrefix(s, "//") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/-._~", c) >= 0) {
			return false
		}
	}
	return true
}

// desktop checks the desktop OAuth redirect posture: loopback is its only
// member, it needs an authorization-code option, and it is representable
// only beside PKCE (pkce false plus loopback leaves auth-code injection
// undefendable).
func (l *loader) desktop(e *entry, m map[string]json.RawMessage) {
	if _, ok := m["desktopRedirectPosture"]; !ok {
		return
	}
	e.desktopRedirect = RedirectPosture(l.str(m, "", "desktopRedirectPosture", false))
	if e.desktopRedirect != PostureLoopback {
		l.fail("desktopRedirectPosture", RuleDesktopPosture, "the only desktop redirect posture is loopback")
		return
	}
	authCode := false
	for _, o := range e.options {
		if o.base.Kind != requirement.KindOAuth2AuthCode {
			continue
		}
		authCode = true
		if o.base.PKCE != nil && !*o.base.PKCE {
			l.fail("desktopRedirectPosture", RuleDesktopPKCE, "option "+o.id+" turns pkce off: a loopback redirect is representable only beside PKCE")
		}
	}
	if !authCode {
		l.fail("desktopRedirectPosture", RuleDesktopKind, "a redirect posture needs an oauth2_auth_code option")
	}
}

// web checks the web-surface seats: webRedirectPosture and webRegistration
// require each other and an OAuth kind.
func (l *loader) web(e *entry, m map[string]json.RawMessage) {
	_, hasPosture := m["webRedirectPosture"]
	raw, hasReg := m["webRegistration"]
	if !hasPosture && !hasReg {
		return
	}
	if hasPosture {
		e.webRedirect = WebRedirectPosture(l.str(m, "", "webRedirectPosture", false))
		if e.webRedirect != PostureOriginCallback {
			l.fail("webRedirectPosture", RuleWebPosture, "the only web redirect posture is origin-callback")
		}
	}
	if hasPosture != hasReg {
		l.fail("webRedirectPosture", RuleWebPair, "webRedirectPosture and webRegistration require each other")
	}
	if !slices.ContainsFunc(e.options, func(o *option) bool { return o.base.Kind.IsOAuth() }) {
		l.fail("webRedirectPosture", RuleWebKind, "the web seats need an OAuth option")
	}
	if hasReg {
		if r, ok := l.registrationBlock(raw, "webRegistration", RuleWebRegistration); ok {
			e.webRegistration = &r
		}
	}
}
