package grants

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/scrub"
)

// Credential custody: values live in snug_secrets, sealed, under
// auth:<appId>:<slot>:<fieldKey>, and nowhere else. They are write-only
// through the API: nothing returns a value.

// maxCredentialBytes bounds one credential value (a PEM private key fits
// comfortably).
const MaxCredentialBytes = 64 << 10

// ConnStatus is _connection.status: exactly four values.
type ConnStatus string

const (
	ConnPending   ConnStatus = "pending"
	ConnConnected ConnStatus = "connected"
	ConnExpired   ConnStatus = "expired"
	ConnError     ConnStatus = "error"
)

// LANPin is a LAN device's TOFU certificate pin: the SHA-256 fingerprint of
// its leaf certificate. CN is diagnostic, never a trust input.
type LANPin struct {
	Fingerprint string
	CN          string
}

// ConnState is a slot's dynamic connection state, kept sealed under
// auth:<appId>:<slot>:_connection. Times are unix milliseconds. The three
// verify markers are separate on purpose: one family's marker never vouches
// for another's.
type ConnState struct {
	Status          ConnStatus
	ObtainedAt      *int64
	ExpiresIn       *int64
	ScopesGranted   []string
	LastError       string
	LANPin          *LANPin
	LANVerifiedAt   *int64
	LinkVerifiedAt  *int64
	ClaimVerifiedAt *int64
}

// connStateJSON is ConnState's stored form, with the field names.
type connStateJSON struct {
	Status          ConnStatus  `json:"status"`
	ObtainedAt      *int64      `json:"obtainedAt,omitempty"`
	ExpiresIn       *int64      `json:"expiresIn,omitempty"`
	ScopesGranted   []string    `json:"scopesGranted,omitempty"`
	LastError       string      `json:"lastError,omitempty"`
	LANPin          *lanPinJSON `json:"lanPin,omitempty"`
	LANVerifiedAt   *int64      `json:"lanVerifiedAt,omitempty"`
	LinkVerifiedAt  *int64      `json:"linkVerifiedAt,omitempty"`
	ClaimVerifiedAt *int64      `json:"claimVerifiedAt,omitempty"`
}

type lanPinJSON struct {
	Fingerprint string `json:"fingerprint"`
	CN          string `json:"cn,omitempty"`
}

func (s ConnState) Marshal() ([]byte, error) {
	if !s.Status.valid() {
		return nil, fmt.Errorf("connection state: status %q is not pending, connected, expired or error", s.Status)
	}
	j := connStateJSON{
		Status: s.Status, ObtainedAt: s.ObtainedAt, ExpiresIn: s.ExpiresIn, ScopesGranted: s.ScopesGranted,
		LastError: s.LastError, LANVerifiedAt: s.LANVerifiedAt, LinkVerifiedAt: s.LinkVerifiedAt, ClaimVerifiedAt: s.ClaimVerifiedAt,
	}
	if s.LANPin != nil {
		j.LANPin = &lanPinJSON{Fingerprint: s.LANPin.Fingerprint, CN: s.LANPin.CN}
	}
	return json.Marshal(j)
}

// unmarshalConnState decodes a stored state strictly: unknown fields and an
// unknown status are refused, so nothing rides in unreviewed.
func UnmarshalConnState(b []byte) (ConnState, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var j connStateJSON
	if err := dec.Decode(&j); err != nil {
		return ConnState{}, fmt.Errorf("connection state: %w", err)
	}
	if dec.More() {
		return ConnState{}, errors.New("connection state: trailing data")
	}
	if !j.Status.valid() {
		return ConnState{}, fmt.Errorf("connection state: status %q is not pending, connected, expired or error", j.Status)
	}
	s := ConnState{
		Status: j.Status, ObtainedAt: j.ObtainedAt, ExpiresIn: j.ExpiresIn, ScopesGranted: j.ScopesGranted,
		LastError: j.LastError, LANVerifiedAt: j.LANVerifiedAt, LinkVerifiedAt: j.LinkVerifiedAt, ClaimVerifiedAt: j.ClaimVerifiedAt,
	}
	if j.LANPin != nil {
		if j.LANPin.Fingerprint == "" {
			return ConnState{}, errors.New("connection state: lanPin without a fingerprint")
		}
		s.LANPin = &LANPin{Fingerprint: j.LANPin.Fingerprint, CN: j.LANPin.CN}
	}
	return s, nil
}

func (s ConnStatus) valid() bool {
	switch s {
	case ConnPending, ConnConnected, ConnExpired, ConnError:
		return true
	}
	return false
}

// readConnState reads a slot's state inside tx; ok is false when there is
// none.
func ReadConnState(tx *store.Tx, appID, slot string) (ConnState, bool, error) {
	v, err := tx.Secret(store.ConnectionStateKey(appID, slot))
	if errors.Is(err, store.ErrNotFound) {
		return ConnState{}, false, nil
	}
	if err != nil {
		return ConnState{}, false, err
	}
	s, err := UnmarshalConnState(v)
	return s, err == nil, err
}

