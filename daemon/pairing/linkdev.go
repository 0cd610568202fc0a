package pairing

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/linkdevice"
)

// Linked devices (DESIGN.md, "Linked-device helpers and the sidecar
// symbolic host"; the device-link family): the daemon's side of the
// helper supervisor (linkdevice.Supervisor). It gives the executor one
// LocalTransport per registered helper (gate 6a), runs the QR flow that
// links a slot (start → qr → linked, the token verified and committed with
// linkVerifiedAt in one write), unlinks on revoke, and folds the
// supervisor's state into the status.

// Helpers is the linked-device helper supervisor as the daemon uses it:
// *linkdevice.Supervisor. main builds it from its literal table; the daemon
// runs it as a service (started in New, stopped by Close, never restarted
// during shutdown) and routes its events in through HelperEvent.
type Helpers interface {
	Run(ctx context.Context) error
	// Subscribe adds a receiver of the supervisor's events (link
	// notifications, state changes); called before Run.
	Subscribe(func(linkdevice.Event))
	// Helpers lists the helper ids the table holds.
	Helpers() []string
	Do(ctx context.Context, k linkdevice.SessionKey, req linkdevice.Request) (linkdevice.Response, error)
	StartLink(ctx context.Context, k linkdevice.SessionKey) error
	PollLink(ctx context.Context, k linkdevice.SessionKey) (linkdevice.Poll, error)
	CancelLink(ctx context.Context, k linkdevice.SessionKey) error
	Verify(ctx context.Context, k linkdevice.SessionKey, token linkdevice.Token) (linkdevice.Verification, error)
	Unlink(ctx context.Context, k linkdevice.SessionKey) error
	// Promote swaps a relink's staged session (answering token) in for
	// the live one, Restore swaps it back after a failed commit, and
	// FinishSwap settles the swap by the committed token: after the
	// commit, and at start for each slot Swaps lists (a crash cut the
	// swap short). linkdevice.Supervisor's.
	Promote(k linkdevice.SessionKey, token linkdevice.Token) error
	Restore(k linkdevice.SessionKey) error
	FinishSwap(ctx context.Context, k linkdevice.SessionKey, committed linkdevice.Token) (restored bool, err error)
	Swaps() []linkdevice.SessionKey
	// HasSession reports whether k's session directory holds anything.
	HasSession(k linkdevice.SessionKey) bool
	HelperStatus() []linkdevice.HelperSummary
	// Confinement is the sandbox the helpers run in.
	Confinement() linkdevice.Confinement
}

// Device-link bounds.
const (
	// linkFlowTTL bounds a device-link flow: the simulator's default five
	// codes of 20 s fit with room; a real helper's attempt ends itself
	// sooner (expired) or the flow does.
	linkFlowTTL = 5 * time.Minute
	// linkPollEvery is the poll of a flow whose helper sends no
	// link.status: the notifications only hurry it.
	linkPollEvery = time.Second
	// linkCallTimeout bounds the daemon's own calls to a helper outside a
	// request (start, cancel, unlink); the protocol's per-method timeouts
	// bound them too.
	linkCallTimeout = 15 * time.Second
)

// helperTransports builds gate 6a's transports: one per helper that is
// both registered in the registry (so its symbolic host is pinned by an
// entry) and present in the supervisor's table. A registry helper the
// table lacks, or a table helper the registry lacks, gets none and is
// logged: requests to it refuse.
func HelperTransports(reg *registry.Registry, h Helpers, log *slog.Logger) map[string]fetch.LocalTransport {
	out := map[string]fetch.LocalTransport{}
	if h == nil {
		return out
	}
	table := h.Helpers()
	registered := map[string]bool{}
	for _, rh := range reg.Helpers() {
		registered[rh.ID] = true
		if !slices.Contains(table, rh.ID) {
			log.Warn("a registry helper has no executable in snugd's helper table; requests to it refuse", "helper", rh.ID)
			continue
		}
		out[rh.ID] = supervisorTransport{h: h, id: rh.ID}
	}
	for _, id := range table {
		if !registered[id] {
			log.Warn("a helper in snugd's table is not in the registry; it is never used", "helper", id)
		}
	}
	return out
}

