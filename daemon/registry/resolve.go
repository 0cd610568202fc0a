package registry

import (
	"errors"
	"strings"

	"github.com/snug/snugd/daemon/requirement"
)

// Disclosure is the sentence a review screen shows beside a borrowed
// requirement (a borrow MUST be surfaced to the user).
const Disclosure = "these values came from snugd's registry, not from the app"

// Trigger says which borrow trigger hit. Both are checked on
// every requirement.
type Trigger uint8

// The two triggers.
const (
	// TriggerName: provider.name equals an entry's display name or one of
	// its aliases, case-insensitively.
	TriggerName Trigger = 1 << iota
	// TriggerHost: a host of the requirement's ceiling (declaredApiHosts,
	// endpoint and userLayer hosts, normalized) is a pinned host.
	TriggerHost
)

// String returns "name", "host", "name+host" or "none".
func (t Trigger) String() string {
	switch t {
	case TriggerName:
		return "name"
	case TriggerHost:
		return "host"
	case TriggerName | TriggerHost:
		return "name+host"
	}
	return "none"
}

// A Resolution is what the borrow ban made of a requirement.
type Resolution struct {
	// Requirement is the resolved requirement: the input itself when
	// nothing was borrowed, otherwise a new requirement holding the
	// registry's pinned values. It is always valid (requirement.Parse).
	Requirement *requirement.Requirement
	// Borrowed reports whether registry values replaced declared ones. A
	// review screen shows Disclosure beside a borrowed requirement, and the
	// writers record provenance "registry" for it.
	Borrowed bool
	// EntryID and OptionID name the entry and the auth option applied.
	EntryID  string
	OptionID string
	// Triggers are the triggers that hit.
	Triggers Trigger
	// Disclosure is the Disclosure sentence when Borrowed, "" otherwise.
	Disclosure string
}

// Errors of Resolve. Their texts are fixed sentences: none repeats a value
// of the requirement.
var (
	// ErrConflict: the name names one entry and a host belongs to
	// another, or two hosts belong to two entries. Such a requirement is
	// refused, never resolved.
	ErrConflict = errors.New("the requirement's name and hosts match two different registry entries; snugd will not choose between them")
	// ErrLANAddress: a LAN entry was borrowed but the declaration's
	// collected address is not one RFC-1918 IPv4 literal.
	ErrLANAddress = errors.New("the collected address of a LAN provider must be one private IPv4 address (10/8, 172.16/12 or 192.168.0.0/16)")
	// ErrNoEntry: ResolveOption was asked for an option of a requirement
	// that triggers no entry, or for an option the entry does not offer.
	ErrNoEntry = errors.New("the requirement does not match a registry entry offering that option")
)

// An InvalidError says the requirement Resolve would return does not pass
// requirement.Parse. Violations never carry values.
type InvalidError struct {
	Violations []requirement.Violation
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	b.WriteString("requirement is invalid")
	for i, v := range e.Violations {
		if i == 3 {
			b.WriteString("; …")
			break
		}
		b.WriteString("; ")
		b.WriteString(v.String())
	}
	return b.String()
}

// Resolve applies the borrow ban to r: when r names an entry
// (display name or alias, case-insensitively) or a host of its
// ceiling is one the entry pins — whatever r's kind — the entry's pinned
// values replace r's own. Nothing is merged: hosts, endpoints, the
// registration walkthrough, the provider block, the scopes (the entry's
// pin, or none), the kind, fields, templates, pkce, authorizeParams,
// userLayer and testRequest all come from the registry. Only the slot is
// kept, and for a LAN entry the collected address, whose class Resolve
// checks itself (IsRFC1918Literal, exactly one host) before the schema
// sees it again. The auth option applied is the one whose pinned field
// keys equal r's, or the entry's default.
//
// A borrowed result is validated by requirement.Parse of its canonical
// form with AllowUserLayer (the one caller allowed to set it: a registry
// entry may synthesize a userLayer). When nothing triggers, r is returned
// as it is, after the same check without AllowUserLayer, so a requirement
// built past the parser cannot slip through unchanged.
//
// Resolve refuses (ErrConflict) a requirement whose triggers hit two
// entries, refuses (ErrLANAddress) a LAN borrow whose collected address is
// off-class, and returns an *InvalidError when the result does not parse.
// It is safe for concurrent use.
func (g *Registry) Resolve(r *requirement.Requirement) (Resolution, error) {
	e, trig, err := g.match(r)
	if err != nil {
		return Resolution{}, err
	}
	if e == nil {
		if _, vs := requirement.Parse([]byte(r.Canonical()), requirement.Options{}); len(vs) > 0 {
			return Resolution{}, &InvalidError{Violations: vs}
		}
		return Resolution{Requirement: r}, nil
	}
	return g.borrow(r, e, e.options[e.chooseOption(r)], trig)
}

