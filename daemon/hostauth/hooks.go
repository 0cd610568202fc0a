package hostauth

import "context"

// Hooks are what the daemon does around the book's acts: the journal
// entry of a pairing and an unpairing, the withdrawal of an unpaired
// host's confirms, and the ownership cache's reset. Each may be nil.
type Hooks struct {
	// Paired runs after a pairing is approved: by the administrator
	// (Approve) or by the invitation it was recorded with (Pair).
	Paired func(ctx context.Context, p Pairing)
	// Unpairing runs inside Unpair once the host's token has stopped
	// authenticating and before its requests in flight are cancelled:
	// every confirm it parked is withdrawn there.
	Unpairing func(hostID string)
	// Unpaired runs after Unpair, with its outcome (err is nil on
	// success): caches of what the host held forget it.
	Unpaired func(ctx context.Context, h Host, err error)
}

// SetHooks sets the book's hooks. The daemon calls it once, before the
// book serves.
func (b *Book) SetHooks(h Hooks) { b.hooks = h }

// Pair records a pairing request (see pair). A pairing recorded with an
// invitation is approved by the administrator who minted the invitation:
// the Paired hook runs for it.
func (b *Book) Pair(ctx context.Context, req PairRequest, requestOrigin string) (Pairing, error) {
	p, err := b.pair(ctx, req, requestOrigin)
	if err == nil && p.Invited && b.hooks.Paired != nil {
		b.hooks.Paired(ctx, p)
	}
	return p, err
}

// Approve approves the pending pairing with code (see approve); the
// Paired hook runs for it.
func (b *Book) Approve(ctx context.Context, code string) (Pairing, error) {
	p, err := b.approve(ctx, code)
	if err == nil && b.hooks.Paired != nil {
		b.hooks.Paired(ctx, p)
	}
	return p, err
}

// Unpair unpairs host id at once (see unpair): its token stops
// authenticating, the Unpairing hook withdraws what it parked, and its
// requests in flight are cancelled, all before Unpair returns; then the
// Unpaired hook runs. Errors: HOST_NOT_FOUND.
func (b *Book) Unpair(ctx context.Context, id string) (Host, error) {
	h, err := b.unpair(ctx, id, func() {
		if b.hooks.Unpairing != nil {
			b.hooks.Unpairing(id)
		}
	})
	if b.hooks.Unpaired != nil {
		b.hooks.Unpaired(ctx, h, err)
	}
	return h, err
}