// supervisorTransport is gate 6a's LocalTransport for one helper: the
// request goes to the helper session of its (app, slot).
type supervisorTransport struct {
	h  Helpers
	id string
}

func (s supervisorTransport) Do(ctx context.Context, req fetch.LocalRequest) (fetch.LocalResponse, error) {
	tok, err := linkdevice.NewToken(req.Token)
	if err != nil {
		return fetch.LocalResponse{}, linkdevice.ErrUnauthorized // a stored value of the wrong shape is no token
	}
	resp, err := s.h.Do(ctx, linkdevice.SessionKey{HelperID: s.id, AppID: req.AppID, Slot: req.Slot}, linkdevice.Request{
		Method: req.Method, PathAndQuery: req.PathAndQuery, Header: req.Header.Clone(), Body: []byte(req.Body), Token: tok,
	})
	if err != nil {
		return fetch.LocalResponse{}, err
	}
	return fetch.LocalResponse{Status: resp.Status, Header: resp.Header, Body: resp.Body}, nil
}

// linkWatch is a live device-link flow's route for the supervisor's
// events: the flow it updates and the poller it hurries.
type linkWatch struct {
	flowID string
	nudge  chan struct{}
	// done is closed when the flow's poller has returned (and retired a
	// staged session it leaves): a newer flow of the slot waits for it.
	done chan struct{}
}

// linkBook maps helper sessions to their live flows.
type LinkBook struct {
	mu sync.Mutex
	by map[linkdevice.SessionKey]*linkWatch
}

func (b *LinkBook) set(k linkdevice.SessionKey, w *linkWatch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[linkdevice.SessionKey]*linkWatch{}
	}
	b.by[k] = w
}

func (b *LinkBook) get(k linkdevice.SessionKey) *linkWatch {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.by[k]
}

// drop removes w if it is still k's.
func (b *LinkBook) drop(k linkdevice.SessionKey, w *linkWatch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by[k] == w {
		delete(b.by, k)
	}
}

// HelperEvent takes one of the supervisor's events (main passes it as
// linkdevice.Config.OnEvent): a new code updates the slot's flow, a link
// status hurries its poller, a supervision change is announced as
// helper-changed. It returns at once.
func (d *Devices) HelperEvent(ev linkdevice.Event) {
	switch ev.Kind {
	case linkdevice.EventQR:
		if w := d.links.get(ev.SessionKey); w != nil {
			d.flows.Update(w.flowID, func(f *Flow) {
				if f.State == FlowQR {
					f.QR, f.QRExpiresAt = ev.QR.Payload, ev.QR.ExpiresAt
				}
			})
		}
	case linkdevice.EventLinkStatus:
		if w := d.links.get(ev.SessionKey); w != nil {
			select {
			case w.nudge <- struct{}{}:
			default:
			}
		}
	case linkdevice.EventState:
		d.hints.Publish(hints.Hint{Type: hints.HelperChanged, ID: ev.HelperID, AppID: ev.AppID, Slot: ev.Slot})
	}
}

// linkTarget returns the helper session an approved device-link row links
// through, with the field its token goes to.
func (d *Devices) linkTarget(c grants.Connection) (linkdevice.SessionKey, string, error) {
	if c.Status != grants.StatusApproved || c.Requirement == nil {
		return linkdevice.SessionKey{}, "", errcode.New(errcode.ConnectionNotApproved, "only an approved connection can link a device")
	}
	p, ok := d.registry.Pairing(c.Requirement)
	if !ok || p.Family != registry.FamilyDeviceLink {
		return linkdevice.SessionKey{}, "", errcode.New(errcode.NotFound, "the connection has no device-link pairing")
	}
	if d.helpers == nil || d.local[p.HelperID] == nil {
		return linkdevice.SessionKey{}, "", errcode.New(errcode.NetFetchFailed, "no local helper serves the connection")
	}
	return linkdevice.SessionKey{HelperID: p.HelperID, AppID: c.AppID, Slot: c.Slot}, p.Field, nil
}