// ResolveOption is Resolve with the auth option picked by the user among
// the entry's alternative flows instead of matched by field keys.
// r must trigger the entry; the pick is then reviewed like any declared
// requirement. It returns ErrNoEntry when r triggers no entry or the entry
// has no option optionID.
func (g *Registry) ResolveOption(r *requirement.Requirement, optionID string) (Resolution, error) {
	e, trig, err := g.match(r)
	if err != nil {
		return Resolution{}, err
	}
	if e == nil {
		return Resolution{}, ErrNoEntry
	}
	for _, o := range e.options {
		if o.id == optionID {
			return g.borrow(r, e, o, trig)
		}
	}
	return Resolution{}, ErrNoEntry
}

// Triggers reports whether r names or reaches an entry (or two: Resolve's
// ErrConflict), without resolving it: a requirement that triggers nothing
// is never borrowed, so a caller that acts only on a borrow (the start's
// pin re-consent) may skip Resolve, and its re-parse, for it.
func (g *Registry) Triggers(r *requirement.Requirement) bool {
	e, _, err := g.match(r)
	return e != nil || err != nil
}

// match finds the entry r triggers, if any, and which triggers hit.
func (g *Registry) match(r *requirement.Requirement) (*entry, Trigger, error) {
	var found *entry
	var trig Trigger
	if e, ok := g.byName[foldName(r.Provider.Name)]; ok {
		found, trig = e, TriggerName
	}
	for _, h := range requirement.DeriveAllowedHosts(r) {
		e, ok := g.byHost[h]
		if !ok {
			continue
		}
		if found != nil && found != e {
			return nil, 0, ErrConflict
		}
		found, trig = e, trig|TriggerHost
	}
	return found, trig, nil
}

// chooseOption returns the index of the option whose pinned field keys
// equal r's, or the default.
func (e *entry) chooseOption(r *requirement.Requirement) int {
	if len(e.options) > 1 {
		set := fieldSet(r.FieldKeys())
		for i, o := range e.options {
			if o.fieldSet == set {
				return i
			}
		}
	}
	return e.defaultOption
}

// borrow builds the resolved requirement from option o of entry e.
func (g *Registry) borrow(r *requirement.Requirement, e *entry, o *option, trig Trigger) (Resolution, error) {
	res := *o.base // a shallow copy: only Slot and DeclaredAPIHosts change, and Parse copies the rest
	res.Slot = r.Slot
	if e.isLAN() {
		// §12.11 (b), the second seat: the registry has nothing to
		// substitute for the collected address, so it keeps it and checks
		// its class itself, whatever the schema said.
		switch {
		case len(r.DeclaredAPIHosts) == 0:
			res.DeclaredAPIHosts = nil // pre-collection: the empty ceiling refuses every host
		case len(r.DeclaredAPIHosts) == 1 && requirement.IsRFC1918Literal(r.DeclaredAPIHosts[0]):
			res.DeclaredAPIHosts = []string{r.DeclaredAPIHosts[0]}
		default:
			return Resolution{}, ErrLANAddress
		}
	}
	out, vs := requirement.Parse([]byte(res.Canonical()), requirement.Options{AllowUserLayer: true})
	if len(vs) > 0 {
		return Resolution{}, &InvalidError{Violations: vs}
	}
	return Resolution{
		Requirement: out,
		Borrowed:    true,
		EntryID:     e.id,
		OptionID:    o.id,
		Triggers:    trig,
		Disclosure:  Disclosure,
	}, nil
}
