package grants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/internal/ident"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/requirement"
)

// Status is a connection row's status: exactly three values.
// "Needs re-approval" is derived (Connection.NeedsReapproval), never a
// fourth status. The values are declared once, as the store's
// (store.Status), and named here.
type Status string

const (
	StatusDeclared = Status(store.StatusDeclared)
	StatusApproved = Status(store.StatusApproved)
	StatusRevoked  = Status(store.StatusRevoked)
)

// Provenance says which channel proposed a requirement.
// The values are declared once, as the store's (store.Provenance).
type Provenance string

const (
	ProvenanceRegistry  = Provenance(store.ProvenanceRegistry)
	ProvenanceInference = Provenance(store.ProvenanceInference)
	ProvenanceUserDocs  = Provenance(store.ProvenanceUserDocs)
	ProvenanceStarter   = Provenance(store.ProvenanceStarter)
	ProvenanceUser      = Provenance(store.ProvenanceUser)
)

// MaxSlotsPerApp is AUTH_MAX_SLOTS_PER_APP: every row of an app
// counts, revoked tombstones included; replacing an existing slot does not.
const MaxSlotsPerApp = 8

// Connection is one connection row as snugd reads it: the grant columns of
// the user DB and the parsed requirement. Requirement is nil when the stored
// requirement_json no longer validates (Invalid says why); such a row
// grants nothing.
type Connection struct {
	AppID              string
	Slot               string
	Status             Status
	Requirement        *requirement.Requirement
	RequirementJSON    string
	Pending            *requirement.Requirement // the staged change, nil when none (or invalid)
	PendingJSON        string                   // "" when none
	RequirementVersion int64
	Provenance         Provenance
	Confidence         *float64 // display-only, never an approval input
	Imported           bool
	AllowedHosts       []string // approved: the frozen ceiling; declared: the hosts asked for
	ApprovedAt         *time.Time
	RevokedAt          *time.Time // the tombstone; survives reconnect
	CreatedAt          time.Time
	UpdatedAt          time.Time
	Invalid            []requirement.Violation
	// Borrowed reports whether the stored requirement is exactly the
	// registry's pinned values for its provider: disclose it.
	Borrowed bool
}

// NeedsReapproval reports whether an approved row has a staged change:
// status approved and a pending requirement, derived and never stored.
func (c Connection) NeedsReapproval() bool {
	return c.Status == StatusApproved && c.PendingJSON != ""
}

// ValidationError is a requirement that fails validation, with every
// violation (never only the first).
type ValidationError struct {
	Violations []requirement.Violation
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("requirement invalid: %d violation(s)", len(e.Violations))
}

// ErrorCode reports REQUIREMENT_INVALID.
func (e *ValidationError) ErrorCode() errcode.Code { return errcode.RequirementInvalid }

// admitted is a requirement that passed validation on some channel (and the
// registry's borrow ban, when one applies). Only admit makes one, so the
// writers can take nothing unvalidated.
type Admitted struct {
	Req        *requirement.Requirement
	Canonical  string
	provenance Provenance
	confidence *float64
}

// admit validates a requirement arriving on a proposer channel. The lint of
// §12.8 is part of requirement.Parse, so it runs before anything is stored.
func Admit(raw []byte, prov Provenance, confidence *float64) (Admitted, error) {
	r, vs := requirement.Parse(raw, requirement.Options{})
	if len(vs) > 0 {
		return Admitted{}, &ValidationError{Violations: vs}
	}
	return Admitted{Req: r, Canonical: r.Canonical(), provenance: prov, confidence: confidence}, nil
}

// parseStored re-validates requirement JSON read back from storage, which
// may have been forged: every writer and the index re-read it through the
// same strict parser instead of trusting the column.
func parseStored(raw string) (*requirement.Requirement, []requirement.Violation) {
	return requirement.Parse([]byte(raw), requirement.Options{})
}

// checkAppID refuses an app identity that breaks the app-id rule
// (ident.CheckAppID) as a bad request, here rather than deep in storage.
func CheckAppID(appID string) error {
	if err := ident.CheckAppID(appID); err != nil {
		return errcode.New(errcode.BadRequest, err.Error())
	}
	return nil
}

func CheckSlot(slot string) error {
	if !requirement.ValidSlot(slot) {
		return errcode.New(errcode.BadRequest, "slot must match "+requirement.SlotPattern)
	}
	return nil
}

