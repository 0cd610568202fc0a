package grants

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
)

// AppSummary is one app as snugd ctl apps lists it: its connections, their
// state, and what needs the administrator. It never carries a credential.
type AppSummary struct {
	AppID           string
	Connections     []ConnSummary
	Attention       []Attention
	PendingConfirms int // the app's requests parked on a confirm
	// (An owner host and its shares are listed here once app ownership
	// lands; snugd ctl apps prints them in an owner column.)
}

// ConnSummary is one connection of an AppSummary.
type ConnSummary struct {
	Slot            string
	Provider        string // "" when the stored requirement no longer validates
	Kind            string
	Status          Status
	NeedsReapproval bool
	Imported        bool
	Invalid         bool
	// Credentials is the dynamic state's status ("" when the slot has
	// none yet); LastError its reason (secret-free).
	Credentials ConnStatus
	LastError   string
	ExpiresAt   *time.Time // when the stored token expires, when known
	LANPin      string     // the pinned certificate's fingerprint, "" when none
	Standing    bool       // a standing approval is armed on it
	// Unreadable names the slot's stored values (field keys, or
	// _connection for its state) that do not open under the master key;
	// Credentials is then ConnUnreadable.
	Unreadable []string
}

// ConnUnreadable is a summary's credential status when a stored value of
// the slot does not open under the master key (altered on disk, or sealed
// under another key): requests are refused until it is stored again.
// Never a stored state (§13 has four).
const ConnUnreadable ConnStatus = "unreadable"

// UnreadableFields lists the names (field keys, _connection) of the
// values of (appID, slot) the store has seen not to open, at its seal
// check or by a read since: no value is opened here, and no SQL read.
// Keys of an app whose id extends appID with a colon are not this slot's.
// Safe for concurrent use.
func (d *Records) UnreadableFields(appID, slot string) []string {
	prefix := store.FieldKey(appID, slot, "")
	var names []string
	for _, k := range d.store.UnreadableSecrets(prefix) {
		if name := k[len(prefix):]; !strings.Contains(name, ":") {
			names = append(names, name)
		}
	}
	return names
}

// AttentionKind names what needs the administrator. Stable strings: the
// API sends them.
type AttentionKind string

const (
	AttentionProposal    AttentionKind = "proposal"    // declared: review and approve, or leave it
	AttentionStaged      AttentionKind = "staged"      // approved with a staged change
	AttentionImported    AttentionKind = "imported"    // imported, not yet approved here
	AttentionInvalid     AttentionKind = "invalid"     // the stored requirement no longer validates
	AttentionCredentials AttentionKind = "credentials" // approved, credentials missing or incomplete
	AttentionError       AttentionKind = "error"       // the credential state reports an error
	AttentionExpired     AttentionKind = "expired"     // the token expired
	AttentionExpiring    AttentionKind = "expiring"    // the token expires within a day
	AttentionPin         AttentionKind = "pin"         // a LAN device with no certificate pinned yet
	AttentionConfirm     AttentionKind = "confirm"     // requests wait for a confirmation
	AttentionStanding    AttentionKind = "standing"    // a standing approval acts unattended
	AttentionUnreadable  AttentionKind = "unreadable"  // a stored value does not open under the master key
)

// Attention is one thing that needs the administrator, with the command
// that deals with it. Slot is "" for the app as a whole.
type Attention struct {
	Slot    string
	Kind    AttentionKind
	Message string // a fixed sentence with keys and slot names, never a value
}

// expiringWithin is how soon an expiry counts as needing attention.
const expiringWithin = 24 * time.Hour

