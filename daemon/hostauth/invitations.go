package hostauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/internal/store"
)

// Pairing invitations. Every desktop pairing request
// comes from 127.0.0.1 without an Origin, so snugd cannot tell one local
// process from another: a process that invents a new host name for every
// request can displace the requests other desktop hosts are waiting on
// (Pair). An invitation is the administrator's way past such a flood: it
// is minted on the ctl channel for one host name, and a pairing request
// that carries it is recorded already approved, in a lane of its own that
// no waiting request, cap or bucket reaches.
const (
	// InvitationPrefix begins every invitation, so a leaked one is
	// recognisable to secret scanners.
	InvitationPrefix = "snugi_"
	// InvitationTTL is how long an invitation can be used.
	InvitationTTL = 10 * time.Minute
	// MaxInvitations bounds the invitations waiting to be used at once.
	MaxInvitations = 8

	// invitationChars is the length of an invitation: the prefix and
	// BASE64URL of 32 random bytes, without padding.
	invitationChars = len(InvitationPrefix) + 43
)

// Invitation is a pairing invitation as the ctl channel lists it. It never
// holds the invitation's value, nor its hash.
type Invitation struct {
	ID        string
	Name      string // the host name it is bound to, as the administrator typed it
	Surface   Surface
	ExpiresAt time.Time
	CreatedAt time.Time
}

// InvitationToken is an invitation's value: released once, to the
// administrator who minted it, and presented once, by the host that pairs
// with it. It prints, logs and marshals as REDACTED; Reveal returns the
// value.
type InvitationToken struct{ v string }

// InvitationTokenOf wraps s, an invitation as a pairing request carries
// it ("" for none). It checks nothing: Pair does.
func InvitationTokenOf(s string) InvitationToken { return InvitationToken{s} }

// Reveal returns the invitation; "" when there is none.
func (t InvitationToken) Reveal() string { return t.v }

func (InvitationToken) String() string               { return redacted }
func (InvitationToken) GoString() string             { return redacted }
func (InvitationToken) Format(f fmt.State, _ rune)   { io.WriteString(f, redacted) }
func (InvitationToken) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (InvitationToken) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// errInvitationInvalid is the one answer to an invitation snugd does not
// hold for the request's name, whatever the reason (wrong, expired, used,
// another name's): the reason would help only someone guessing.
func errInvitationInvalid() error {
	return errcode.New(errcode.InvitationInvalid, "the invitation is not valid for this host name: ask the administrator for a new one (snugd ctl hosts invite NAME)")
}

// Invite mints a pairing invitation for the desktop host that will pair
// as name (ctl socket only: the API never serves it over TCP) and returns
// it with its value, which snugd does not keep: only its SHA-256 is
// stored. It can be used once, before InvitationTTL passes, by a pairing
// request under name (in any case). Inviting a name again withdraws the
// name's earlier invitation, so an administrator who lost one simply
// invites again. surface "" means desktop, the only surface invited: a web
// host's requests are keyed by their origin, and no flood of other origins
// reaches them.
//
// Errors: BAD_REQUEST for a malformed name or a web surface,
// INVITATION_CAP_REACHED when MaxInvitations other names' invitations are
// waiting. Safe for concurrent use.
func (b *Book) Invite(ctx context.Context, name string, surface Surface) (Invitation, InvitationToken, error) {
	if surface == "" {
		surface = SurfaceDesktop
	}
	if surface != SurfaceDesktop {
		return Invitation{}, InvitationToken{}, errcode.New(errcode.BadRequest, "an invitation is for a desktop host: a web page pairs from its own origin, which no other page can use")
	}
	if err := checkHostName(name); err != nil {
		return Invitation{}, InvitationToken{}, err
	}
	token := InvitationPrefix + base64.RawURLEncoding.EncodeToString(randomBytes(32))
	hash := sha256.Sum256([]byte(token))
	var (
		row       store.Invitation
		withdrawn []string
	)
	err := b.store.Update(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		if _, err := tx.DeleteInvitationsBefore(now.Add(-pairingHistory)); err != nil {
			return err
		}
		live, err := tx.LiveInvitations()
		if err != nil {
			return err
		}
		others := 0
		for _, inv := range live {
			if !sameName(inv.Name, name) {
				others++
				continue
			}
			if err := tx.DeleteInvitation(inv.ID); err != nil {
				return err
			}
			withdrawn = append(withdrawn, inv.ID)
		}
		if others >= MaxInvitations {
			return errcode.New(errcode.InvitationCapReached, fmt.Sprintf("%d invitations are already waiting to be used, the most snugd keeps: wait for one to expire (within %d minutes), or invite one of their names again to replace its invitation", MaxInvitations, int(InvitationTTL/time.Minute)))
		}
		row, err = tx.InsertInvitation(store.Invitation{
			ID:        "i_" + randomHex(16),
			Hash:      hash[:],
			Name:      name,
			Surface:   store.Surface(surface),
			ExpiresAt: now.Add(InvitationTTL),
		})
		return err
	})
	if err != nil {
		return Invitation{}, InvitationToken{}, b.passCoded("record invitation", err)
	}
	for _, id := range withdrawn {
		b.log.Info("invitation withdrawn: its name was invited again", "invitation_id", id)
	}
	b.log.Info("invitation issued", "invitation_id", row.ID, "expires_at", row.ExpiresAt)
	return invitationFromRow(row), InvitationToken{token}, nil
}