// Connections returns every row of appID, in slot order.
func (d *Book) Connections(ctx context.Context, appID string) ([]Connection, error) {
	if err := CheckAppID(appID); err != nil {
		return nil, err
	}
	var rows []store.Connection
	err := d.store.View(ctx, func(tx *store.Tx) error {
		var err error
		rows, err = tx.Connections(appID)
		return err
	})
	if err != nil {
		return nil, Internal(d.log, "list connections", err)
	}
	out := make([]Connection, len(rows))
	for i, row := range rows {
		out[i] = d.View(row)
	}
	return out, nil
}

// Connection returns the row (appID, slot), or CONNECTION_NOT_FOUND.
func (d *Book) Connection(ctx context.Context, appID, slot string) (Connection, error) {
	if err := CheckAppID(appID); err != nil {
		return Connection{}, err
	}
	if err := CheckSlot(slot); err != nil {
		return Connection{}, err
	}
	var row store.Connection
	err := d.store.View(ctx, func(tx *store.Tx) error {
		var err error
		row, err = tx.Connection(appID, slot)
		return err
	})
	if err != nil {
		return Connection{}, RowError(d.log, "read connection", err)
	}
	return d.View(row), nil
}

// view is the row as the API shows it: fromRow plus the borrow disclosure.
func (d *Book) View(row store.Connection) Connection {
	c := FromRow(row)
	_, c.Borrowed = d.borrowOf(c.Requirement)
	return c
}

func FromRow(row store.Connection) Connection {
	c := Connection{
		AppID:              row.AppID,
		Slot:               row.Slot,
		Status:             Status(row.Status),
		RequirementJSON:    row.RequirementJSON,
		RequirementVersion: row.RequirementVersion,
		Provenance:         Provenance(row.Provenance),
		Confidence:         row.Confidence,
		Imported:           row.Imported,
		ApprovedAt:         row.ApprovedAt,
		RevokedAt:          row.RevokedAt,
		CreatedAt:          row.CreatedAt,
		UpdatedAt:          row.UpdatedAt,
	}
	c.Requirement, c.Invalid = parseStored(row.RequirementJSON)
	if row.PendingRequirementJSON != nil {
		c.PendingJSON = *row.PendingRequirementJSON
		if p, vs := parseStored(c.PendingJSON); len(vs) == 0 {
			c.Pending = p
		}
	}
	c.AllowedHosts = decodeHosts(row.AllowedHosts)
	return c
}

// decodeHosts reads an allowed_hosts column. A column that is not a JSON
// array of strings reads as the empty ceiling, which refuses every host.
func decodeHosts(col string) []string {
	if hosts, ok := DecodeHostsFast(col); ok {
		return hosts
	}
	var hosts []string
	if err := json.Unmarshal([]byte(col), &hosts); err != nil || hosts == nil {
		return []string{}
	}
	return hosts
}

// decodeHostsFast reads the column as the writers store it (HostsJSON:
// ["a","b"], printable ASCII, no escape, no space) without encoding/json,
// which was most of a 100,000-row start's index callback; any other text
// is left to json.Unmarshal (ok false). What it accepts, json.Unmarshal
// reads to the same strings (FuzzDecodeHosts).
func DecodeHostsFast(col string) ([]string, bool) {
	if len(col) < 2 || col[0] != '[' || col[len(col)-1] != ']' {
		return nil, false
	}
	body := col[1 : len(col)-1]
	if body == "" {
		return []string{}, true
	}
	for i := 0; i < len(body); i++ {
		if b := body[i]; b < 0x20 || b >= 0x7f || b == '\\' {
			return nil, false
		}
	}
	hosts := make([]string, 0, strings.Count(body, ",")+1)
	for item := range strings.SplitSeq(body, ",") {
		if len(item) < 2 || item[0] != '"' || item[len(item)-1] != '"' || strings.IndexByte(item[1:len(item)-1], '"') >= 0 {
			return nil, false
		}
		hosts = append(hosts, item[1:len(item)-1])
	}
	return hosts, true
}

// The writers, plus reconnect. Each is the sole
// legal author of one transition and is legal only on its stated status;
// each refusal carries its own code. Every writer runs in one transaction
// under writeMu and republishes the app's grant index after it commits.

// errWrongStatus builds a writer's refusal.
func errWrongStatus(code errcode.Code, msg string) error { return errcode.New(code, msg) }

