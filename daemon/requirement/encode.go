package requirement

import (
	"maps"
	"slices"
	"strings"
)

// Canonical returns the requirement's canonical form: the
// normalized requirement encoded as JSON with recursively sorted keys and no
// whitespace, exactly as Canonical would rewrite it. It is what the writers
// store as requirement_json and compare, as a string, to decide a
// requirement_version bump.
//
// The encoding is stable: absent optional seats and empty optional
// containers are omitted, hosts appear in their normalized form, and pkce
// is written explicitly (true unless the author said false) on both OAuth
// kinds, so a requirement that relied on the default and one that spelled
// it out store the same text. Parse(r.Canonical()) returns a Requirement
// equal to r, whose Canonical is the same string.
func (r *Requirement) Canonical() string {
	o := obj{}
	o.str("slot", r.Slot)
	p := obj{}
	p.str("name", r.Provider.Name)
	p.optStr("homepageUrl", r.Provider.HomepageURL)
	p.optStr("docsUrl", r.Provider.DocsURL)
	o.set("provider", p.value())
	encodeFlow(o, flow{
		kind: r.Kind, fields: r.Fields, registration: r.Registration, endpoints: r.Endpoints,
		scopes: r.Scopes, pkce: r.PKCE, authorizeParams: r.AuthorizeParams,
	})
	rq := obj{}
	rq.optMap("headerTemplate", r.Request.HeaderTemplate)
	rq.optMap("queryTemplate", r.Request.QueryTemplate)
	o.optObj("request", rq)
	if ul := r.UserLayer; ul != nil {
		u := obj{}
		encodeFlow(u, flow{
			kind: ul.Kind, fields: ul.Fields, registration: ul.Registration, endpoints: ul.Endpoints,
			scopes: ul.Scopes, pkce: ul.PKCE, authorizeParams: ul.AuthorizeParams,
		})
		u.optStrings("declaredApiHosts", ul.DeclaredAPIHosts)
		o.set("userLayer", u.value())
	}
	if lh := r.LANHost; lh != nil {
		l := obj{}
		l.str("class", lh.Class)
		l.str("label", lh.Label)
		o.set("lanHost", l.value())
	}
	o.optStrings("declaredApiHosts", r.DeclaredAPIHosts)
	if tr := r.TestRequest; tr != nil {
		t := obj{}
		t.str("method", tr.Method)
		t.str("pathAndQuery", tr.PathAndQuery)
		o.set("testRequest", t.value())
	}
	var b strings.Builder
	// Every node is a string, boolean, array or object built here, so the
	// only error writeCanonical can return (a number out of range) cannot
	// happen.
	_ = writeCanonical(&b, o.value())
	return b.String()
}

func encodeFlow(o obj, f flow) {
	o.str("kind", string(f.kind))
	if len(f.fields) > 0 {
		items := make([]*jsonValue, 0, len(f.fields))
		for _, fd := range f.fields {
			e := obj{}
			e.str("key", fd.Key)
			e.str("label", fd.Label)
			e.str("type", string(fd.Type))
			e.optStr("description", fd.Description)
			e.optStr("placeholder", fd.Placeholder)
			e.optBool("required", fd.Required)
			items = append(items, e.value())
		}
		o.set("fields", &jsonValue{kind: jsonArray, items: items})
	}
	reg := obj{}
	reg.optStr("consoleUrl", f.registration.ConsoleURL)
	reg.optStrings("instructions", f.registration.Instructions)
	o.optObj("registration", reg)
	ep := obj{}
	ep.optStr("authorize", f.endpoints.Authorize)
	ep.optStr("token", f.endpoints.Token)
	ep.optStr("refresh", f.endpoints.Refresh)
	ep.optStr("revoke", f.endpoints.Revoke)
	o.optObj("endpoints", ep)
	o.optStrings("scopes", f.scopes)
	o.optBool("pkce", f.pkce)
	o.optMap("authorizeParams", f.authorizeParams)
}

// obj builds an object node; member order does not matter because the
// encoder sorts.
type obj map[string]*jsonValue

func (o obj) set(name string, v *jsonValue) { o[name] = v }

func (o obj) str(name, s string) { o[name] = &jsonValue{kind: jsonString, s: s} }

func (o obj) optStr(name, s string) {
	if s != "" {
		o.str(name, s)
	}
}

func (o obj) optBool(name string, b *bool) {
	if b != nil {
		o[name] = &jsonValue{kind: jsonBool, b: *b}
	}
}

func (o obj) optStrings(name string, ss []string) {
	if len(ss) == 0 {
		return
	}
	items := make([]*jsonValue, len(ss))
	for i, s := range ss {
		items[i] = &jsonValue{kind: jsonString, s: s}
	}
	o[name] = &jsonValue{kind: jsonArray, items: items}
}

func (o obj) optMap(name string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	e := obj{}
	for k, v := range m {
		e.str(k, v)
	}
	o[name] = e.value()
}

func (o obj) optObj(name string, e obj) {
	if len(e) > 0 {
		o[name] = e.value()
	}
}

func (o obj) value() *jsonValue {
	v := &jsonValue{kind: jsonObject, members: make([]jsonMember, 0, len(o))}
	for _, name := range slices.Sorted(maps.Keys(o)) {
		v.members = append(v.members, jsonMember{name: name, value: o[name]})
	}
	return v
}
