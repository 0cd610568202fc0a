package grants

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/internal/ident"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
)

// The proposer channels. A running app has
// none: requirements arrive only from the user, from the builder assistant
// as a connection_requirement directive, or from a vouched starter install.
// Each channel computes provenance and confidence itself; a directive's
// claimed values are returned for display and read by nothing else. Every
// requirement passes the strict parser (the template lint included) and the
// registry's borrow ban before the proposer entry point writes it.
//
// userLayer is accepted only from registry substitution: every
// channel parses with the zero requirement.Options, so a userLayer arriving
// on any of them is refused whatever it says. No shipped registry entry
// synthesizes one; stored rows are re-read the same way.

// The confidence ladder: the rung a proposal resolved at, computed by snugd
// and display-only (never an approval input).
const (
	ConfidenceRegistry  = 1.0  // the registry pinned the values
	confidenceUserDocs  = 0.75 // the model read documentation the user supplied
	ConfidenceInference = 0.5  // the model inferred the values
)

// ProposeResult is what a proposal did.
type ProposeResult struct {
	Connection Connection
	// Staged is true when the row was approved and the proposal was staged
	// for re-approval instead of replacing it.
	Staged bool
	// Unchanged is true when the row was approved and the proposal is its
	// requirement already: nothing was staged, and a change staged before
	// was withdrawn.
	Unchanged bool
	// Borrowed is true when registry values replaced the declared ones;
	// Disclosure is the sentence a review screen shows beside them.
	Borrowed   bool
	Disclosure string
	EntryID    string
	// ClaimedProvenance and ClaimedConfidence are what a directive claimed:
	// display-only, never a gating input.
	ClaimedProvenance string
	ClaimedConfidence *float64
}

// StarterInstall is the install act of a starter: its install source and
// the SHA-256 (hex) of the pinned factory HTML and of the current HTML.
type StarterInstall struct {
	Source        string
	FactorySHA256 string
	CurrentSHA256 string
}

// ProposeUser is the user channel (Settings / connect CTA): the requirement
// is written to slot, or staged when slot is approved.
func (d *Proposers) ProposeUser(ctx context.Context, appID, slot string, raw []byte) (ProposeResult, error) {
	if err := CheckSlot(slot); err != nil {
		return ProposeResult{}, err
	}
	a, res, err := d.admitChannel(raw, ProvenanceUser, nil)
	if err != nil {
		return ProposeResult{}, err
	}
	if a.Req.Slot != slot {
		return ProposeResult{}, errcode.New(errcode.SlotMismatch, "the requirement's slot differs from the slot it is written to")
	}
	return d.proposeAdmitted(ctx, appID, a, res)
}

// directive is the wire shape of a connection_requirement directive.
type directive struct {
	V           json.RawMessage `json:"v"`
	Kind        string          `json:"kind"`
	Requirement json.RawMessage `json:"requirement"`
	Confidence  *float64        `json:"confidence"`
	Provenance  *string         `json:"provenance"`
}

// ProposeDirective is the assistant channel: a connection_requirement
// directive { v: 1, kind, requirement, confidence?, provenance? } from the
// build conversation. Provenance is computed from the channel and the rung
// the registry resolved: registry on a borrow hit, user_docs when the
// host says the user supplied the docs, inference otherwise.
func (d *Proposers) ProposeDirective(ctx context.Context, appID string, raw []byte, userDocs bool) (ProposeResult, error) {
	var dir directive
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&dir); err != nil || dec.More() {
		return ProposeResult{}, errcode.New(errcode.DirectiveInvalid, "the directive is not a JSON object of v, kind, requirement, confidence and provenance")
	}
	if string(dir.V) != "1" || dir.Kind != "connection_requirement" || len(dir.Requirement) == 0 {
		return ProposeResult{}, errcode.New(errcode.DirectiveInvalid, "the directive must carry v: 1, kind: connection_requirement and a requirement")
	}
	prov, conf := ProvenanceInference, ConfidenceInference
	if userDocs {
		prov, conf = ProvenanceUserDocs, confidenceUserDocs
	}
	a, res, err := d.admitChannel(dir.Requirement, prov, &conf)
	if err != nil {
		return ProposeResult{}, err
	}
	if res.Borrowed {
		c := ConfidenceRegistry
		a.provenance, a.confidence = ProvenanceRegistry, &c
	}
	out, err := d.proposeAdmitted(ctx, appID, a, res)
	if err != nil {
		return ProposeResult{}, err
	}
	if dir.Confidence != nil && !math.IsNaN(*dir.Confidence) && !math.IsInf(*dir.Confidence, 0) {
		out.ClaimedConfidence = dir.Confidence
	}
	if dir.Provenance != nil && validProvenance(Provenance(*dir.Provenance)) {
		out.ClaimedProvenance = *dir.Provenance
	}
	return out, nil
}