// StartLink starts the device-link flow of (appID, slot) (POST
// …/{slot}/link/start): the helper begins an attempt and the flow, in
// state qr, shows each code it sends. One poller per flow, under the
// flow's context, polls the helper; the one answer that carries the token
// is verified and committed with linkVerifiedAt in one write, and the flow
// ends linked with the session's label. A newer flow for the slot replaces
// this one; expiry, cancel and shutdown cancel the helper's attempt.
//
// A slot that is already linked is relinked only with replace (else
// ALREADY_CONNECTED, nothing changed), and its link is never dropped
// before the new one commits: the new device links in a staged helper
// session beside the live one, which keeps serving requests, and is
// swapped in (linkdevice's Promote) only once verified, in the same step
// as the commit; a cancelled, expired or failed relink retires the staged
// session and leaves the old link as it was. A replacement is journaled
// (relink).
func (d *Devices) StartLink(ctx context.Context, appID, slot string, replace bool) (Flow, error) {
	c, err := d.grants.Connection(ctx, appID, slot)
	if err != nil {
		return Flow{}, err
	}
	key, field, err := d.linkTarget(c)
	if err != nil {
		return Flow{}, err
	}
	st, _, err := d.grants.ConnectionState(ctx, appID, slot)
	if err != nil {
		return Flow{}, err
	}
	if working(st) {
		if !replace {
			return Flow{}, alreadyConnected(appID, slot, "linked", st.LinkVerifiedAt, st.ObtainedAt)
		}
		key = key.At(linkdevice.StageNew)
	}
	host, _ := hostauth.CallerHost(ctx)
	prev := d.links.get(key)
	f, fctx, err := d.flows.Start(ctx, FlowDeviceLink, appID, slot, host, FlowQR, linkFlowTTL)
	if err != nil {
		return Flow{}, err
	}
	if prev != nil {
		// The replaced flow's poller ends now; a staged session it
		// retires must be gone before this flow starts one.
		select {
		case <-prev.done:
		case <-time.After(2 * linkCallTimeout):
		}
	}
	w := &linkWatch{flowID: f.ID, nudge: make(chan struct{}, 1), done: make(chan struct{})}
	d.links.set(key, w)
	sctx, cancel := context.WithTimeout(fctx, linkCallTimeout)
	err = d.helpers.StartLink(sctx, key)
	cancel()
	if errors.Is(err, linkdevice.ErrAlreadyLinked) {
		// The helper holds a session snugd has no token for (a lost
		// commit, a wiped slice, a relink cut short): forget it and start
		// again.
		uctx, cancel := context.WithTimeout(fctx, linkCallTimeout)
		if uerr := d.helpers.Unlink(uctx, key); uerr != nil {
			d.log.Warn("unlink a stale device session", "app", appID, "slot", slot, "helper", key.HelperID, "err", uerr.Error())
		}
		if key.Stage == linkdevice.StageLive {
			d.journal.Act(ctx, journal.ActUnlink, appID, slot, "forgot a device session snugd held no token for")
		}
		err = d.helpers.StartLink(uctx, key)
		cancel()
	}
	if err != nil {
		if key.Stage == linkdevice.StageNew {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linkCallTimeout)
			d.helpers.Unlink(uctx, key) // best effort: the staged session goes
			cancel()
		}
		d.links.drop(key, w)
		close(w.done)
		d.flows.end(f.ID, FlowFailed, "the device helper could not start linking")
		d.log.Warn("device link did not start", "app", appID, "slot", slot, "helper", key.HelperID, "err", err.Error())
		return Flow{}, errcode.New(errcode.NetFetchFailed, "the device helper could not start linking")
	}
	d.log.Info("device link started", "app", appID, "slot", slot, "helper", key.HelperID, "flow", f.ID, "relink", key.Stage == linkdevice.StageNew)
	go d.pollLink(fctx, c, key, field, w)
	cur, _ := d.flows.Get(f.ID)
	return cur, nil
}

