package pairing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/snug/snugd/daemon/errcode"
	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/lan"
)

// The exchange pairing family, Philips Hue's: discover
// bridges on the user's network, collect one's address into a lanHost row,
// approve (which freezes it), then pair — in that order
// (P3-C12.11-09). Pairing is verify before claim: the verify probe
// (GET /api/0/config) must answer like a Hue bridge, its leaf certificate
// becomes the candidate pin, and the link-button POST /api runs only on
// connections presenting that leaf. The application key and the pin are
// committed with lanVerifiedAt in one transaction. Every later request is
// pinned by the LAN transport; a changed certificate marks the connection
// error and is journaled, and only an explicit re-pin replaces the pin.
//
// The network half is lan/'s (a leaf: plain values in, plain results
// out); this file holds the preconditions, the flow and the commit. The
// dial function is the LAN transport's (Config.LAN.Dial; nil is lan's own
// dialer that reaches nothing but the row's frozen address).

// pinChangedMessage is lastError of a LAN connection whose device
// presented a certificate that is not the pin, and the flow's refusal of a
// re-pin whose certificate is not the one the person accepted.
const PinChangedMessage = "the bridge's certificate changed"

// lanFlowTTL bounds a pairing flow: the verify probe, the link window
// (at most lan.MaxPairWindow) and the commit.
const lanFlowTTL = 2 * time.Minute

// lanDiscovery holds the one discovery allowed at a time.
type lanDiscovery struct {
	mu       sync.Mutex
	discover func(context.Context, lan.DiscoverConfig) (lan.Discovery, error)
}

// LANRefusedError is a refused verify probe or pairing: Error() is one of
// lan's fixed sentences. Its code is LAN_REFUSED.
type LANRefusedError struct{ Err error }

func (e *LANRefusedError) Error() string { return e.Err.Error() }
func (e *LANRefusedError) Unwrap() error { return e.Err }

// ErrorCode reports LAN_REFUSED.
func (e *LANRefusedError) ErrorCode() errcode.Code { return errcode.LANRefused }

// lanRefusal wraps one of lan's fixed refusals; anything else (ctx's error)
// becomes a fixed sentence too, so no library text ever reaches a caller.
func lanRefusal(err error) error {
	for _, known := range []error{lan.ErrNoInterface, lan.ErrNotPrivate, lan.ErrUnreachable, lan.ErrNotBridge,
		lan.ErrCertificateChanged, lan.ErrLinkTimeout, lan.ErrPairingRefused, lan.ErrBadAnswer, lan.ErrVanished, lan.ErrBadCandidate} {
		if errors.Is(err, known) {
			return &LANRefusedError{Err: known}
		}
	}
	return &LANRefusedError{Err: lan.ErrUnreachable}
}

// checkLANPolicy refuses every LAN act under the browser transport policy:
// that profile admits no LAN request.
func (d *Devices) checkLANPolicy() error {
	if !d.side.Desktop() {
		return errcode.New(errcode.Forbidden, "the browser transport policy admits no device on the local network")
	}
	return nil
}

// DiscoverLAN browses the local network for Hue bridges (lan.Browse),
// for timeout (zero: 3 s, at most 10 s). One discovery runs at a time: a
// second is RATE_LIMITED. After the browse, every approved, pinned LAN row
// whose bridge answered at another address gets that address staged for
// re-approval (relocateLAN), among the apps the caller may reach.
// Refused under the browser policy.
func (d *Devices) DiscoverLAN(ctx context.Context, timeout time.Duration) (lan.Discovery, error) {
	if err := d.checkLANPolicy(); err != nil {
		return lan.Discovery{}, err
	}
	if !d.lanDisc.mu.TryLock() {
		return lan.Discovery{}, errcode.New(errcode.RateLimited, "a discovery is already running; try again when it ends")
	}
	defer d.lanDisc.mu.Unlock()
	discover := d.lanDisc.discover
	if discover == nil {
		discover = lan.Browse
	}
	found, err := discover(ctx, lan.DiscoverConfig{Timeout: timeout})
	if err != nil {
		if errors.Is(err, lan.ErrNoInterface) {
			return lan.Discovery{}, &LANRefusedError{Err: lan.ErrNoInterface}
		}
		d.log.Warn("lan discovery failed", "err", err)
		return lan.Discovery{}, errcode.New(errcode.Internal, "the local network could not be browsed")
	}
	d.relocateLAN(ctx, found.Bridges)
	return found, nil
}