// InstallStarter is the install channel: the starter's own connection.json,
// vouched by the two-fact check (the install source resolves to a
// bundled starter AND both the factory and the current HTML match its
// bytes). An unvouched declaration is treated as absent: no row is
// written. The requirements proposed are the bundled ones, never bytes the
// caller sends.
func (d *Proposers) InstallStarter(ctx context.Context, appID string, in StarterInstall) ([]ProposeResult, error) {
	if err := CheckAppID(appID); err != nil {
		return nil, err
	}
	m, ok := d.starters.Vouch(in.Source, in.FactorySHA256, in.CurrentSHA256)
	if !ok {
		return nil, errcode.New(errcode.StarterNotVouched, "the install source or the installed HTML does not match a bundled starter; its declaration is treated as absent")
	}
	var out []ProposeResult
	for _, r := range m.Requirements {
		a, res, err := d.admitChannel([]byte(r.Canonical()), ProvenanceStarter, nil)
		if err != nil {
			return out, err
		}
		pr, err := d.proposeAdmitted(ctx, appID, a, res)
		if err != nil {
			return out, err
		}
		out = append(out, pr)
	}
	return out, nil
}

// PickOption proposes, on the user channel, the registry entry's
// alternative flow optionID for the row's current requirement (the
// pick is reviewed like any declared requirement).
func (d *Proposers) PickOption(ctx context.Context, appID, slot, optionID string) (ProposeResult, error) {
	c, err := d.Connection(ctx, appID, slot)
	if err != nil {
		return ProposeResult{}, err
	}
	if c.Requirement == nil {
		return ProposeResult{}, &ValidationError{Violations: c.Invalid}
	}
	res, err := d.registry.ResolveOption(c.Requirement, optionID)
	if err != nil {
		return ProposeResult{}, registryError(err)
	}
	a, err := Admit([]byte(res.Requirement.Canonical()), ProvenanceUser, nil)
	if err != nil {
		return ProposeResult{}, err
	}
	return d.proposeAdmitted(ctx, appID, a, res)
}

// admitChannel validates raw and applies the borrow ban: on a hit the
// registry's pinned values replace the declared ones (never merged) and the
// result is validated again.
func (d *Proposers) admitChannel(raw []byte, prov Provenance, conf *float64) (Admitted, registry.Resolution, error) {
	a, err := Admit(raw, prov, conf)
	if err != nil {
		return Admitted{}, registry.Resolution{}, err
	}
	res, err := d.registry.Resolve(a.Req)
	if err != nil {
		return Admitted{}, registry.Resolution{}, registryError(err)
	}
	if res.Borrowed {
		a.Req, a.Canonical = res.Requirement, res.Requirement.Canonical()
	}
	return a, res, nil
}

func (d *Proposers) proposeAdmitted(ctx context.Context, appID string, a Admitted, res registry.Resolution) (ProposeResult, error) {
	c, staged, err := d.Propose(ctx, appID, a)
	if err != nil {
		return ProposeResult{}, err
	}
	unchanged := c.Status == StatusApproved && !staged
	return ProposeResult{Connection: c, Staged: staged, Unchanged: unchanged, Borrowed: res.Borrowed, Disclosure: res.Disclosure, EntryID: res.EntryID}, nil
}

