package grants

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/requirement"
)

// Posture is how hard a review screen should look at a proposal:
// manual entry by the user, a strong field-by-field review, or the
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
	// Replaced is the local row an import replaced with this one (nil
	// when none, or when the row was written since): the review then
	// shows ReplacedDiff, the field-by-field change from that row to
	// this one.
	Replaced     *ReplacedRow
	ReplacedDiff []FieldChange
	// Token commits to what this review showed and approval would freeze
	// (reviewToken); approve and reapprove carry it back.
	Token string
}

// ReplacedRow is what an imported row replaced here: the local row's
// status (approved: it was a grant on this device), its approval time,
// version and ceiling, and whether the import wiped the slot's
// credentials because the rows differ.
type ReplacedRow struct {
	Status             Status
	GrantedAt          *time.Time
	RequirementVersion int64
	Hosts              []string
	CredentialsCleared bool
	ReplacedAt         time.Time
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
func (d *Proposers) Review(ctx context.Context, appID, slot string) (Review, error) {
	c, err := d.Connection(ctx, appID, slot)
	if err != nil {
		return Review{}, err
	}
	rv := Review{Connection: c}
	if c.PendingJSON == "" {
		if b, ok := d.borrowOf(c.Requirement); ok {
			rv.Borrowed, rv.Disclosure = true, b
		}
		rv.Posture = PostureOf(c, rv.Borrowed)
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
			return Review{}, Internal(d.log, "read staged origin", err)
		}
		if known {
			rv.Posture = PostureOf(Connection{Provenance: Provenance(origin.Provenance), Imported: c.Imported}, rv.Borrowed)
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
	family, owed := d.PairingOwed(c.Requirement, state, hasState)
	rv.PairingFamily, rv.PairingOwed = string(family), owed
	if c.Imported {
		if err := d.reviewReplaced(ctx, &rv); err != nil {
			return Review{}, err
		}
	}
	rv.Token = reviewToken(c)
	if c.PendingJSON != "" {
		rv.Diff, err = diffJSON(c.RequirementJSON, c.PendingJSON)
		if err != nil {
			return Review{}, Internal(d.log, "diff requirements", err)
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

// reviewReplaced adds to an imported row's review the local row the import
// replaced, and the diff from it.
func (d *Proposers) reviewReplaced(ctx context.Context, rv *Review) error {
	c := rv.Connection
	var (
		r  store.Replaced
		ok bool
	)
	err := d.store.View(ctx, func(tx *store.Tx) error {
		var err error
		r, ok, err = tx.ReplacedRow(c.AppID, c.Slot)
		return err
	})
	if err != nil {
		return Internal(d.log, "read replaced row", err)
	}
	if !ok {
		return nil
	}
	rv.Replaced = &ReplacedRow{
		Status: Status(r.Status), GrantedAt: r.GrantedAt, RequirementVersion: r.RequirementVersion,
		Hosts: decodeHosts(r.AllowedHosts), CredentialsCleared: r.CredentialsCleared, ReplacedAt: r.ReplacedAt,
	}
	if rv.ReplacedDiff, err = diffJSON(r.RequirementJSON, c.RequirementJSON); err != nil {
		return Internal(d.log, "diff replaced row", err)
	}
	return nil
}

// reviewToken commits to what a review of c shows and what approving it
// would freeze: the row's identity and status, its requirement_version and
// canonical requirement, the staged change (if any), provenance, the
// imported flag and tombstone, and the hosts approval or re-approval would
// freeze. approve and reapprove recompute it inside their transaction and
// refuse a mismatch (REVIEW_STALE).
//
// A plain SHA-256 is enough: the token grants nothing. Whoever sends it is
// already allowed to approve the row (a host that reaches the app, or the
// administrator) and can read the review, and so the token, at any time;
// what the token must do is commit, so that a row changed between review
// and approval no longer matches. Forging a token for the row as it is now
// is just reading the review, which an HMAC would not prevent either.
func reviewToken(c Connection) string {
	var freeze []string
	switch {
	case c.Status == StatusApproved && c.PendingJSON != "":
		if c.Pending != nil {
			freeze = requirement.DeriveAllowedHosts(c.Pending)
		}
	case c.Status == StatusApproved:
		freeze = c.AllowedHosts
	case c.Requirement != nil:
		freeze = requirement.DeriveAllowedHosts(c.Requirement)
	}
	h := sha256.New()
	// Length-prefixed fields: no two rows encode alike.
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("snugd review v1")
	field(c.AppID)
	field(c.Slot)
	field(string(c.Status))
	field(fmt.Sprint(c.RequirementVersion))
	field(c.RequirementJSON)
	field(c.PendingJSON)
	field(string(c.Provenance))
	field(fmt.Sprint(c.Imported, c.RevokedAt != nil))
	field(string(requirement.HostsJSON(freeze)))
	return "rv1_" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// sameToken compares review tokens in constant time.
func sameToken(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// postureOf reads the review posture from the row's provenance, but only
// as far as the row bears it out: "pinned" needs values that really are
// the registry's (borrowed), and "manual" a row the user entered here, not
// one an imported file says the user entered. Anything else is reviewed
// strongly, field by field.
func PostureOf(c Connection, borrowed bool) Posture {
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
// leaves by index: order is significant.
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