// pollLink is a device-link flow's one poller: it lives under the flow's
// context and ends the flow.
func (d *Devices) pollLink(ctx context.Context, before grants.Connection, key linkdevice.SessionKey, field string, w *linkWatch) {
	defer close(w.done)
	defer func() {
		// A relink that did not complete retires its staged session
		// (unless a newer relink of the slot owns it now); the live link
		// is untouched.
		if key.Stage == linkdevice.StageNew && d.links.get(key) == w {
			if f, ok := d.flows.Get(w.flowID); !ok || f.State != FlowLinked {
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linkCallTimeout)
				if err := d.helpers.Unlink(uctx, key); err != nil {
					d.log.Debug("retire a staged device session", "helper", key.HelperID, "err", err.Error())
				}
				cancel()
			}
		}
		d.links.drop(key, w)
	}()
	tick := time.NewTicker(linkPollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// Expired, cancelled, replaced or shutting down: the helper's
			// attempt ends too (best effort), and an expiry shows.
			if f, ok := d.flows.Get(w.flowID); ok && !f.State.Ended() {
				d.flows.end(w.flowID, FlowExpired, "the flow expired; start again")
			}
			if d.links.get(key) != w || key.Stage == linkdevice.StageNew {
				return // a newer flow owns the attempt, or the staged session goes
			}
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linkCallTimeout)
			if err := d.helpers.CancelLink(cctx, key); err != nil && !errors.Is(err, linkdevice.ErrStopped) {
				d.log.Debug("cancel a device link", "helper", key.HelperID, "err", err.Error())
			}
			cancel()
			return
		case <-tick.C:
		case <-w.nudge:
		}
		p, err := d.helpers.PollLink(ctx, key)
		if !p.Token.IsZero() {
			// The one answer with the token: keep it whatever else
			// happens, commit it or unlink.
			d.finishLink(ctx, before, key, field, w.flowID, p)
			return
		}
		if err != nil {
			if ctx.Err() == nil && (errors.Is(err, linkdevice.ErrHelperFailed) || errors.Is(err, linkdevice.ErrUnknownHelper)) {
				d.flows.end(w.flowID, FlowFailed, "the device helper stopped; start again")
				return
			}
			continue // a restart or a slow answer: poll again
		}
		switch p.State {
		case linkdevice.LinkQR:
			if p.QR != nil {
				q := *p.QR
				d.flows.Update(w.flowID, func(f *Flow) {
					if f.QR != q.Payload {
						f.QR, f.QRExpiresAt = q.Payload, q.ExpiresAt
					}
				})
			}
		case linkdevice.LinkExpired:
			d.flows.end(w.flowID, FlowExpired, "the code was not scanned in time; start again")
			return
		case linkdevice.LinkFailed:
			d.flows.end(w.flowID, FlowFailed, "the device link failed; start again")
			return
		case linkdevice.LinkLinked:
			// Linked, but the token went to an earlier answer snugd never
			// saw: the session is useless to snugd.
			d.failLink(key, w.flowID, "the device linked but its token was lost; start again")
			return
		case linkdevice.LinkIdle:
			d.flows.end(w.flowID, FlowFailed, "the device helper abandoned the link; start again")
			return
		}
	}
}