// Apps lists every app with at least one connection row, by app id, with
// its connections in slot order and what needs attention.
func (d *Records) Apps(ctx context.Context) ([]AppSummary, error) {
	type rowState struct {
		row   store.Connection
		state ConnState
		has   bool
	}
	var rows []rowState
	err := d.store.View(ctx, func(tx *store.Tx) error {
		all, err := tx.AllConnections()
		if err != nil {
			return err
		}
		for _, r := range all {
			s, ok, err := ReadConnState(tx, r.AppID, r.Slot)
			switch {
			case errors.Is(err, store.ErrUnreadableSecret):
				// Reported below from the store's marks, which this
				// read has just set.
				s, ok = ConnState{}, false
			case err != nil:
				// A state that does not decode is reported, not fatal.
				s, ok = ConnState{Status: ConnError, LastError: "the stored connection state does not decode"}, true
			}
			rows = append(rows, rowState{row: r, state: s, has: ok})
		}
		return nil
	})
	if err != nil {
		return nil, Internal(d.log, "list apps", err)
	}
	now := d.now()
	byApp := map[string]*AppSummary{}
	var order []string
	for _, rs := range rows {
		a := byApp[rs.row.AppID]
		if a == nil {
			a = &AppSummary{AppID: rs.row.AppID, PendingConfirms: d.gates.PendingConfirms(rs.row.AppID)}
			byApp[rs.row.AppID] = a
			order = append(order, rs.row.AppID)
		}
		c := FromRow(rs.row)
		cs := ConnSummary{
			Slot: c.Slot, Status: c.Status, NeedsReapproval: c.NeedsReapproval(),
			Imported: c.Imported, Invalid: c.Requirement == nil,
		}
		if c.Requirement != nil {
			cs.Provider, cs.Kind = c.Requirement.Provider.Name, string(c.Requirement.Kind)
		}
		if rs.has {
			cs.Credentials, cs.LastError = rs.state.Status, rs.state.LastError
			if rs.state.LANPin != nil {
				cs.LANPin = rs.state.LANPin.Fingerprint
			}
			if rs.state.ObtainedAt != nil && rs.state.ExpiresIn != nil {
				t := time.UnixMilli(*rs.state.ObtainedAt).Add(time.Duration(*rs.state.ExpiresIn) * time.Second).UTC()
				cs.ExpiresAt = &t
			}
		}
		if bad := d.UnreadableFields(c.AppID, c.Slot); len(bad) > 0 {
			cs.Credentials, cs.Unreadable = ConnUnreadable, bad
			cs.LastError = "sealed values do not open under the master key: " + strings.Join(bad, ", ")
		}
		cs.Standing = d.gates.StandingArmed(c.AppID, c.Slot)
		a.Connections = append(a.Connections, cs)
		a.Attention = append(a.Attention, d.attentionOf(c, cs, rs.state, rs.has, now)...)
	}
	out := make([]AppSummary, 0, len(order))
	for _, id := range order {
		a := byApp[id]
		slices.SortFunc(a.Connections, func(x, y ConnSummary) int { return cmp.Compare(x.Slot, y.Slot) })
		if a.PendingConfirms > 0 {
			a.Attention = append(a.Attention, Attention{Kind: AttentionConfirm, Message: fmt.Sprintf("%d %s waiting for your confirmation: snugd ctl confirms", a.PendingConfirms, pluralize(a.PendingConfirms, "request is", "requests are"))})
		}
		out = append(out, *a)
	}
	slices.SortFunc(out, func(x, y AppSummary) int { return cmp.Compare(x.AppID, y.AppID) })
	return out, nil
}

// attentionOf lists what one connection needs, each with the command that
// deals with it: credentials set only for the fields a person types, the
// pairing ceremony for the field it fills, connect for an OAuth sign-in.
func (d *Records) attentionOf(c Connection, cs ConnSummary, state ConnState, hasState bool, now time.Time) []Attention {
	var out []Attention
	add := func(k AttentionKind, format string, a ...any) {
		out = append(out, Attention{Slot: c.Slot, Kind: k, Message: fmt.Sprintf(format, a...)})
	}
	app := c.AppID
	switch {
	case cs.Invalid:
		add(AttentionInvalid, "the stored requirement no longer validates and grants nothing: snugd ctl connections %s", app)
		return out
	case c.Status == StatusRevoked:
		return out
	case c.Imported:
		add(AttentionImported, "imported: review and approve it on this device: snugd ctl review %s %s", app, c.Slot)
	case c.Status == StatusDeclared:
		add(AttentionProposal, "a proposal waits: snugd ctl review %s %s, then snugd ctl approve %s %s", app, c.Slot, app, c.Slot)
	case cs.NeedsReapproval:
		add(AttentionStaged, "a changed requirement waits: snugd ctl review %s %s, then snugd ctl reapprove %s %s", app, c.Slot, app, c.Slot)
	}
	if c.Status != StatusApproved {
		return out
	}
	r := c.Requirement
	setCmd := fmt.Sprintf("snugd ctl credentials set %s %s", app, c.Slot)
	connectCmd := fmt.Sprintf("snugd ctl connect %s %s", app, c.Slot)
	signsIn := r.Kind == requirement.KindOAuth2AuthCode
	var pairCmd string
	pairingOwed := false
	if p, ok := d.registry.Pairing(r); ok {
		pairCmd = fmt.Sprintf("snugd ctl %s %s %s", ceremonyCommand(p.Family), app, c.Slot)
		_, pairingOwed = d.PairingOwed(r, state, hasState)
	}
	typed := d.typedFields(r)
	switch cs.Credentials {
	case ConnUnreadable:
		add(AttentionUnreadable, "credential unreadable: %s", unreadableStep(cs.Unreadable, typed, pairCmd, connectCmd, setCmd, app, c.Slot))
	case "":
		switch {
		case len(typed) > 0 && signsIn:
			add(AttentionCredentials, "no credentials stored: %s, then %s", setCmd, connectCmd)
		case len(typed) > 0 && pairingOwed:
			add(AttentionCredentials, "no credentials stored: %s, then %s", setCmd, pairCmd)
		case len(typed) > 0:
			add(AttentionCredentials, "no credentials stored: %s", setCmd)
		case pairingOwed:
			add(AttentionCredentials, "not paired yet: %s", pairCmd)
		case signsIn:
			add(AttentionCredentials, "not signed in yet: %s", connectCmd)
		}
	case ConnPending:
		missing, listed := strings.CutPrefix(cs.LastError, MissingFieldsPrefix)
		var missingTyped []string
		if listed {
			for _, k := range strings.Split(missing, ", ") {
				if slices.Contains(typed, k) {
					missingTyped = append(missingTyped, k)
				}
			}
		}
		switch {
		case len(missingTyped) > 0:
			add(AttentionCredentials, "%s%s: %s", MissingFieldsPrefix, strings.Join(missingTyped, ", "), setCmd)
		case pairingOwed:
			add(AttentionCredentials, "not paired yet: %s", pairCmd)
		case signsIn:
			add(AttentionCredentials, "not signed in yet: %s", connectCmd)
		case len(typed) > 0:
			add(AttentionCredentials, "%s: %s", orDefault(cs.LastError, "credentials incomplete"), setCmd)
		}
	case ConnConnected:
		if pairingOwed {
			// Values stored some other way than the ceremony (an older
			// snugd took them by hand): the ceremony has not vouched for
			// them.
			add(AttentionCredentials, "not paired yet: %s", pairCmd)
		}
	case ConnError:
		// The step that gives the row new credentials: the ceremony
		// that filled them, the sign-in, or the typed fields.
		next := setCmd
		switch {
		case pairCmd != "" && cs.LANPin != "":
			next = pairCmd + " --repin" // a changed certificate is shown before it is pinned
		case pairCmd != "":
			next = pairCmd
		case signsIn:
			next = connectCmd
		}
		add(AttentionError, "the connection reports an error (%s): %s", orNone(cs.LastError), next)
	case ConnExpired:
		switch {
		case pairCmd != "":
			add(AttentionExpired, "the credentials expired: pair again: %s", pairCmd)
		case signsIn:
			add(AttentionExpired, "the token expired: sign in again: %s", connectCmd)
		default:
			add(AttentionExpired, "the token expired: store new credentials: %s", setCmd)
		}
	}
	if cs.ExpiresAt != nil && cs.Credentials == ConnConnected {
		switch left := cs.ExpiresAt.Sub(now); {
		case left <= 0:
			add(AttentionExpired, "the token expired at %s", cs.ExpiresAt.Format(time.RFC3339))
		case left < expiringWithin:
			add(AttentionExpiring, "the token expires at %s", cs.ExpiresAt.Format(time.RFC3339))
		}
	}
	if r.LANHost != nil && cs.LANPin == "" && !slices.Contains(cs.Unreadable, store.ConnectionStateField) {
		if pairCmd != "" {
			add(AttentionPin, "no certificate pinned for the LAN device yet: pairing pins it: %s", pairCmd)
		} else {
			add(AttentionPin, "no certificate pinned for the LAN device yet: the first connection pins it (trust on first use)")
		}
	}
	if cs.Standing {
		add(AttentionStanding, "a standing approval is armed: it sends without asking (snugd ctl status)")
	}
	return out
}