// relocateLAN stages a moved bridge's new address on every approved,
// pinned LAN row ("a bridge that moved"): the pin, not the
// announced id, says it is the same bridge. The key and the pin carry
// over; re-approval shows the address diff. Failures are logged, never
// fatal to the discovery.
func (d *Devices) relocateLAN(ctx context.Context, bridges []lan.Bridge) {
	if len(bridges) == 0 {
		return
	}
	var rows []store.Connection
	if err := d.store.View(ctx, func(tx *store.Tx) error {
		all, err := tx.AllConnections()
		rows = all
		return err
	}); err != nil {
		d.log.Error("list connections for relocation", "err", err)
		return
	}
	for _, row := range rows {
		if d.grants.CheckApp(ctx, row.AppID) != nil {
			continue // a host relocates only the rows of apps it may reach
		}
		c := d.grants.View(row)
		if c.Status != grants.StatusApproved || c.Requirement == nil || c.Requirement.LANHost == nil || len(c.AllowedHosts) != 1 || c.PendingJSON != "" {
			continue
		}
		st, ok, err := d.grants.ConnectionState(ctx, c.AppID, c.Slot)
		if err != nil || !ok || st.LANPin == nil {
			continue
		}
		move, moved := lan.ProveMove(ctx, bridges, c.AllowedHosts[0], st.LANPin.Fingerprint, st.LANPin.CN, d.side.LANDial())
		if !moved {
			continue
		}
		if _, err := d.stageLANAddress(ctx, c, move.To.Address.String()); err != nil {
			d.log.Warn("stage a moved bridge's address", "app", c.AppID, "slot", c.Slot, "err", err)
			continue
		}
		d.log.Info("a paired bridge answered at a new address; the change is staged for re-approval", "app", c.AppID, "slot", c.Slot)
	}
}

// CollectLANAddress writes the post-collection shape of a lanHost row:
// its requirement with declaredApiHosts holding exactly address,
// through the user channel. On a declared row it replaces the row (approve
// it next); on an approved row it is staged, and re-approval shows the
// diff. address must be a canonical RFC-1918 dotted quad, checked by the
// class's own validator before and independently of the schema.
// The row must declare a lanHost.
func (d *Devices) CollectLANAddress(ctx context.Context, appID, slot, address string) (grants.ProposeResult, error) {
	if !requirement.IsRFC1918Literal(address) {
		return grants.ProposeResult{}, errcode.New(errcode.BadRequest, lan.ErrNotPrivate.Error())
	}
	c, err := d.grants.Connection(ctx, appID, slot)
	if err != nil {
		return grants.ProposeResult{}, err
	}
	if c.Requirement == nil || c.Requirement.LANHost == nil {
		return grants.ProposeResult{}, errcode.New(errcode.NotFound, "the connection declares no device on the local network (lanHost)")
	}
	if c.Status == grants.StatusRevoked {
		return grants.ProposeResult{}, errcode.New(errcode.ConnectionRevoked, "the connection was revoked: only an explicit reconnect revives it")
	}
	return d.stageLANAddress(ctx, c, address)
}

// stageLANAddress proposes c's requirement (the staged one when there is
// one) with address as its one host.
func (d *Devices) stageLANAddress(ctx context.Context, c grants.Connection, address string) (grants.ProposeResult, error) {
	base := c.RequirementJSON
	if c.PendingJSON != "" && c.Pending != nil && c.Pending.LANHost != nil {
		base = c.PendingJSON
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(base), &doc); err != nil {
		return grants.ProposeResult{}, grants.Internal(d.log, "read a LAN requirement", err)
	}
	doc["declaredApiHosts"] = []string{address}
	raw, err := json.Marshal(doc)
	if err != nil {
		return grants.ProposeResult{}, grants.Internal(d.log, "write a LAN requirement", err)
	}
	return d.stage.ProposeUser(ctx, c.AppID, c.Slot, raw)
}

// lanRow checks the preconditions of probing or pairing (appID, slot) and
// returns the row, its frozen address and its current state: the row is
// approved (P3-C12.11-09: collect, approve, freeze, then pair), declares a
// lanHost, its frozen ceiling holds exactly its one collected literal, its
// registry entry pairs by exchange, and the policy is desktop.
func (d *Devices) lanRow(ctx context.Context, appID, slot string) (grants.Connection, string, grants.ConnState, error) {
	if err := d.checkLANPolicy(); err != nil {
		return grants.Connection{}, "", grants.ConnState{}, err
	}
	c, err := d.grants.Connection(ctx, appID, slot)
	if err != nil {
		return grants.Connection{}, "", grants.ConnState{}, err
	}
	if c.Requirement == nil || c.Requirement.LANHost == nil {
		return grants.Connection{}, "", grants.ConnState{}, errcode.New(errcode.NotFound, "the connection declares no device on the local network (lanHost)")
	}
	if c.Status != grants.StatusApproved {
		return grants.Connection{}, "", grants.ConnState{}, errcode.New(errcode.ConnectionNotApproved, "collect the bridge's address and approve the connection before pairing")
	}
	hosts := c.Requirement.DeclaredAPIHosts
	if len(hosts) != 1 || !requirement.IsRFC1918Literal(hosts[0]) || !slices.Equal(c.AllowedHosts, hosts) {
		return grants.Connection{}, "", grants.ConnState{}, errcode.New(errcode.ConnectionNotApproved, "the approved connection holds no collected address: collect it and approve again before pairing")
	}
	p, ok := d.registry.Pairing(c.Requirement)
	if !ok || p.Family != registry.FamilyExchange {
		return grants.Connection{}, "", grants.ConnState{}, errcode.New(errcode.NotFound, "the connection has no exchange pairing")
	}
	st, _, err := d.grants.ConnectionState(ctx, appID, slot)
	if err != nil {
		return grants.Connection{}, "", grants.ConnState{}, err
	}
	return c, hosts[0], st, nil
}

