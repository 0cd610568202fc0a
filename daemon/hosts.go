package daemon

import (
	"context"
	"fmt"

	"github.com/snug/snugd/daemon/hostauth"
)

// Host pairing and authentication live in daemon/hostauth; these are the
// Daemon's entry points to its pairing book (d.hosts), so the API reaches
// every concern through the one Daemon. Each is one call into the book;
// what the daemon adds around an entry (as around DeleteHost) is written
// here.

// AuthenticateHost is hostauth.Book.Authenticate.
func (d *Daemon) AuthenticateHost(ctx context.Context, token, origin string) (hostauth.Host, error) {
	return d.hosts.Authenticate(ctx, token, origin)
}

// BindHost is hostauth.Book.Bind.
func (d *Daemon) BindHost(ctx context.Context, id string) (context.Context, context.CancelFunc, error) {
	return d.hosts.Bind(ctx, id)
}

// PairedOrigin is hostauth.Book.PairedOrigin.
func (d *Daemon) PairedOrigin(ctx context.Context, origin string) bool {
	return d.hosts.PairedOrigin(ctx, origin)
}

// PairingOrigin is hostauth.Book.PairingOrigin.
func (d *Daemon) PairingOrigin(ctx context.Context, id string) (origin string, ok bool) {
	return d.hosts.PairingOrigin(ctx, id)
}

// Pair is hostauth.Book.Pair. A pairing recorded with an invitation is
// approved by the administrator who minted the invitation, and journaled
// as that approval (host-pair, "by invitation").
func (d *Daemon) Pair(ctx context.Context, req hostauth.PairRequest, requestOrigin string) (hostauth.Pairing, error) {
	p, err := d.hosts.Pair(ctx, req, requestOrigin)
	if err == nil && p.Invited {
		d.journalAct(ctx, actHostPair, "", "", fmt.Sprintf("pairing %s: %q (%s), by invitation", p.ID, p.Name, p.Surface))
	}
	return p, err
}

// InviteHost is hostauth.Book.Invite (ctl socket only).
func (d *Daemon) InviteHost(ctx context.Context, name string, surface hostauth.Surface) (hostauth.Invitation, hostauth.InvitationToken, error) {
	return d.hosts.Invite(ctx, name, surface)
}

// Invitations is hostauth.Book.Invitations.
func (d *Daemon) Invitations(ctx context.Context) ([]hostauth.Invitation, error) {
	return d.hosts.Invitations(ctx)
}

// RedeemPairing is hostauth.Book.Redeem.
func (d *Daemon) RedeemPairing(ctx context.Context, id, verifier, requestOrigin string) (hostauth.Redemption, error) {
	return d.hosts.Redeem(ctx, id, verifier, requestOrigin)
}

// ApprovePairing is hostauth.Book.Approve (ctl socket only).
func (d *Daemon) ApprovePairing(ctx context.Context, code string) (hostauth.Pairing, error) {
	p, err := d.hosts.Approve(ctx, code)
	if err == nil {
		d.journalAct(ctx, actHostPair, "", "", fmt.Sprintf("pairing %s: %q (%s) from %q", p.ID, p.Name, p.Surface, p.Origin))
	}
	return p, err
}

// DenyPairing is hostauth.Book.Deny.
func (d *Daemon) DenyPairing(ctx context.Context, code string) (hostauth.Pairing, error) {
	return d.hosts.Deny(ctx, code)
}

// PendingPairings is hostauth.Book.Pending.
func (d *Daemon) PendingPairings(ctx context.Context) ([]hostauth.Pairing, error) {
	return d.hosts.Pending(ctx)
}

// Hosts is hostauth.Book.Hosts.
func (d *Daemon) Hosts(ctx context.Context) ([]hostauth.Host, error) {
	return d.hosts.Hosts(ctx)
}

// DeleteHost unpairs host id at once (hostauth.Book.Unpair): its token
// stops authenticating, every confirm it parked is withdrawn (a decision
// for one afterwards is CONFIRM_WITHDRAWN, never an allow), and its
// requests in flight are cancelled, all before DeleteHost returns.
// Errors: HOST_NOT_FOUND.
func (d *Daemon) DeleteHost(ctx context.Context, id string) error {
	h, err := d.hosts.Unpair(ctx, id, func() { d.confirms.WithdrawHost(id) })
	d.reach.forget() // the host's apps are no longer held (owners.go)
	if err == nil {
		d.journalAct(ctx, actHostUnpair, "", "", fmt.Sprintf("host %s: %q (%s)", h.ID, h.Name, h.Surface))
	}
	return err
}