// declaredRow is putDeclaredConnection: legal on an absent or declared
// row; it inserts or replaces a declared row. It refuses an approved row
// (a proposal stages instead), a revoked row (explicit reconnect only) and
// a new slot over the cap. propose and the registry refresh call it.
func DeclaredRow(tx *store.Tx, appID string, cur *store.Connection, a Admitted) (*store.Connection, error) {
	if cur != nil {
		switch Status(cur.Status) {
		case StatusApproved:
			return nil, errWrongStatus(errcode.ConnectionApproved, "the connection is approved: a changed requirement is staged for re-approval instead")
		case StatusRevoked:
			return nil, errWrongStatus(errcode.ConnectionRevoked, "the connection was revoked: only an explicit reconnect revives it")
		}
	} else {
		n, err := tx.CountConnections(appID)
		if err != nil {
			return nil, err
		}
		if n >= MaxSlotsPerApp {
			return nil, errWrongStatus(errcode.SlotCapReached, fmt.Sprintf("the app already has %d connections (revoked ones count)", MaxSlotsPerApp))
		}
	}
	row := store.Connection{
		AppID:              appID,
		Slot:               a.Req.Slot,
		RequirementJSON:    a.Canonical,
		RequirementVersion: 1,
		Provenance:         store.Provenance(a.provenance),
		Confidence:         a.confidence,
		Status:             store.StatusDeclared,
		// A declared row carries the hosts its requirement asks for;
		// only approval freezes them into a ceiling (re-derived then).
		AllowedHosts: requirement.HostsJSON(requirement.DeriveAllowedHosts(a.Req)),
	}
	if cur != nil {
		row.CreatedAt = cur.CreatedAt
		row.RevokedAt = cur.RevokedAt // a reconnected row keeps its tombstone
		row.RequirementVersion = nextVersion(cur.RequirementVersion, cur.RequirementJSON, a.Canonical)
	}
	return &row, nil
}

// nextVersion bumps requirement_version when the canonical form changes
// (§12.3): canonical forms are compared as exact strings.
func nextVersion(version int64, oldCanonical, newCanonical string) int64 {
	if oldCanonical == newCanonical {
		return version
	}
	return version + 1
}

// stagePending is stagePendingRequirement: legal on an approved row; writes
// pending_requirement_json only. The grant keeps serving requirement_json
// and its frozen hosts until reapprove. Staging the current requirement
// itself clears the staged change: there is nothing left to approve.
func (d *Book) StagePending(ctx context.Context, appID string, a Admitted) (Connection, error) {
	return d.Write(ctx, appID, a.Req.Slot, func(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
		return stagedRow(tx, cur, a)
	})
}

func stagedRow(tx *store.Tx, cur *store.Connection, a Admitted) (*store.Connection, error) {
	if cur == nil {
		return nil, errcode.New(errcode.ConnectionNotFound, "no connection in that slot")
	}
	if Status(cur.Status) != StatusApproved {
		return nil, errWrongStatus(errcode.ConnectionNotApproved, "only an approved connection can stage a change")
	}
	row := *cur
	row.PendingRequirementJSON = nil
	if a.Canonical != cur.RequirementJSON {
		pending := a.Canonical
		row.PendingRequirementJSON = &pending
		// The row's provenance describes requirement_json; the change's
		// own channel is what its re-approval is reviewed by.
		if err := tx.PutStagedOrigin(cur.AppID, cur.Slot, pending, store.StagedOrigin{Provenance: store.Provenance(a.provenance), Confidence: a.confidence}); err != nil {
			return nil, err
		}
	}
	return &row, nil
}

// propose is the proposers' entry point: a write aimed at an
// absent or declared row puts it, one aimed at an approved row stages
// instead, and one aimed at a revoked row is refused outright. The status
// is read and acted on in one transaction. It reports whether it staged a
// change: not when the proposal is the approved row's requirement itself.
func (d *Book) Propose(ctx context.Context, appID string, a Admitted) (Connection, bool, error) {
	staged := false
	c, err := d.Write(ctx, appID, a.Req.Slot, func(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
		if cur != nil && Status(cur.Status) == StatusApproved {
			row, err := stagedRow(tx, cur, a)
			// Proposing an approved row's own requirement stages nothing
			// (and withdraws a change staged before).
			staged = err == nil && row.PendingRequirementJSON != nil
			return row, err
		}
		return DeclaredRow(tx, appID, cur, a)
	})
	return c, staged, err
}