// finishLink verifies the released token and commits it (verify before
// claim); any failure unlinks the helper's session, since its
// token is gone for good. A relink's staged session is promoted to live
// just before the commit and put back aside if the commit fails, so the
// old link serves until the new one is stored, and serves again if it is
// not; the retired session is then unlinked.
func (d *Devices) finishLink(ctx context.Context, before grants.Connection, key linkdevice.SessionKey, field, flowID string, p linkdevice.Poll) {
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linkCallTimeout)
	v, err := d.helpers.Verify(vctx, key, p.Token)
	cancel()
	if err != nil || !v.Alive {
		d.failLink(key, flowID, "the linked device did not pass its check; start again")
		return
	}
	label := v.Label
	if label == "" {
		label = p.Label
	}
	relink := key.Stage == linkdevice.StageNew
	if relink {
		if err := d.helpers.Promote(key, p.Token); err != nil {
			d.log.Warn("swap in a relinked device session", "app", key.AppID, "slot", key.Slot, "helper", key.HelperID, "err", err.Error())
			d.failLink(key, flowID, "the new link could not be put in place; the old link is kept")
			return
		}
	}
	if err := d.commitLink(ctx, before, field, p.Token, relink); err != nil {
		d.log.Warn("device link not stored", "app", key.AppID, "slot", key.Slot, "err", err.Error())
		msg := "the link could not be stored; start again"
		if ec, ok := errors.AsType[*errcode.Error](err); ok && ec.Code == errcode.ConnectionNotApproved {
			msg = "the connection changed while linking; start again"
		}
		if relink {
			if rerr := d.helpers.Restore(key); rerr != nil {
				d.log.Error("put the old device session back", "app", key.AppID, "slot", key.Slot, "helper", key.HelperID, "err", rerr.Error())
			}
			msg = "the new link could not be stored; the old link is kept"
		}
		d.failLink(key, flowID, msg)
		return
	}
	if relink {
		// The swap is settled by the token just committed: the new
		// session stays live and the old one is retired, its helper told
		// so the provider forgets the old device too (best effort: the
		// directory goes regardless). A crash before this is settled the
		// same way at the next start (FinishSwaps).
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linkCallTimeout)
		if _, err := d.helpers.FinishSwap(uctx, key, p.Token); err != nil {
			d.log.Warn("retire the replaced device session", "app", key.AppID, "slot", key.Slot, "helper", key.HelperID, "err", err.Error())
		}
		cancel()
	}
	d.flows.Update(flowID, func(f *Flow) {
		f.State, f.Label, f.QR, f.QRExpiresAt, f.Message = FlowLinked, label, "", time.Time{}, ""
	})
	d.log.Info("device linked", "app", key.AppID, "slot", key.Slot, "helper", key.HelperID, "relink", relink)
}

// FinishSwaps settles, at start, every relink a crash cut short between
// the swap of its sessions and the end of its settling: the session
// whose token the store holds is the live one, the other is unlinked. So
// a crash anywhere in a relink keeps the link that was committed (the
// new one once its commit, with its relink entry, went through; else the
// old one). A restored old link is logged, not journaled: the journal
// never recorded the relink that did not commit.
func (d *Devices) FinishSwaps(ctx context.Context) {
	if d.helpers == nil {
		return
	}
	for _, k := range d.helpers.Swaps() {
		tok, err := d.committedToken(ctx, k)
		if err != nil {
			// Undecidable now: the swap record stays for the next start.
			d.log.Error("read a device link's token to settle its relink", "app", k.AppID, "slot", k.Slot, "helper", k.HelperID, "err", err.Error())
			continue
		}
		uctx, cancel := context.WithTimeout(ctx, linkCallTimeout)
		restored, err := d.helpers.FinishSwap(uctx, k, tok)
		cancel()
		if err != nil {
			d.log.Error("settle a device relink cut short", "app", k.AppID, "slot", k.Slot, "helper", k.HelperID, "err", err.Error())
			continue
		}
		if restored {
			d.log.Warn("a device relink was cut short before it was stored; the previous link is live again", "app", k.AppID, "slot", k.Slot, "helper", k.HelperID)
		} else {
			d.log.Info("a device relink cut short was settled", "app", k.AppID, "slot", k.Slot, "helper", k.HelperID)
		}
	}
}

// committedToken reads the helper token the store holds for k's slot:
// zero when the row is gone, is no approved device link through k's
// helper or holds no token; an error when the store cannot say.
func (d *Devices) committedToken(ctx context.Context, k linkdevice.SessionKey) (linkdevice.Token, error) {
	var tok linkdevice.Token
	err := d.store.View(ctx, func(tx *store.Tx) error {
		row, err := tx.Connection(k.AppID, k.Slot)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		c := grants.FromRow(row)
		if c.Status != grants.StatusApproved || c.Requirement == nil {
			return nil
		}
		p, ok := d.registry.Pairing(c.Requirement)
		if !ok || p.Family != registry.FamilyDeviceLink || p.HelperID != k.HelperID {
			return nil
		}
		secrets, err := tx.SlotSecrets(k.AppID, k.Slot)
		if err != nil {
			return err
		}
		tok, _ = linkdevice.NewToken(string(secrets[p.Field]))
		return nil
	})
	return tok, err
}