func WriteConnState(tx *store.Tx, appID, slot string, s ConnState) error {
	b, err := s.Marshal()
	if err != nil {
		return err
	}
	return tx.PutSecret(store.ConnectionStateKey(appID, slot), b)
}

// ConnectionState returns a slot's dynamic state (never a credential); ok
// is false when the slot has none yet.
func (d *Book) ConnectionState(ctx context.Context, appID, slot string) (s ConnState, ok bool, err error) {
	if err := CheckAppID(appID); err != nil {
		return ConnState{}, false, err
	}
	if err := CheckSlot(slot); err != nil {
		return ConnState{}, false, err
	}
	err = d.store.View(ctx, func(tx *store.Tx) error {
		s, ok, err = ReadConnState(tx, appID, slot)
		return err
	})
	if errors.Is(err, store.ErrUnreadableSecret) {
		return ConnState{}, false, ErrStateUnreadable
	}
	if err != nil {
		return ConnState{}, false, Internal(d.log, "read connection state", err)
	}
	return s, ok, nil
}

// ErrStateUnreadable is ConnectionState's error when the slot's stored
// state does not open under the master key: the row can only be revoked
// (which wipes it) and connected again. UnreadableState is how a listing
// shows such a row.
var ErrStateUnreadable = errors.New("the connection's stored state does not open under the master key: revoke it and connect it again")

// UnreadableState is the state a listing shows for a row whose stored
// state does not open (ErrStateUnreadable): never stored.
func UnreadableState() ConnState {
	return ConnState{Status: ConnUnreadable, LastError: ErrStateUnreadable.Error()}
}

// SetTypedCredentials is SetCredentials for values a person typed (snugd
// ctl credentials set and its API route): it refuses a field that a
// ceremony fills (the pairing seat's field, an OAuth token), naming the
// ceremony to run instead, and then stores nothing. The check reads the
// row's current and staged requirements in its own read, before
// SetCredentials' transaction: a promotion in between brings no field it
// did not see, but a requirement newly staged in that gap is not checked.
func (d *Book) SetTypedCredentials(ctx context.Context, appID, slot string, values map[string]string) error {
	if err := CheckAppID(appID); err != nil {
		return err
	}
	if err := CheckSlot(slot); err != nil {
		return err
	}
	var c Connection
	err := d.store.View(ctx, func(tx *store.Tx) error {
		row, err := tx.Connection(appID, slot)
		if err != nil {
			return err
		}
		c = FromRow(row)
		return nil
	})
	if err != nil {
		return RowError(d.log, "store credentials", err)
	}
	for _, key := range slices.Sorted(maps.Keys(values)) {
		if err := d.ceremonyFills(c, key); err != nil {
			return err
		}
	}
	return d.SetCredentials(ctx, appID, slot, values)
}

// SetCredentials stores credential values for (appID, slot) in one
// transaction, with the slot's state marked connected once every required
// field of the current requirement has a value, else pending with
// LastError naming the fields still missing (MissingFieldsPrefix). Every key must be a
// field the current or the staged requirement declares; values are
// non-empty UTF-8 without NUL, at most 64 KiB. A revoked row takes none.
// Errors name keys, never values. It takes ceremony-filled fields too;
// values from a person go through SetTypedCredentials.
func (d *Book) SetCredentials(ctx context.Context, appID, slot string, values map[string]string) error {
	if err := CheckAppID(appID); err != nil {
		return err
	}
	if err := CheckSlot(slot); err != nil {
		return err
	}
	if len(values) == 0 {
		return errcode.New(errcode.BadRequest, "no credential values given")
	}
	for key, v := range values {
		if v == "" || len(v) > MaxCredentialBytes || !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return errcode.New(errcode.BadRequest, fmt.Sprintf("the value of field %s must be 1 to %d bytes of UTF-8 without NUL", quoteFieldKey(key), MaxCredentialBytes))
		}
	}
	err := d.store.Update(ctx, func(tx *store.Tx) error {
		row, err := tx.Connection(appID, slot)
		if err != nil {
			return err
		}
		if Status(row.Status) == StatusRevoked {
			return errcode.New(errcode.ConnectionRevoked, "the connection was revoked: reconnect it before storing credentials")
		}
		declared := declaredFields(FromRow(row))
		keys := make([]string, 0, len(values))
		for key := range values {
			if !slices.Contains(declared, key) {
				return errcode.New(errcode.FieldUnknown, fmt.Sprintf("the requirement declares no field %s", quoteFieldKey(key)))
			}
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			if err := tx.PutSecret(store.FieldKey(appID, slot, key), store.Secret(values[key])); err != nil {
				return err
			}
		}
		state, _, err := ReadConnState(tx, appID, slot)
		if err != nil {
			return err
		}
		missing, err := missingFields(tx, appID, slot, FromRow(row))
		if err != nil {
			return err
		}
		obtained := tx.Now().UnixMilli()
		state.Status, state.ObtainedAt, state.LastError = ConnConnected, &obtained, ""
		if len(missing) > 0 {
			// Not connected until every required field has a value: the
			// state names the keys still owed (keys are not secret).
			state.Status, state.ObtainedAt = ConnPending, nil
			state.LastError = MissingFieldsPrefix + strings.Join(missing, ", ")
		}
		if len(missing) == 0 && state.Status == ConnConnected {
			// An authorization-code row is connected by its sign-in
			// (daemon/pairing), not by its client fields.
			if pending, err := awaitsSignIn(tx, appID, slot, FromRow(row)); err != nil {
				return err
			} else if pending {
				state.Status, state.ObtainedAt, state.LastError = ConnPending, nil, OauthNotConnectedText
			}
		}
		if err := WriteConnState(tx, appID, slot, state); err != nil {
			return err
		}
		// The act, with the field names (declared keys), never a value.
		_, err = tx.InsertJournal(journal.ActEntry(ctx, journal.ActCredentialsSet, appID, slot, "fields "+strings.Join(keys, ", ")))
		return err
	})
	if err != nil {
		return RowError(d.log, "store credentials", err)
	}
	d.ConnectionChanged(appID, slot)
	return nil
}

