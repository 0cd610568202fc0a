package registry

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/snug/snugd/daemon/requirement"
)

// data is the registry as shipped: one reviewed JSON file per entry.
//
//go:embed data/*.json
var data embed.FS

// A Registry is the loaded, validated provider registry. It is immutable
// and safe for concurrent use; its methods never return a value that
// aliases its own state.
type Registry struct {
	doc     []byte            // the public document (Document)
	entries []*entry          // sorted by id
	byName  map[string]*entry // lowercased display names and aliases
	byHost  map[string]*entry // pinned hosts
	// byEndpoints maps an OAuth option's authorize and token URLs, byte for
	// byte, to its entry: the binding of the render-time OAuth facts.
	byEndpoints map[endpointPin]*entry
	// helpers maps a helper's symbolic host to its ID.
	helpers map[string]string
	// matcher is MayTrigger's automaton over byName's and byHost's keys,
	// built on first use (prefilter.go).
	matcherOnce sync.Once
	matcher     *keyMatcher
}

type endpointPin struct{ authorize, token string }

// entry is one loaded entry. Nothing in it changes after load.
type entry struct {
	file            string
	id              string
	displayName     string
	aliases         []string
	homepageURL     string
	docsURL         string
	hosts           []string
	lanHost         *requirement.LANHost
	registration    requirement.Registration
	scopes          []string
	testRequest     *requirement.TestRequest
	options         []*option
	defaultOption   int
	pairing         *Pairing
	browserCallable *bool
	desktopRedirect RedirectPosture
	webRedirect     WebRedirectPosture
	webRegistration *requirement.Registration
	helper          *Helper
	sources         []Source
	tokenAuth       TokenAuth   // "" reads as TokenAuthBasic
	scopeSeparator  string      // "" reads as " "
	revocation      *Revocation // nil: not said (no authorization-code option)
}

// option is one loaded auth option.
type option struct {
	id    string
	label string
	// base is the option combined with its entry into a requirement (slot:
	// the entry ID), validated by requirement.Parse with AllowUserLayer.
	// A borrow copies it, sets the declaration's slot (and a LAN entry's
	// collected address) and validates the result again.
	base *requirement.Requirement
	// fieldSet is the option's field keys, sorted and joined by NUL: what a
	// declaration's field keys are matched against.
	fieldSet string
}

// isLAN reports whether e is a LAN entry.
func (e *entry) isLAN() bool { return e.lanHost != nil }

// A LoadError is one way the registry data breaks the rules and
// this package. File names the data file, Path the seat in it ("$" is the
// file itself), Rule is one of the Rule* names and Msg says what is wrong.
// Registry data is public, so a LoadError may name any of it.
type LoadError struct {
	File string
	Path string
	Rule string
	Msg  string
}

func (e *LoadError) Error() string {
	return "registry " + e.File + ": " + e.Path + ": " + e.Msg + " (" + e.Rule + ")"
}

// Rule names of LoadError. Each is checked at load and has its own test.
const (
	RuleJSON       = "json"        // not one strict JSON object: syntax, type, duplicate key, null, depth
	RuleKeyUnknown = "key.unknown" // a key this object does not define
	RuleKeyMissing = "key.missing" // a required key is absent or empty
	RuleFile       = "file"        // a file that is not <id>.json, or no entries at all

	RuleID            = "entry.id"             // an ID not of the slot shape, or not the file's name (so IDs are unique)
	RuleName          = "entry.name"           // a display name or alias that is not a valid provider.name
	RuleNameDuplicate = "entry.name-duplicate" // a display name or alias shared, case-insensitively
	RuleSource        = "entry.source"         // no source, or a source without an https URL and a date
	RuleText          = "entry.text"           // a free-text seat that is empty, too long, or credential-shaped

	RuleHostNotNormal = "host.not-normal" // a pinned host that NormalizeHost would change or refuse
	RuleHostDuplicate = "host.duplicate"  // a host pinned twice, in one entry or across entries
	RuleHostCount     = "host.count"      // no host on an ordinary entry, or a host on a LAN entry
	RuleHostCeiling   = "host.ceiling"    // a borrowed requirement's ceiling would not be exactly the pinned hosts
	RuleHostSidecar   = "host.sidecar"    // a .sidecar.invalid host that is not the entry's helper's

	RuleOptionIdentity    = "option.identity-seat" // an auth option carrying a display name, hosts, aliases, lanHost or scopes
	RuleOptionID          = "option.id"            // an option ID not of the slot shape, or repeated
	RuleOptionDefault     = "option.default"       // no default among several options, or one that names none
	RuleOptionFields      = "option.fields"        // two options with the same set of field keys
	RuleOptionRequirement = "option.requirement"   // option + entry is not a valid requirement (requirement.Parse)
	RulePairingFamily     = "pairing.family"       // a family other than the three
	RulePairingVerify     = "pairing.verify"       // a missing or malformed verify probe
	RulePairingSeat       = "pairing.seat"         // a family's own seat missing or malformed, or another family's seat present
	RulePairingLAN        = "pairing.exchange-lan" // exchange on an entry without lanHost, or another family on one
	RulePairingHelper     = "pairing.helper"       // device-link without a helper, or a helper without device-link
	RulePairingField      = "pairing.field"        // pairing beside several options, or naming a field the option lacks
	RuleDesktopPosture    = "desktop.posture"      // a desktop redirect posture other than loopback
	RuleDesktopKind       = "desktop.kind"         // a desktop posture without an authorization-code option
	RuleDesktopPKCE       = "desktop.pkce"         // loopback beside pkce false
	RuleWebPosture        = "web.posture"          // a web redirect posture other than origin-callback
	RuleWebPair           = "web.pair"             // webRedirectPosture without webRegistration, or the reverse
	RuleWebKind           = "web.kind"             // web seats on an entry without an OAuth option
	RuleWebRegistration   = "web.registration"     // a webRegistration that is not a valid registration block
	RuleHelper            = "helper.invalid"       // a helper ID or executable name of the wrong shape
	RuleHelperKind        = "helper.kind"          // a helper beside a non-linked_device option, or linked_device without one
	RuleHelperHost        = "helper.host"          // a helper entry whose one host is not <id>.sidecar.invalid
	RuleOptionCount       = "option.count"         // no option, or more than maxOptions
	RuleRegistration      = "entry.registration"   // an entry walkthrough that is not a valid registration block
)