// Approve is approveConnection: legal only on a declared row. It freezes
// allowed_hosts from requirement_json — never from a pending column storage
// may have forged — stamps approved_at, sets status approved and clears the
// imported flag. A stored requirement that no longer validates is
// refused.
//
// Approve binds to nothing a person saw: it is for in-process callers. The
// API approves only through ApproveReviewed.
func (d *Book) Approve(ctx context.Context, appID, slot string) (Connection, error) {
	return d.Write(ctx, appID, slot, journaled(ctx, journal.ActApprove, d.approveRow))
}

// ApproveReviewed is Approve bound to the review a person saw: token is
// that review's ReviewToken. When the row changed since (a replaced
// declared row, a re-staged change, another status), the answer is
// REVIEW_STALE and nothing is written (no path widens a host
// ceiling without a human seeing the diff).
func (d *Book) ApproveReviewed(ctx context.Context, appID, slot, token string) (Connection, error) {
	return d.Write(ctx, appID, slot, journaled(ctx, journal.ActApprove, boundTo(token, d.approveRow)))
}

func (d *Book) approveRow(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
	if cur == nil {
		return nil, errcode.New(errcode.ConnectionNotFound, "no connection in that slot")
	}
	if Status(cur.Status) != StatusDeclared {
		return nil, errWrongStatus(errcode.ConnectionNotDeclared, "only a declared connection can be approved")
	}
	r, vs := parseStored(cur.RequirementJSON)
	if len(vs) > 0 {
		return nil, &ValidationError{Violations: vs}
	}
	// Every channel and import apply the borrow ban; a row that still
	// names or reaches a registry provider without its pinned values
	// came in past them (forged storage) and freezes nothing.
	if err := d.checkBorrowBan(r); err != nil {
		return nil, err
	}
	now := tx.Now()
	row := *cur
	row.Status = store.StatusApproved
	row.AllowedHosts = requirement.HostsJSON(requirement.DeriveAllowedHosts(r))
	row.ApprovedAt = &now
	row.PendingRequirementJSON = nil
	row.Imported = false
	return &row, nil
}

// Reapprove is reapproveConnection: legal only on an approved row with a
// staged change. It re-validates the pending requirement (reachable without
// passing the stager) — the schema and the registry's borrow ban —
// promotes it (with the provenance it was staged with) to requirement_json,
// re-freezes the hosts from it and clears the pending column.
//
// Like Approve, Reapprove is for in-process callers; the API uses
// ReapproveReviewed.
func (d *Book) Reapprove(ctx context.Context, appID, slot string) (Connection, error) {
	return d.Write(ctx, appID, slot, journaled(ctx, journal.ActReapprove, d.reapproveRow))
}

// ReapproveReviewed is Reapprove bound to the review a person saw, as
// ApproveReviewed is: a change re-staged after its diff was shown is
// REVIEW_STALE, and nothing is written.
func (d *Book) ReapproveReviewed(ctx context.Context, appID, slot, token string) (Connection, error) {
	return d.Write(ctx, appID, slot, journaled(ctx, journal.ActReapprove, boundTo(token, d.reapproveRow)))
}

func (d *Book) reapproveRow(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
	if cur == nil {
		return nil, errcode.New(errcode.ConnectionNotFound, "no connection in that slot")
	}
	if Status(cur.Status) != StatusApproved {
		return nil, errWrongStatus(errcode.ConnectionNotApproved, "only an approved connection can be re-approved")
	}
	if cur.PendingRequirementJSON == nil {
		return nil, errWrongStatus(errcode.NoPendingChange, "the connection has no staged change to approve")
	}
	r, vs := parseStored(*cur.PendingRequirementJSON)
	if len(vs) > 0 {
		return nil, &ValidationError{Violations: vs}
	}
	if r.Slot != cur.Slot {
		return nil, errcode.New(errcode.SlotMismatch, "the staged requirement names another slot")
	}
	if err := d.checkBorrowBan(r); err != nil {
		return nil, err
	}
	canonical := r.Canonical()
	now := tx.Now()
	row := *cur
	// The promoted requirement brings its channel along.
	if o, ok, err := tx.StagedOrigin(cur.AppID, cur.Slot, *cur.PendingRequirementJSON); err != nil {
		return nil, err
	} else if ok {
		row.Provenance, row.Confidence = o.Provenance, o.Confidence
	}
	row.RequirementVersion = nextVersion(cur.RequirementVersion, cur.RequirementJSON, canonical)
	row.RequirementJSON = canonical
	row.PendingRequirementJSON = nil
	row.AllowedHosts = requirement.HostsJSON(requirement.DeriveAllowedHosts(r))
	row.ApprovedAt = &now
	return &row, nil
}