// ceremonyFills refuses key when a ceremony, not a person, fills it on c:
// the field the registry's pairing names for c's current or staged
// requirement, or an OAuth token's reserved name. A value typed by hand
// there would read as connected with no claim, pairing, link or sign-in
// behind it. The answer names the ceremony to run instead.
func (d *Book) ceremonyFills(c Connection, key string) error {
	for _, r := range []*requirement.Requirement{c.Requirement, c.Pending} {
		if r == nil {
			continue
		}
		if r.Kind.IsOAuth() && strings.HasPrefix(key, "_") {
			return errcode.New(errcode.BadRequest, fmt.Sprintf("field %s holds an OAuth token, which only the sign-in stores: run snugd ctl connect %s %s", quoteFieldKey(key), c.AppID, c.Slot))
		}
		p, ok := d.registry.Pairing(r)
		if !ok || p.Field != key {
			continue
		}
		var ceremony string
		switch p.Family {
		case registry.FamilyTokenClaim:
			ceremony = "the claim of a setup token fills it: run snugd ctl pair claim"
		case registry.FamilyExchange:
			ceremony = "pairing with the device on the LAN fills it (and pins its certificate): run snugd ctl pair lan"
		case registry.FamilyDeviceLink:
			ceremony = "linking the device fills it: run snugd ctl pair link"
		default:
			ceremony = "its pairing fills it: see snugd ctl review"
		}
		return errcode.New(errcode.BadRequest, fmt.Sprintf("field %s is not typed by hand: %s %s %s", quoteFieldKey(key), ceremony, c.AppID, c.Slot))
	}
	return nil
}

// MissingFieldsPrefix starts a pending state's LastError that lists the
// required field keys still without a value.
const MissingFieldsPrefix = "missing required fields: "

// missingFields lists, in declaration order, the fields of c's current
// requirement that are required (not declared optional) and have no
// stored value in (appID, slot), as tx sees it.
func missingFields(tx *store.Tx, appID, slot string, c Connection) ([]string, error) {
	if c.Requirement == nil {
		return nil, nil
	}
	have, err := tx.SecretKeys(store.FieldKey(appID, slot, ""))
	if err != nil {
		return nil, err
	}
	stored := map[string]bool{}
	for _, k := range have {
		stored[strings.TrimPrefix(k, store.FieldKey(appID, slot, ""))] = true
	}
	var missing []string
	fields := c.Requirement.Fields
	if c.Requirement.UserLayer != nil {
		fields = append(slices.Clip(fields), c.Requirement.UserLayer.Fields...)
	}
	for _, f := range fields {
		if (f.Required == nil || *f.Required) && !stored[f.Key] {
			missing = append(missing, f.Key)
		}
	}
	return missing, nil
}

// quoteFieldKey names a credential key in an error answer: quoted when it
// has the shape of a field key (^[a-z0-9_]{1,40}$, which no requirement
// can declare otherwise), and never otherwise. A key that does not fit
// may be a secret pasted into the key's seat, and must not come back.
func quoteFieldKey(key string) string {
	if requirement.ValidFieldKey(key) {
		return fmt.Sprintf("%q", key)
	}
	return "(a key that is not a field key: ^[a-z0-9_]{1,40}$; not repeated)"
}