// Invitations lists the invitations waiting to be used, oldest first:
// their names and expiries, never their values.
func (b *Book) Invitations(ctx context.Context) ([]Invitation, error) {
	rows, err := store.Read(ctx, b.store, (*store.Tx).LiveInvitations)
	if err != nil {
		return nil, b.internal("list invitations", err)
	}
	out := make([]Invitation, len(rows))
	for i, r := range rows {
		out[i] = invitationFromRow(r)
	}
	return out, nil
}

// pairInvited records req, which carries an invitation, as a pairing the
// administrator has approved already: the invitation is checked and
// consumed in the transaction that records the pairing, so it pairs one
// request at most. The request takes no place among the waiting requests
// (it is approved, not pending): it counts against no cap, displaces
// nothing and is displaced by nothing. req is valid otherwise (Pair
// checked it).
func (b *Book) pairInvited(ctx context.Context, req PairRequest) (Pairing, error) {
	token := req.Invitation.Reveal()
	if !validInvitation(token) {
		return Pairing{}, errcode.New(errcode.BadRequest, fmt.Sprintf("an invitation is %s followed by 43 characters of A-Z, a-z, 0-9, '-' and '_', as snugd ctl hosts invite printed it", InvitationPrefix))
	}
	sum := sha256.Sum256([]byte(token))
	// An invitation snugd does not hold is refused on a read, so a
	// stream of guesses costs no write transaction; the write below
	// checks everything again.
	if err := b.store.View(ctx, func(tx *store.Tx) error {
		_, err := tx.InvitationByHash(sum[:])
		if errors.Is(err, store.ErrNotFound) {
			return errInvitationInvalid()
		}
		return err
	}); err != nil {
		if _, coded := errcode.CodeOf(err); coded {
			return Pairing{}, err
		}
		return Pairing{}, b.internal("look up invitation", err)
	}
	var (
		p   store.Pairing
		inv store.Invitation
	)
	err := b.store.Update(ctx, func(tx *store.Tx) error {
		now := tx.Now()
		var err error
		inv, err = tx.InvitationByHash(sum[:])
		if errors.Is(err, store.ErrNotFound) {
			return errInvitationInvalid()
		}
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare(inv.Hash, sum[:]) != 1 || inv.UsedAt != nil || !now.Before(inv.ExpiresAt) ||
			Surface(inv.Surface) != req.Surface || !sameName(inv.Name, req.Name) {
			return errInvitationInvalid()
		}
		if _, err := tx.ExpirePairings(); err != nil {
			return err
		}
		if err := prune(tx, now); err != nil {
			return err
		}
		code, err := freeCode(tx)
		if err != nil {
			return err
		}
		p, err = tx.InsertPairing(store.Pairing{
			ID:        "p_" + randomHex(16),
			Code:      code,
			Challenge: req.Challenge,
			Name:      inv.Name, // the administrator's spelling
			Surface:   store.Surface(req.Surface),
			State:     store.PairingApproved,
			Invited:   true,
			ExpiresAt: now.Add(PairingTTL),
		})
		if err != nil {
			return err
		}
		err = tx.UseInvitation(inv.ID, p.ID)
		if errors.Is(err, store.ErrConflict) {
			return errInvitationInvalid()
		}
		return err
	})
	if err != nil {
		return Pairing{}, b.passCoded("record invited pairing", err)
	}
	b.log.Info("pairing recorded by invitation, approved by the administrator", "pairing_id", p.ID, "invitation_id", inv.ID, "surface", string(p.Surface))
	return pairingFromRow(p), nil
}

// sameName reports whether two host names are the same name in any case,
// as snugd compares names elsewhere (the desktop request buckets, the
// displacement).
func sameName(a, b string) bool { return strings.EqualFold(a, b) }

// validInvitation reports whether s is spelled as an invitation:
// InvitationPrefix and canonical BASE64URL of 32 bytes without padding.
func validInvitation(s string) bool {
	if len(s) != invitationChars || !strings.HasPrefix(s, InvitationPrefix) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s[len(InvitationPrefix):])
	return err == nil && len(b) == 32
}

func invitationFromRow(r store.Invitation) Invitation {
	return Invitation{ID: r.ID, Name: r.Name, Surface: Surface(r.Surface), ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt}
}