// boundTo wraps a writer's decision so that it runs only on the row the
// review with token showed: read in the writer's own transaction, so
// nothing can land between the check and the write.
func boundTo(token string, decide func(*store.Tx, *store.Connection) (*store.Connection, error)) func(*store.Tx, *store.Connection) (*store.Connection, error) {
	return func(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
		// The writer's own refusals first (no row, the wrong status, a
		// requirement that no longer validates): they say more than a
		// stale token would. decide writes nothing; its row is used only
		// once the token matches.
		next, err := decide(tx, cur)
		if err != nil {
			return nil, err
		}
		if token == "" {
			return nil, errcode.New(errcode.BadRequest, "reviewToken is required: read the review (GET …/review) and send its reviewToken")
		}
		if !sameToken(token, reviewToken(FromRow(*cur))) {
			return nil, errcode.New(errcode.ReviewStale, "the connection changed since it was reviewed: review it again")
		}
		return next, nil
	}
}

// Revoke is revokeConnection: legal only on an approved row. It sets status
// revoked, stamps revoked_at, keeps the row as a tombstone and wipes the
// slot's credential slice auth:<appId>:<slot>:* in the same transaction.
func (d *Book) Revoke(ctx context.Context, appID, slot string) (Connection, error) {
	c, _, err := d.RevokeReported(ctx, appID, slot)
	return c, err
}

// RevokeReported is Revoke, first running the revoke hooks the pairing
// families registered (a linked device forgets its session, an OAuth
// slot's tokens are revoked at the provider): best effort, reported,
// never blocking the wipe.
func (d *Book) RevokeReported(ctx context.Context, appID, slot string) (Connection, RevokeReport, error) {
	var rep RevokeReport
	for _, h := range d.revokeHooks {
		if r := h(ctx, appID, slot); r.Outcome != "" && rep.Remote.Outcome == "" {
			rep.Remote = r
		}
	}
	c, err := d.revokeRow(ctx, appID, slot)
	return c, rep, err
}

func (d *Book) revokeRow(ctx context.Context, appID, slot string) (Connection, error) {
	return d.Write(ctx, appID, slot, journaled(ctx, journal.ActRevoke, func(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
		if cur == nil {
			return nil, errcode.New(errcode.ConnectionNotFound, "no connection in that slot")
		}
		if Status(cur.Status) != StatusApproved {
			return nil, errWrongStatus(errcode.ConnectionNotApproved, "only an approved connection can be revoked")
		}
		if _, err := tx.DeleteSlotSecrets(appID, slot); err != nil {
			return nil, err
		}
		now := tx.Now()
		row := *cur
		row.Status = store.StatusRevoked
		row.RevokedAt = &now
		row.PendingRequirementJSON = nil
		return &row, nil
	}))
}

// Reconnect is the sixth, user-only act: a revoked row becomes
// declared again, keeping its requirement and its revoked_at tombstone, which
// review discloses. It grants nothing: the row needs approval again.
func (d *Book) Reconnect(ctx context.Context, appID, slot string) (Connection, error) {
	return d.Write(ctx, appID, slot, journaled(ctx, journal.ActReconnect, func(tx *store.Tx, cur *store.Connection) (*store.Connection, error) {
		if cur == nil {
			return nil, errcode.New(errcode.ConnectionNotFound, "no connection in that slot")
		}
		if Status(cur.Status) != StatusRevoked {
			return nil, errWrongStatus(errcode.ConnectionNotRevoked, "only a revoked connection can be reconnected")
		}
		// No pin re-consent pass checks a revoked row: the requirement
		// revived here may predate the registry, so the next start
		// checks every row again (reconsentAtStart).
		if err := tx.ForgetReconsentRecord(); err != nil {
			return nil, err
		}
		row := *cur
		row.Status = store.StatusDeclared
		row.ApprovedAt = nil
		row.AllowedHosts = "[]"
		if r, vs := parseStored(cur.RequirementJSON); len(vs) == 0 {
			row.AllowedHosts = requirement.HostsJSON(requirement.DeriveAllowedHosts(r))
		}
		return &row, nil
	}))
}