// LANProbe is what the verify probe found at a row's frozen address,
// beside the pin it holds: what a person compares before a re-pin.
type LANProbe struct {
	BridgeID            string
	ModelID             string
	Name                string
	Fingerprint         string
	CN                  string // diagnostic only
	PreviousFingerprint string // "" when the row holds no pin
}

// ProbeLAN runs the verify probe (GET /api/0/config) against the frozen
// address of an approved LAN row and reports the bridge and the
// certificate it presents. Nothing is stored. Refusals are lan's fixed
// sentences (LAN_REFUSED).
func (d *Devices) ProbeLAN(ctx context.Context, appID, slot string) (LANProbe, error) {
	_, addr, st, err := d.lanRow(ctx, appID, slot)
	if err != nil {
		return LANProbe{}, err
	}
	cand, err := lan.Verify(ctx, addr, d.side.LANDial())
	if err != nil {
		return LANProbe{}, lanRefusal(err)
	}
	p := LANProbe{BridgeID: cand.Bridge.BridgeID, ModelID: cand.Bridge.ModelID, Name: cand.Bridge.Name, Fingerprint: cand.Pin, CN: cand.CN}
	if st.LANPin != nil {
		p.PreviousFingerprint = st.LANPin.Fingerprint
	}
	return p, nil
}

// LANPairOptions says what a pairing may replace. Repin must be set when
// the row already holds a pin; Accept is then the fingerprint the person
// accepted (from ProbeLAN), and the bridge must present exactly it.
type LANPairOptions struct {
	Repin  bool
	Accept string
}

// PairLAN starts the link-button exchange for an approved LAN row as a
// lan-pair flow: verifying (the verify probe; its leaf is the candidate
// pin), press-button with a deadline (the bridge answers error 101 until
// its button is pressed), then paired (the key, the pin and lanVerifiedAt
// committed in one transaction) or failed with one of lan's fixed
// sentences. A row that holds a pin is re-pinned only with opts.Repin and
// the accepted fingerprint; without them it is refused.
func (d *Devices) PairLAN(ctx context.Context, appID, slot string, opts LANPairOptions) (Flow, error) {
	c, addr, st, err := d.lanRow(ctx, appID, slot)
	if err != nil {
		return Flow{}, err
	}
	p, _ := d.registry.Pairing(c.Requirement)
	previous := ""
	if st.LANPin != nil {
		previous = st.LANPin.Fingerprint
		if !opts.Repin && working(st) {
			return Flow{}, errcode.New(errcode.AlreadyConnected, fmt.Sprintf(
				"%s/%s is already paired: pair again only with repin and the fingerprint the person accepted (the old key keeps working until the new one is stored)", appID, slot))
		}
		if !opts.Repin {
			return Flow{}, errcode.New(errcode.BadRequest, "the bridge is already paired: re-pin explicitly to replace its certificate pin")
		}
		if opts.Accept == "" {
			return Flow{}, errcode.New(errcode.BadRequest, "a re-pin names the new certificate fingerprint the person accepted")
		}
	}
	hostID, _ := hostauth.CallerHost(ctx)
	f, fctx, err := d.flows.Start(ctx, FlowLANPair, appID, slot, hostID, FlowVerifying, lanFlowTTL)
	if err != nil {
		return Flow{}, err
	}
	d.flows.Update(f.ID, func(fl *Flow) { fl.PreviousFingerprint = previous })
	go d.runLANPair(fctx, f.ID, c, addr, p.Field, previous, opts.Accept)
	got, _ := d.flows.Get(f.ID)
	return got, nil
}