// unreadableStep says which stored values of a slot do not open and the
// step that stores them again: the state's loss needs the row revoked and
// connected anew (it held the pin and the verify marks); a field is
// stored again the way it was filled: typed, by its pairing, or by the
// sign-in.
func unreadableStep(bad, typed []string, pairCmd, connectCmd, setCmd, app, slot string) string {
	if slices.Contains(bad, store.ConnectionStateField) {
		return fmt.Sprintf("the connection's stored state does not open under the master key: revoke it and connect it again: snugd ctl revoke %s %s, then snugd ctl reconnect %s %s", app, slot, app, slot)
	}
	what := "the stored value of field " + strings.Join(bad, ", ")
	if len(bad) > 1 {
		what = "the stored values of fields " + strings.Join(bad, ", ")
	}
	typedBad := slices.ContainsFunc(bad, func(k string) bool { return slices.Contains(typed, k) })
	tokenBad := slices.ContainsFunc(bad, func(k string) bool { return strings.HasPrefix(k, "_") })
	var next string
	switch {
	case typedBad && tokenBad:
		next = setCmd + ", then " + connectCmd
	case typedBad || pairCmd == "" && !tokenBad:
		next = setCmd
	case pairCmd != "":
		next = pairCmd
	default:
		next = connectCmd
	}
	return fmt.Sprintf("%s does not open under the master key: store it again: %s", what, next)
}

// ceremonyCommand is the snugd ctl command that runs a pairing family's
// ceremony.
func ceremonyCommand(f registry.Family) string {
	switch f {
	case registry.FamilyExchange:
		return "pair lan"
	case registry.FamilyDeviceLink:
		return "pair link"
	case registry.FamilyTokenClaim:
		return "pair claim"
	}
	return "pair " + string(f)
}

// typedFields lists r's field keys that a person types: every declared
// field but the one a pairing ceremony fills and the reserved OAuth token
// names. A requirement of kind none has none.
func (d *Book) typedFields(r *requirement.Requirement) []string {
	if r.Kind == requirement.KindNone {
		return nil
	}
	var filled string
	if p, ok := d.registry.Pairing(r); ok {
		filled = p.Field
	}
	var keys []string
	for _, k := range r.FieldKeys() {
		if k != filled && !strings.HasPrefix(k, "_") {
			keys = append(keys, k)
		}
	}
	return keys
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "no detail"
	}
	return s
}

func pluralize(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