// declaredFields lists the field keys of c's current and staged
// requirements.
func declaredFields(c Connection) []string {
	var keys []string
	if c.Requirement != nil {
		keys = append(keys, c.Requirement.FieldKeys()...)
	}
	if c.Pending != nil {
		keys = append(keys, c.Pending.FieldKeys()...)
	}
	return keys
}

// secretCache keeps opened credential slices in memory, so the request
// path reads no SQL for them. Every committed connection write and every
// credential write clears it (connectionChanged); a read that raced with a
// clear does not fill it (the generation check), so a revoked or replaced
// value is never served from the cache after its write returns. Any future
// writer of snug_secrets must end in connectionChanged too.
//
// It also holds the scrub's compiled spellings of the values requests
// injected (gate 10, scrub.Cache), forgotten with the slices: that cache
// is keyed by the values themselves, so it cannot serve a stale set, and
// forgetting it keeps a replaced value from lingering in memory.
type SecretCache struct {
	mu     sync.Mutex
	gen    uint64
	slices map[[2]string]map[string]store.Secret
	Scrubs scrub.Cache
}

func (c *SecretCache) Forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.slices)
	c.Scrubs.Forget()
}

// cachedSlotSecrets is the executor's credential read: the slice of
// (appID, slot) from the cache, or from storage on a miss. The returned map
// is shared: callers never modify it.
func (d *Book) CachedSlotSecrets(ctx context.Context, appID, slot string) (map[string]store.Secret, error) {
	key := [2]string{appID, slot}
	c := &d.secretCache
	c.mu.Lock()
	if v, ok := c.slices[key]; ok {
		c.mu.Unlock()
		return v, nil
	}
	gen := c.gen
	c.mu.Unlock()
	v, err := d.SlotSecrets(ctx, appID, slot)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.slices == nil {
			c.slices = map[[2]string]map[string]store.Secret{}
		}
		c.slices[key] = v
	}
	c.mu.Unlock()
	return v, nil
}

// slotSecrets reads the credential slice of (appID, slot) from storage.
func (d *Book) SlotSecrets(ctx context.Context, appID, slot string) (map[string]store.Secret, error) {
	var out map[string]store.Secret
	err := d.store.View(ctx, func(tx *store.Tx) error {
		var err error
		out, err = tx.SlotSecrets(appID, slot)
		return err
	})
	return out, err
}

// markConnection sets an approved slot's state to status with lastError
// msg (a fixed sentence) in one write, once something outside the
// writers learned it: an OAuth grant that expired or failed
// (daemon/pairing's oauthconn.go), a token-claim bridge that refused its
// credentials (claim.go), a LAN device whose certificate changed
// (lan.go). It reports
// whether the state changed, announces a change, and runs to its end when
// the caller goes away. A failed write is logged, never returned: the
// request that learned it is answered either way.
func (d *Book) MarkConnection(ctx context.Context, appID, slot string, status ConnStatus, msg string) (changed bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CommitTimeout)
	defer cancel()
	err := d.store.Update(ctx, func(tx *store.Tx) error {
		changed = false // a retried transaction starts over
		row, err := tx.Connection(appID, slot)
		if err != nil || Status(row.Status) != StatusApproved {
			return err
		}
		state, _, err := ReadConnState(tx, appID, slot)
		if err != nil || state.Status == status && state.LastError == msg {
			return err
		}
		state.Status, state.LastError = status, msg
		changed = true
		return WriteConnState(tx, appID, slot, state)
	})
	if err != nil {
		d.log.Error("mark connection", "app", appID, "slot", slot, "status", string(status), "err", err)
		return false
	}
	if changed {
		d.ConnectionChanged(appID, slot)
	}
	return changed
}

// awaitsSignIn reports whether c is an authorization-code row whose slot
// holds no access token yet.
func awaitsSignIn(tx *store.Tx, appID, slot string, c Connection) (bool, error) {
	if c.Requirement == nil || c.Requirement.Kind != requirement.KindOAuth2AuthCode {
		return false, nil
	}
	_, err := tx.Secret(store.FieldKey(appID, slot, AccessTokenField))
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	return false, err
}

// Reserved slice names of the OAuth tokens.
const (
	AccessTokenField  = "_access_token"
	RefreshTokenField = "_refresh_token"
)

// oauthNotConnectedText is the fixed lastError of an OAuth slot that has
// not signed in yet.
const OauthNotConnectedText = "the connection has not signed in yet: run snugd ctl connect"

// commitTimeout bounds the commit. It runs even when the caller has gone
// away meanwhile: once the bridge has answered, the token is spent, and
// dropping its credentials would help nobody.
const CommitTimeout = 10 * time.Second

// ForgetCache forgets the cached credential slices and their compiled
// scrubs.
func (d *Book) ForgetCache() { d.secretCache.Forget() }