// registryError turns a refusal of the borrow ban into a validation error
// naming the rule; its text is the registry's fixed sentence.
func registryError(err error) error {
	return &ValidationError{Violations: []requirement.Violation{registryViolation(err)}}
}

func registryViolation(err error) requirement.Violation {
	var inv *registry.InvalidError
	rule := "registry.refused"
	switch {
	case errors.Is(err, registry.ErrConflict):
		rule = "registry.conflict"
	case errors.Is(err, registry.ErrLANAddress):
		rule = "registry.lan-address"
	case errors.As(err, &inv):
		rule = "registry.invalid"
	}
	return requirement.Violation{Path: "", Rule: rule, Message: err.Error()}
}

// borrowOf reports whether r carries the registry's pinned values, and the
// disclosure sentence to show beside them. A requirement that merely names
// or reaches a registry provider while carrying values of its own is no
// borrow: saying "these values came from the registry" beside it would
// vouch for hosts the registry never pinned.
func (d *Book) borrowOf(r *requirement.Requirement) (string, bool) {
	if r == nil {
		return "", false
	}
	res, err := d.registry.Resolve(r)
	if err != nil || !res.Borrowed || res.Requirement.Canonical() != r.Canonical() {
		return "", false
	}
	return res.Disclosure, true
}

// ruleRegistryNotPinned: a stored requirement names or reaches a registry
// provider but does not carry the values the borrow ban substitutes (it
// predates the entry or its pins, or storage was altered).
const ruleRegistryNotPinned = "registry.not-pinned"

// checkBorrowBan is re-approval's own hold of the borrow ban: a staged
// change is reachable without passing the stager (a forged pending column),
// so before its hosts are frozen it must be a requirement the ban would not
// change (nor refuse).
func (d *Book) checkBorrowBan(r *requirement.Requirement) error {
	res, err := d.registry.Resolve(r)
	if err != nil {
		return registryError(err)
	}
	if res.Borrowed && res.Requirement.Canonical() != r.Canonical() {
		return &ValidationError{Violations: []requirement.Violation{{Path: "", Rule: ruleRegistryNotPinned,
			Message: "the requirement names or reaches a provider of snugd's registry but does not carry its pinned values; propose it again"}}}
	}
	return nil
}

// reconsentRevision names the rules reconsentPins applies; bump it when
// they change, so the next start checks every row again under the new
// ones.
const reconsentRevision = "snugd pin re-consent 1"

// ReconsentDigest names the registry and the build a pass runs under:
// the registry's reviewed entry files, and build (BuildIdentity: the
// parser and Resolve that read them). Either changing is an upgrade,
// after which every row is checked again. An unidentified build ("")
// gets a digest no other start shares, so the pass runs.
func ReconsentDigest(reg *registry.Registry, build string) string {
	if build == "" {
		build = "unidentified " + ident.Random(16) // this start's alone: the pass runs
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\nbuild=%s\n", reconsentRevision, build)
	h.Write(reg.Document())
	return hex.EncodeToString(h.Sum(nil))
}

// BuildIdentity names the build bi describes: its main module's path and
// version and its VCS revision, when bi carries a revision of a tree
// with no local change (vcs.modified=false); "" when it does not (nil,
// built outside a checkout or with -buildvcs=false, as scripts/deb.sh
// allows, or from a modified tree). Two such builds may differ in
// Resolve while carrying the same build info, so an unidentified one
// must never let a start skip the pass.
func BuildIdentity(bi *debug.BuildInfo) string {
	if bi == nil {
		return ""
	}
	revision, clean := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			clean = s.Value == "false"
		}
	}
	if revision == "" || !clean {
		return ""
	}
	return bi.Main.Path + "@" + bi.Main.Version + " vcs.revision=" + revision
}

