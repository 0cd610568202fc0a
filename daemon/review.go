package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/requirement"
)

// Posture is how hard a review screen should look at a proposal (spec
// §12.1): manual entry by the user, a strong field-by-field review, or the
// registry's pinned values.
type Posture string

const (
	PostureManual Posture = "manual" // the user typed it
	PostureStrong Posture = "strong" // a model or a starter proposed it: review field by field
	PosturePinned Posture = "pinned" // the registry rung pinned the values
)

// Review is what a review or re-approval screen shows (API.md): the row,
// the field-by-field diff current → pending, the hosts approval would
// freeze, scopes verbatim, plain-text instructions, the console URL with
// its host, provenance and posture, and the borrow disclosure. Posture and
// the borrow describe what is being decided: the staged change on a
// re-approval (by the channel it was staged from), the requirement
// otherwise.
type Review struct {
	Connection   Connection
	Posture      Posture
	Borrowed     bool
	Disclosure   string // fixed sentence shown when Borrowed
	Diff         []FieldChange
	Hosts        []string // approved: the frozen ceiling; declared: what approval freezes
	PendingHosts []string // what re-approval would freeze; nil without a staged change
	Scopes       []string
	Pending      []string // the staged change's scopes; nil without one
	Instructions []string // plain text, in order: render as a numbered list, never as HTML or links
	ConsoleURL   string
	ConsoleHost  string // shown in full beside ConsoleURL
	// PairingFamily is the registry's pairing family for the row ("" when
	// none); PairingOwed is true while the slot lacks that family's verify
	// marker.
	PairingFamily string
	PairingOwed   bool
}

// FieldChange is one leaf of the requirement that differs between the
// current and the staged requirement. Old and New are canonical JSON
// values; nil means absent.
type FieldChange struct {
	Path string
	Old  *string
	New  *string
}

// Review returns the review data of (appID, slot).
func (d *Daemon) Review(ctx context.Context, appID, slot string) (Review, error) {
	c, err := d.Connection(ctx, appID, slot)
	if err != nil {
		return Review{}, err
	}
	rv := Review{Connection: c}
	if c.PendingJSON == "" {
		if b, ok := d.borrowOf(c.Requirement); ok {
			rv.Borrowed, rv.Disclosure = true, b
		}
		rv.Posture = postureOf(c, rv.Borrowed)
	} else {
		// A re-approval decides on the staged change, which may have come
		// from another channel than the row: the posture and the borrow
		// are the change's, and a change whose channel is not on record
		// is reviewed strongly.
		if b, ok := d.borrowOf(c.Pending); ok {
			rv.Borrowed, rv.Disclosure = true, b
		}
		rv.Posture = PostureStrong
		var (
			origin store.StagedOrigin
			known  bool
		)
		err := d.store.View(ctx, func(tx *store.Tx) error {
			var err error
			origin, known, err = tx.StagedOrigin(appID, slot, c.PendingJSON)
			return err
		})
		if err != nil {
			return Review{}, d.internal("read staged origin", err)
		}
		if known {
			rv.Posture = postureOf(Connection{Provenance: Provenance(origin.Provenance), Imported: c.Imported}, rv.Borrowed)
		}
	}
	switch c.Status {
	case StatusApproved:
		rv.Hosts = c.AllowedHosts
	default:
		if c.Requirement != nil {
			rv.Hosts = requirement.DeriveAllowedHosts(c.Requirement)
		}
	}
	if r := c.Requirement; r != nil {
		rv.Scopes = r.Scopes
		rv.Instructions = r.Registration.Instructions
		rv.ConsoleURL = r.Registration.ConsoleURL
		if u, err := url.Parse(r.Registration.ConsoleURL); err == nil && r.Registration.ConsoleURL != "" {
			rv.ConsoleHost = u.Host
		}
	}
	state, hasState, err := d.ConnectionState(ctx, appID, slot)
	if err != nil {
		return Review{}, err
	}
	family, owed := d.pairingOwed(c.Requirement, state, hasState)
	rv.PairingFamily, rv.PairingOwed = string(family), owed
	if c.PendingJSON != "" {
		rv.Diff, err = diffJSON(c.RequirementJSON, c.PendingJSON)
		if err != nil {
			return Review{}, d.internal("diff requirements", err)
		}
		if c.Pending != nil {
			rv.PendingHosts = requirement.DeriveAllowedHosts(c.Pending)
			rv.Pending = c.Pending.Scopes
			if rv.Pending == nil {
				rv.Pending = []string{}
			}
		}
	}
	return rv, nil
}

// postureOf reads the review posture from the row's provenance, but only
// as far as the row bears it out: "pinned" needs values that really are
// the registry's (borrowed), and "manual" a row the user entered here, not
// one an imported file says the user entered. Anything else is reviewed
// strongly, field by field.
func postureOf(c Connection, borrowed bool) Posture {
	switch {
	case c.Provenance == ProvenanceUser && !c.Imported:
		return PostureManual
	case c.Provenance == ProvenanceRegistry && borrowed:
		return PosturePinned
	default:
		return PostureStrong
	}
}

// diffJSON compares two JSON documents leaf by leaf. Array elements are
// leaves by index: order is significant (§12.3).
func diffJSON(oldJSON, newJSON string) ([]FieldChange, error) {
	oldLeaves, err := leaves(oldJSON)
	if err != nil {
		return nil, err
	}
	newLeaves, err := leaves(newJSON)
	if err != nil {
		return nil, err
	}
	paths := map[string]bool{}
	for p := range oldLeaves {
		paths[p] = true
	}
	for p := range newLeaves {
		paths[p] = true
	}
	var out []FieldChange
	for p := range paths {
		o, inOld := oldLeaves[p]
		n, inNew := newLeaves[p]
		if inOld && inNew && o == n {
			continue
		}
		fc := FieldChange{Path: p}
		if inOld {
			fc.Old = &o
		}
		if inNew {
			fc.New = &n
		}
		out = append(out, fc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// leaves flattens a JSON document into path → canonical JSON of each
// scalar, empty object or empty array.
func leaves(doc string) (map[string]string, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	out := map[string]string{}
	var walk func(path string, v any) error
	walk = func(path string, v any) error {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				out[path] = "{}"
			}
			for k, e := range t {
				p := k
				if path != "" {
					p = path + "." + k
				}
				if err := walk(p, e); err != nil {
					return err
				}
			}
		case []any:
			if len(t) == 0 {
				out[path] = "[]"
			}
			for i, e := range t {
				if err := walk(fmt.Sprintf("%s[%d]", path, i), e); err != nil {
					return err
				}
			}
		default:
			b, err := json.Marshal(t)
			if err != nil {
				return err
			}
			out[path] = string(b)
		}
		return nil
	}
	return out, walk("", v)
}