// write runs one writer: it reads the current row (nil when absent), lets
// decide compute the new row (or refuse), upserts it, rebuilds the app's
// index entry from the committed rows and, after the commit, publishes it
// with a connection-changed hint.
func (d *Book) Write(ctx context.Context, appID, slot string, decide func(*store.Tx, *store.Connection) (*store.Connection, error)) (Connection, error) {
	if err := CheckAppID(appID); err != nil {
		return Connection{}, err
	}
	if err := CheckSlot(slot); err != nil {
		return Connection{}, err
	}
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	var (
		stored store.Connection
		app    *AppGrants
	)
	err := d.store.Update(ctx, func(tx *store.Tx) error {
		var cur *store.Connection
		row, err := tx.Connection(appID, slot)
		switch {
		case err == nil:
			cur = &row
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if err := claimOnWrite(ctx, tx, appID); err != nil {
			return err
		}
		next, err := decide(tx, cur)
		if err != nil {
			return err
		}
		// What an import replaced describes the imported row only.
		if !next.Imported {
			if err := tx.DeleteReplaced(appID, slot); err != nil {
				return err
			}
		}
		if stored, err = tx.UpsertConnection(*next); err != nil {
			return err
		}
		if next.PendingRequirementJSON == nil {
			if err := tx.DeleteStagedOrigin(appID, slot); err != nil {
				return err
			}
		}
		rows, err := tx.Connections(appID)
		if err != nil {
			return err
		}
		app = BuildAppGrants(rows)
		return nil
	})
	if err != nil {
		return Connection{}, RowError(d.log, "write connection", err)
	}
	d.publishApp(appID, app)
	d.ConnectionChanged(appID, slot)
	return d.View(stored), nil
}

// rowError passes coded errors through and turns store failures into codes.
func RowError(log *slog.Logger, op string, err error) error {
	if _, ok := errcode.CodeOf(err); ok {
		return err
	}
	if errors.Is(err, store.ErrNotFound) {
		return errcode.New(errcode.ConnectionNotFound, "no connection in that slot")
	}
	return Internal(log, op, err)
}

// internal logs err (which never carries a credential value: the store's
// errors name keys, never values) and returns a bare INTERNAL error.
func Internal(log *slog.Logger, op string, err error) error {
	log.Error(op, "err", err)
	if errors.Is(err, store.ErrStorageFull) {
		// A full or read-only disk refused the write: nothing changed,
		// and the same request succeeds once space returns.
		return errcode.Wrap(errcode.StorageFull, "the disk holding snugd's data is full; nothing was changed", err)
	}
	return errcode.Wrap(errcode.Internal, op+" failed", err)
}

// passCoded passes coded errors through and turns the rest into INTERNAL.
func passCoded(log *slog.Logger, op string, err error) error {
	if _, ok := errcode.CodeOf(err); ok {
		return err
	}
	return Internal(log, op, err)
}

// connectionChanged runs after every committed connection or credential
// write. It clears the credential cache, the app's "allow for this session"
// memory and disarms a
// standing approval armed on the slot (its frozen scope described the row
// as it was), then rings the doorbell.
func (d *Book) ConnectionChanged(appID, slot string) {
	d.secretCache.Forget()
	for _, h := range d.changeHooks {
		h(appID, slot)
	}
	d.hints.Publish(hints.Hint{Type: hints.ConnectionChanged, AppID: appID, Slot: slot})
}

// RevokeReport is what a revocation's remote side did: the local wipe
// happened whatever it says.
type RevokeReport struct {
	Remote RemoteRevocation
}

// RemoteRevocation is what a revoke hook did outside snugd.
type RemoteRevocation struct {
	// Outcome is "revoked" (the provider confirmed it), "already-revoked"
	// (the provider no longer honoured the token), "access-remains"
	// (nothing snugd can call withdraws the grant) or "failed" (the
	// provider refused or could not be reached); "" when the hook had
	// nothing outside snugd to release.
	Outcome string
	// Message is a fixed sentence for the person, never provider text.
	Message string
	// ManageAccessURL is where the person removes access at the
	// provider, when its entry names a page ("" otherwise).
	ManageAccessURL string
}

// Confirmed reports whether nothing remains at the provider to remove
// by hand: revoked, already revoked, or nothing to release.
func (r RemoteRevocation) Confirmed() bool {
	return r.Outcome == "" || r.Outcome == "revoked" || r.Outcome == "already-revoked"
}

// A RevokeHook runs before a slot's row is revoked: a pairing family
// releases what it holds outside snugd and says what it did; the local
// wipe follows regardless.
type RevokeHook func(ctx context.Context, appID, slot string) RemoteRevocation

// A ChangeHook runs after every committed connection or credential write
// of a slot: a part that keeps state derived from the row forgets it.
type ChangeHook func(appID, slot string)