// failLink ends a flow failed and forgets the helper's session. A
// relink's staged session is retired by its poller, and the live link it
// would have replaced is never touched.
func (d *Devices) failLink(key linkdevice.SessionKey, flowID, msg string) {
	d.flows.end(flowID, FlowFailed, msg)
	if key.Stage == linkdevice.StageNew {
		return
	}
	uctx, cancel := context.WithTimeout(context.Background(), linkCallTimeout)
	defer cancel()
	if err := d.helpers.Unlink(uctx, key); err != nil {
		d.log.Warn("unlink a failed device link", "helper", key.HelperID, "app", key.AppID, "slot", key.Slot, "err", err.Error())
	}
}

// commitLink is the one write of a device link ("one write, no
// window"): the token as the declared field and _connection with status
// connected and linkVerifiedAt, in one transaction, and only while the row
// is the approved row the flow started on. A relink's journal entry
// commits with it.
func (d *Devices) commitLink(ctx context.Context, before grants.Connection, field string, token linkdevice.Token, relink bool) error {
	err := d.grants.CommitIfUnchanged(ctx, before, grants.CommitChange, func(tx *store.Tx) error {
		if err := writeLink(tx, before.AppID, before.Slot, field, token); err != nil {
			return err
		}
		if relink {
			_, err := tx.InsertJournal(journal.ActEntry(ctx, journal.ActRelink, before.AppID, before.Slot, "a new device link replaced the old one"))
			return err
		}
		return nil
	})
	if errors.Is(err, grants.ErrRowChanged) {
		return errcode.New(errcode.ConnectionNotApproved, "the connection changed while linking")
	}
	return err
}

// writeLink is the one write inside tx: the helper token and the state
// with linkVerifiedAt. Either both commit or neither does.
func writeLink(tx *store.Tx, appID, slot, field string, token linkdevice.Token) error {
	return grants.WriteVerified(tx, appID, slot, field, store.Secret(token.Reveal()), func(s *grants.ConnState, at int64) {
		s.LinkVerifiedAt = &at
	})
}

// CancelLink cancels a live device-link flow (DELETE /v1/flows/{id}): it
// ends failed and the helper's attempt is cancelled. A host cancels only
// the flows it may see; another flow answers NOT_FOUND, an ended one is
// left as it ended.
func (d *Devices) CancelLink(ctx context.Context, flowID string) (Flow, error) {
	f, err := d.Flow(ctx, flowID)
	if err != nil {
		return Flow{}, err
	}
	if f.Kind != FlowDeviceLink {
		return Flow{}, errcode.New(errcode.BadRequest, "only a device-link flow can be cancelled")
	}
	d.flows.end(flowID, FlowFailed, "the link was cancelled")
	f, _ = d.flows.Get(flowID)
	return f, nil
}

// unlinkSlot is revoke's first step on a device-link row: the helper
// forgets the session (best effort: the supervisor removes the session
// directory even when the helper cannot be reached), and a live link flow
// of the slot ends. The wipe of the slice follows regardless.
func (d *Devices) UnlinkSlot(ctx context.Context, appID, slot string) grants.RemoteRevocation {
	if d.helpers == nil {
		return grants.RemoteRevocation{}
	}
	c, err := d.grants.Connection(ctx, appID, slot)
	if err != nil || c.Status != grants.StatusApproved || c.Requirement == nil {
		return grants.RemoteRevocation{} // Revoke refuses it, and nothing was linked
	}
	p, ok := d.registry.Pairing(c.Requirement)
	if !ok || p.Family != registry.FamilyDeviceLink {
		return grants.RemoteRevocation{}
	}
	key := linkdevice.SessionKey{HelperID: p.HelperID, AppID: appID, Slot: slot}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), linkCallTimeout)
	defer cancel()
	// A relink in progress goes with the link: its staged session too.
	for _, st := range []linkdevice.Stage{linkdevice.StageNew, linkdevice.StageOld, linkdevice.StageLive} {
		k := key.At(st)
		if w := d.links.get(k); w != nil {
			d.flows.end(w.flowID, FlowFailed, "the connection was revoked")
		}
		if st != linkdevice.StageLive {
			if err := d.helpers.Unlink(uctx, k); err != nil {
				d.log.Debug("unlink a staged session on revoke", "helper", p.HelperID, "app", appID, "slot", slot, "err", err.Error())
			}
		}
	}
	err = d.helpers.Unlink(uctx, key)
	if st, _, serr := d.grants.ConnectionState(ctx, appID, slot); serr == nil && st.LinkVerifiedAt != nil {
		d.journal.Act(ctx, journal.ActUnlink, appID, slot, "the connection was revoked")
	}
	if err != nil {
		d.log.Warn("unlink on revoke", "helper", p.HelperID, "app", appID, "slot", slot, "err", err.Error())
		return grants.RemoteRevocation{}
	}
	d.log.Info("device unlinked", "helper", p.HelperID, "app", appID, "slot", slot)
	return grants.RemoteRevocation{}
}