// ReconsentAtStart runs the pin re-consent pass unless the last completed
// one ran under this very registry and build (the record in snugd_meta;
// build is BuildIdentity's name for the running build, "" when it has
// none, and then the pass always runs): then no row can need it. Every writer resolves what it admits against
// the registry it runs: the proposer channels (admitChannel, the starter
// install, PickOption's ResolveOption), import (Resolve before a row
// lands; a restored grant is the local row unchanged), the LAN address
// (through ProposeUser) and the pass itself; approve and reapprove move
// nothing but what the borrow ban passes (checkBorrowBan), and revoke
// moves no requirement. Reconnect revives a requirement no pass checked
// while it was revoked, so it forgets the record. The record is written
// only after the pass's last write: a start that stops mid-pass leaves the
// old one, and the next start runs the pass again.
func (d *Proposers) ReconsentAtStart(ctx context.Context, build string) error {
	digest := ReconsentDigest(d.registry, build)
	rec, err := store.Read(ctx, d.store, (*store.Tx).ReconsentRecord)
	if err != nil {
		return Internal(d.log, "read the re-consent record", err)
	}
	if rec == digest {
		return nil
	}
	rows, total, err := d.reconsentCandidates(ctx)
	if err != nil {
		return Internal(d.log, "read connections for the pin re-consent", err)
	}
	left, err := d.reconsentPins(ctx, rows)
	if err != nil {
		return err
	}
	d.reconsentRows = total
	if left > 0 {
		// Not complete: the next start runs the pass again.
		d.log.Warn("pin re-consent pass left rows it could not rewrite as they are; the next start checks every row again", "rows", total, "left", left)
		return nil
	}
	if err := d.store.Update(ctx, func(tx *store.Tx) error { return tx.PutReconsentRecord(digest) }); err != nil {
		return Internal(d.log, "record the pin re-consent", err)
	}
	d.log.Info("pin re-consent pass done", "rows", total, "parsed", len(rows))
	return nil
}