// Bounds of an entry.
const (
	maxOptions = 8
	maxAliases = 16
	maxLabel   = 80
	maxNote    = 300
)

// Load loads and validates the registry snugd ships (the embedded data
// files). The daemon refuses to start when it returns an error; the error
// joins one *LoadError per problem found.
func Load() (*Registry, error) {
	sub, err := fs.Sub(data, "data")
	if err != nil {
		return nil, err
	}
	return load(sub)
}

// load loads every *.json file at the root of fsys as one entry each.
func load(fsys fs.FS) (*Registry, error) {
	files, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	l := &loader{}
	var entries []*entry
	raws := map[string][]byte{}
	for _, f := range files {
		name := f.Name()
		if f.IsDir() || path.Ext(name) != ".json" {
			l.file = name
			l.fail("$", RuleFile, "the registry holds only <id>.json entry files")
			continue
		}
		raw, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		if e := l.entry(name, raw); e != nil {
			entries = append(entries, e)
			raws[e.id] = raw
		}
	}
	if len(files) == 0 {
		l.file = "."
		l.fail("$", RuleFile, "the registry has no entries")
	}
	g := l.index(entries)
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	if g.doc, err = document(g.entries, raws); err != nil {
		return nil, err
	}
	return g, nil
}

// document builds the public form of the registry: {"entries": [...]}, each
// entry's reviewed data file compacted, in ID order.
func document(entries []*entry, raws map[string][]byte) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"entries":[`)
	for i, e := range entries {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := json.Compact(&b, raws[e.id]); err != nil {
			return nil, fmt.Errorf("registry entry %s: %w", e.id, err)
		}
	}
	b.WriteString("]}")
	return b.Bytes(), nil
}

// Document returns the registry as public data, the reviewed entry files
// themselves: {"entries": [<entry>, …]} in ID order (GET /v1/registry). The
// slice is the caller's own copy.
func (g *Registry) Document() []byte { return bytes.Clone(g.doc) }

// loader collects LoadErrors while decoding and checking entries.
type loader struct {
	file string
	errs []error
}

func (l *loader) fail(path, rule, msg string) {
	l.errs = append(l.errs, &LoadError{File: l.file, Path: path, Rule: rule, Msg: msg})
}

// index checks what spans entries — unique names and hosts; IDs are unique
// because each names its file — and builds the lookup maps.
func (l *loader) index(entries []*entry) *Registry {
	slices.SortFunc(entries, func(a, b *entry) int { return strings.Compare(a.id, b.id) })
	g := &Registry{
		entries:     entries,
		byName:      make(map[string]*entry),
		byHost:      make(map[string]*entry),
		byEndpoints: make(map[endpointPin]*entry),
		helpers:     make(map[string]string),
	}
	for _, e := range entries {
		l.file = e.file
		for _, n := range append([]string{e.displayName}, e.aliases...) {
			key := foldName(n)
			if other, ok := g.byName[key]; ok && other != e {
				l.fail("displayName", RuleNameDuplicate, "a display name or alias is also a name of entry "+other.id+" (names compare case-insensitively)")
				continue
			}
			g.byName[key] = e
		}
		for _, h := range e.hosts {
			if other, ok := g.byHost[h]; ok && other != e {
				l.fail("hosts", RuleHostDuplicate, "host "+h+" is also pinned by entry "+other.id)
				continue
			}
			g.byHost[h] = e
		}
		for _, o := range e.options {
			if o.base.Kind.IsOAuth() && o.base.Endpoints.Authorize != "" && o.base.Endpoints.Token != "" {
				g.byEndpoints[endpointPin{o.base.Endpoints.Authorize, o.base.Endpoints.Token}] = e
			}
		}
		if e.helper != nil {
			g.helpers[e.helper.ID+SidecarSuffix] = e.helper.ID
		}
	}
	return g
}

// foldName is the case-insensitive key of a provider name.
// Names are printable ASCII after requirement.Parse; strings.ToLower also
// folds what a requirement built past the parser might hold.
func foldName(s string) string { return strings.ToLower(s) }

// Entries returns a copy of every entry, sorted by ID: the pinned registry
// as public data (GET /v1/registry).
func (g *Registry) Entries() []Entry {
	out := make([]Entry, 0, len(g.entries))
	for _, e := range g.entries {
		out = append(out, e.export())
	}
	return out
}

// Lookup returns a copy of the entry with this ID.
func (g *Registry) Lookup(id string) (Entry, bool) {
	for _, e := range g.entries {
		if e.id == id {
			return e.export(), true
		}
	}
	return Entry{}, false
}