// runLANPair is the flow's work, under its context.
func (d *Devices) runLANPair(ctx context.Context, flowID string, c grants.Connection, addr, field, previous, accept string) {
	fail := func(err error) {
		r := lanRefusal(err)
		d.log.Warn("lan pairing refused", "app", c.AppID, "slot", c.Slot, "reason", r.Error())
		d.flows.end(flowID, FlowFailed, r.Error())
	}
	dial := d.side.LANDial()
	cand, err := lan.Verify(ctx, addr, dial)
	if err != nil {
		fail(err)
		return
	}
	if accept != "" && cand.Pin != accept {
		fail(lan.ErrCertificateChanged)
		return
	}
	d.flows.Update(flowID, func(fl *Flow) {
		fl.Fingerprint, fl.Label = cand.Pin, cand.Bridge.Name
	})
	host, _ := os.Hostname()
	creds, err := lan.Pair(ctx, cand, lan.PairConfig{
		Dial: dial,
		Host: host,
		Status: func(p lan.Progress) {
			d.flows.Update(flowID, func(fl *Flow) {
				fl.State, fl.Deadline = FlowPressButton, p.Deadline
				fl.Message = "press the round link button on the bridge now"
			})
		},
	})
	if err != nil {
		fail(err)
		return
	}
	if err := d.commitLANPair(ctx, c, field, creds, previous != ""); err != nil {
		d.flows.end(flowID, FlowFailed, err.Error())
		return
	}
	d.log.Info("hue bridge paired", "app", c.AppID, "slot", c.Slot, "repin", previous != "")
	d.flows.Update(flowID, func(fl *Flow) { fl.State, fl.Message = FlowPaired, "" })
}

// errLANRowChanged is the refusal of a commit whose row changed while the
// pairing ran.
var errLANRowChanged = errcode.New(errcode.ConnectionNotApproved, "the connection changed while pairing: approve it again and pair again")

// commitLANPair writes the application key, the pin and lanVerifiedAt in
// one transaction ("one write, no window"), after re-reading the
// row: a row revoked or re-approved while the exchange ran takes nothing.
// The client key is not kept: no requirement field declares it (CLIP v2
// needs only the application key). A re-pair (replacing) journals a
// credential-replace act in the same transaction; until it commits the
// old key and pin stay.
func (d *Devices) commitLANPair(ctx context.Context, before grants.Connection, field string, creds lan.Credentials, replacing bool) error {
	err := d.grants.CommitIfUnchanged(ctx, before, grants.CommitChange, func(tx *store.Tx) error {
		if err := writeLANPair(tx, before.AppID, before.Slot, field, creds); err != nil {
			return err
		}
		return journalReplace(ctx, tx, before, replacing, "a Hue re-pair replaced the application key and the certificate pin")
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, grants.ErrRowChanged):
		return errLANRowChanged
	case errors.Is(err, store.ErrStorageFull):
		return grants.Internal(d.log, "store the bridge's application key", err) // 507 STORAGE_FULL
	default:
		d.log.Error("store the bridge's application key", "app", before.AppID, "slot", before.Slot, "err", err)
		return errcode.New(errcode.Internal, "the bridge's application key could not be stored: pair again")
	}
}

// writeLANPair is the one write inside tx: the key field and the state
// with lanPin and lanVerifiedAt. Either both commit or neither does.
func writeLANPair(tx *store.Tx, appID, slot, field string, creds lan.Credentials) error {
	return grants.WriteVerified(tx, appID, slot, field, store.Secret(creds.Username.Reveal()), func(s *grants.ConnState, at int64) {
		s.LANVerifiedAt = &at
		s.LANPin = &grants.LANPin{Fingerprint: creds.Pin, CN: creds.CN}
	})
}

// noteAnswer is the executor's follow-up on every answer: the token-claim
// family's revoked access, the LAN pin's changed certificate and a device
// link's lost session.
func (d *Devices) NoteAnswer(ctx context.Context, f *fetch.Fetch, res fetch.NetResult) {
	d.noteClaimAnswer(ctx, f, res)
	d.noteLANAnswer(ctx, f, res)
	d.noteLinkAnswer(ctx, f, res)
}

// noteLANAnswer marks a LAN connection error when its device presented a
// certificate that is not the pin (the handshake was refused before a
// request byte; the request answered NET_FETCH_FAILED and is never
// retried), and journals the change. Only an explicit re-pin clears it.
func (d *Devices) noteLANAnswer(ctx context.Context, f *fetch.Fetch, res fetch.NetResult) {
	if !f.PinBad || f.Grant == nil {
		return
	}
	appID, slot := f.Call.AppID, f.Grant.Slot
	if d.grants.MarkConnection(ctx, appID, slot, grants.ConnError, PinChangedMessage) {
		d.log.Warn("a LAN device presented another certificate than its pin; connection marked error", "app", appID, "slot", slot)
		d.journal.Add(store.JournalEntry{At: d.now(), AppID: appID, Slot: slot, Host: f.Host, Method: f.Req.Method,
			Outcome: "refused", Gate: "fetch", Code: string(res.Code), Note: PinChangedMessage})
	}
}