// LinkLostMessage is lastError of a device-link connection whose helper
// session is gone: the stored token links to nothing.
func LinkLostMessage(appID, slot string) string {
	return "link lost: run snugd ctl pair link " + appID + " " + slot
}

// noteLinkAnswer marks a device-link connection error when a request
// through its helper was refused NET_AUTH_FAILED and the helper's session
// directory is empty or gone (a wiped state directory, a lost session):
// ctl apps and the status then say the link is lost and how to link
// again, rather than connected. Linking again clears it.
func (d *Devices) noteLinkAnswer(ctx context.Context, f *fetch.Fetch, res fetch.NetResult) {
	if res.Code != errcode.NetAuthFailed || f.Sidecar == "" || f.Grant == nil || f.Grant.Req == nil || d.helpers == nil {
		return
	}
	p, ok := d.registry.Pairing(f.Grant.Req)
	if !ok || p.Family != registry.FamilyDeviceLink || p.HelperID != f.Sidecar {
		return
	}
	appID, slot := f.Call.AppID, f.Grant.Slot
	if d.helpers.HasSession(linkdevice.SessionKey{HelperID: p.HelperID, AppID: appID, Slot: slot}) {
		return
	}
	if d.grants.MarkConnection(ctx, appID, slot, grants.ConnError, LinkLostMessage(appID, slot)) {
		d.log.Warn("a device link's helper session is gone; connection marked error", "app", appID, "slot", slot, "helper", p.HelperID)
	}
}

// helperStatuses folds the supervisor's state into the status: one line
// per helper in its table.
func (d *Devices) HelperStatuses() []HelperStatus {
	out := []HelperStatus{}
	if d.helpers == nil {
		return out
	}
	for _, h := range d.helpers.HelperStatus() {
		out = append(out, HelperStatus{ID: h.HelperID, State: string(h.State), Sessions: h.Sessions, Restarts: h.Restarts, LastError: h.LastError})
	}
	return out
}

// HelperSandbox is the sandbox the helpers run in; ok is false when no
// helper supervisor runs.
func (d *Devices) HelperSandbox() (c linkdevice.Confinement, ok bool) {
	if d.helpers == nil {
		return linkdevice.Confinement{}, false
	}
	return d.helpers.Confinement(), true
}

// FlowQRPNG draws a device-link flow's current QR code as a PNG image (GET
// /v1/flows/{id}?format=png). A flow with no code (another kind, ended,
// or before the first code) is NOT_FOUND.
func FlowQRPNG(f Flow) ([]byte, error) {
	if f.Kind != FlowDeviceLink || f.QR == "" {
		return nil, errcode.New(errcode.NotFound, "the flow shows no QR code")
	}
	img, err := linkdevice.QRPNG(f.QR)
	if err != nil {
		return nil, errcode.New(errcode.Internal, "the QR code could not be drawn")
	}
	return img, nil
}

// HelperStatus is one linked-device helper: its id and its supervisor's
// state.
type HelperStatus struct {
	ID    string
	State string
	// Sessions counts the helper's sessions (one per linked slot) and
	// Restarts their restarts; LastError is a fixed sentence.
	Sessions  int
	Restarts  int
	LastError string
}