// reconsentCandidates reads, in full and by app and slot, the rows the
// pass must check, and counts every row it looked at. One scan reads each
// row's status and requirement texts; a declared or approved row is a
// candidate unless the registry's pre-filter (Registry.MayTrigger) shows
// that neither its requirement nor its staged change can trigger an entry.
// That skip is sound: reconsentPins acts on a row only when
// Registry.Triggers hits its current requirement or its staged change
// parsed, and MayTrigger answers false only for text no parse of which
// triggers, whatever the text (canonical or written around the writers).
// At 100,000 rows that name no entry this is one scan, not 100,000 parses.
func (d *Proposers) reconsentCandidates(ctx context.Context) (rows []store.Connection, total int, err error) {
	type key struct{ app, slot string }
	var keys []key
	err = d.store.EachConnectionText(ctx, func(c *store.ConnectionText) error {
		total++
		switch string(c.Status) {
		case string(StatusDeclared), string(StatusApproved):
		default:
			return nil // reconsentPins skips it too
		}
		if d.registry.MayTrigger(c.RequirementJSON) || c.PendingRequirementJSON != nil && d.registry.MayTrigger(c.PendingRequirementJSON) {
			keys = append(keys, key{string(c.AppID), string(c.Slot)})
		}
		return nil
	})
	if err != nil || len(keys) == 0 {
		return nil, total, err
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(strings.Compare(a.app, b.app), strings.Compare(a.slot, b.slot)) })
	rows, err = store.Read(ctx, d.store, func(tx *store.Tx) ([]store.Connection, error) {
		out := make([]store.Connection, 0, len(keys))
		for _, k := range keys {
			c, err := tx.Connection(k.app, k.slot)
			if errors.Is(err, store.ErrNotFound) {
				continue // gone since the scan (nothing writes at start)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	})
	return rows, total, err
}

// reconsentPins brings every row that names or reaches a registry entry
// under the pins of the registry this snugd ships, at start (an upgrade can
// add an entry or move a pin):
//
//   - a declared row, which nobody has consented to yet, is rewritten with
//     the re-resolved requirement (its provenance and imported flag kept):
//     the borrow ban holds for it as it would for a fresh proposal;
//   - an approved row gets the re-resolution of its staged change, or of
//     its current requirement when none is staged, staged for re-approval:
//     a pin change always re-consents and never silently promotes.
//     The grant keeps serving what the user approved until then.
//
// A row the registry now refuses keeps what it has; re-approval and the
// review re-check it.
//
// rows are every stored row. Nothing parsed outlives its row: at 100,000
// rows, holding every parsed requirement to the end of the pass cost
// hundreds of MiB. What the pass learns of a requirement that needs
// nothing (it does not validate, or the registry borrows nothing for it)
// is remembered by its stored text, so a duplicate skips its parse.
func (d *Proposers) reconsentPins(ctx context.Context, rows []store.Connection) (left int, err error) {
	const (
		invalid = 1 // does not validate
		nothing = 2 // validates; the registry borrows nothing for it
	)
	memo := map[string]uint8{}
	parse := func(raw string) *requirement.Requirement {
		if memo[raw] == invalid {
			return nil
		}
		r, vs := parseStored(raw)
		if len(vs) > 0 {
			memo[raw] = invalid
			return nil
		}
		return r
	}
	for _, row := range rows {
		status := Status(row.Status)
		if status != StatusDeclared && status != StatusApproved {
			continue
		}
		raw := row.RequirementJSON
		current := memo[raw]
		if current == invalid {
			continue
		}
		var target *requirement.Requirement
		if status == StatusApproved && row.PendingRequirementJSON != nil {
			switch pending := *row.PendingRequirementJSON; memo[pending] {
			case nothing:
				continue
			case invalid:
			default:
				if current == 0 && parse(raw) == nil {
					continue // the current requirement must validate too
				}
				if p := parse(pending); p != nil {
					raw, target = pending, p
				}
			}
		}
		if target == nil {
			if memo[raw] == nothing {
				continue
			}
			if target = parse(raw); target == nil {
				continue
			}
		}
		var res registry.Resolution
		var err error
		if d.registry.Triggers(target) {
			res, err = d.registry.Resolve(target)
		}
		if err != nil || !res.Borrowed {
			memo[raw] = nothing
			continue
		}
		c := FromRow(row)
		canonical := res.Requirement.Canonical()
		a := Admitted{Req: res.Requirement, Canonical: canonical, provenance: c.Provenance, confidence: c.Confidence}
		switch {
		case c.Status == StatusDeclared:
			if canonical == c.RequirementJSON {
				continue
			}
			_, err = d.Write(ctx, c.AppID, c.Slot, func(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
				next, err := DeclaredRow(tx, c.AppID, cur, a)
				if err == nil && cur != nil {
					next.Imported = cur.Imported
				}
				return next, err
			})
		case canonical == c.PendingJSON || (c.PendingJSON == "" && canonical == c.RequirementJSON):
			continue
		default:
			_, err = d.StagePending(ctx, c.AppID, a)
		}
		if _, refused := errcode.CodeOf(err); refused {
			// A row no writer accepts (it can only have been written
			// around the writers) keeps what it has, and so does the rest
			// of the start: one such row must not keep snugd from
			// running. Its grant is what it was; review and re-approval
			// check it again.
			d.log.Warn("pin re-consent left a row as it is: the writer refused it", "app_id", c.AppID, "slot", c.Slot, "err", err)
			left++
			continue
		}
		if err != nil {
			return left, err
		}
		d.log.Info("registry pins changed: row re-resolved", "app_id", c.AppID, "slot", c.Slot, "status", c.Status, "entry", res.EntryID)
	}
	return left, nil
}

// RegistryDocument is the pinned provider registry as public data: the
// reviewed entry files (GET /v1/registry). It carries no credential.
func (d *Proposers) RegistryDocument() []byte { return d.registry.Document() }

// ReconsentRows reports how many rows the start's pin re-consent pass
// checked: 0 when the registry had not changed.
func (d *Proposers) ReconsentRows() int { return d.reconsentRows }
