package pairing

import (
	"context"
	"log/slog"
	"time"

	"github.com/snug/snugd/daemon/fetch"
	"github.com/snug/snugd/daemon/grants"
	"github.com/snug/snugd/daemon/hints"
	"github.com/snug/snugd/daemon/hostauth"
	"github.com/snug/snugd/daemon/internal/store"
	"github.com/snug/snugd/daemon/journal"
	"github.com/snug/snugd/daemon/oauth"
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/lan"
)

// Service runs the pairing ceremonies of the pairing families — OAuth sign-in
// and its tokens (oauthflow.go, oauthconn.go), the SimpleFIN token claim
// (claim.go), LAN pairing with a Hue bridge (lan.go) and device links
// through a helper (linkdev.go) — and keeps the flows in progress
// (flows.go). Every network call it makes goes through the executor's
// guarded side client; what a ceremony obtains is stored through the
// grant book's CommitIfUnchanged. Its methods are safe for concurrent use.
type Service struct {
	log      *slog.Logger
	now      func() time.Time
	store    *store.Store
	hints    *hints.Bus
	journal  *journal.Journal
	registry *registry.Registry
	hosts    *hostauth.Book
	grants   Rows
	stage    Stager
	side     *fetch.Side
	// local are the registered helper transports (gate 6a): a device
	// link needs its helper registered there.
	local map[string]fetch.LocalTransport

	// flows are the pairing flows in progress (flows.go).
	flows *FlowBook
	// lanDisc is the one LAN discovery at a time (lan.go).
	lanDisc lanDiscovery
	// helpers is the linked-device supervisor (nil: none) and links the
	// live device-link flows by helper session (linkdev.go).
	helpers Helpers
	links   LinkBook
	// refresher shares one OAuth refresh per slot (oauthconn.go).
	refresher oauth.Refresher
}

// Deps are what a Service is built from.
type Deps struct {
	Log      *slog.Logger
	Now      func() time.Time
	Store    *store.Store
	Hints    *hints.Bus
	Journal  *journal.Journal
	Registry *registry.Registry
	Hosts    *hostauth.Book
	Grants   Rows
	Stager   Stager
	Side     *fetch.Side
	Local    map[string]fetch.LocalTransport
	Helpers  Helpers
	// LANDiscover browses the local network for Hue bridges. Nil means
	// lan.Browse.
	LANDiscover func(context.Context, lan.DiscoverConfig) (lan.Discovery, error)
}

// Rows is what the ceremonies need of the grant book (grants.Book): a
// row and its state as the caller may see them, the follow-up marks of
// an answer, and the one guarded commit of what a ceremony obtained.
type Rows interface {
	Connection(ctx context.Context, appID, slot string) (grants.Connection, error)
	ConnectionState(ctx context.Context, appID, slot string) (grants.ConnState, bool, error)
	CheckApp(ctx context.Context, appID string) error
	View(row store.Connection) grants.Connection
	MarkConnection(ctx context.Context, appID, slot string, status grants.ConnStatus, msg string) bool
	CommitIfUnchanged(ctx context.Context, before grants.Connection, what grants.Commit, write func(tx *store.Tx) error) error
}

// Stager stages a requirement on the user channel (grants.Proposers):
// the LAN ceremony stages the collected address as a change to review.
type Stager interface {
	ProposeUser(ctx context.Context, appID, slot string, raw []byte) (grants.ProposeResult, error)
}

// New returns a Service over deps.
func New(deps Deps) *Service {
	s := &Service{
		log: deps.Log, now: deps.Now, store: deps.Store, hints: deps.Hints, journal: deps.Journal,
		registry: deps.Registry, hosts: deps.Hosts, grants: deps.Grants, stage: deps.Stager, side: deps.Side, local: deps.Local,
		helpers: deps.Helpers,
	}
	s.flows = NewFlowBook(deps.Now, deps.Hints)
	s.lanDisc.discover = deps.LANDiscover
	s.refresher.Now = deps.Now
	return s
}

// Close ends every flow in progress.
func (d *Service) Close() { d.flows.Close() }

// Devices are the ceremonies with a device: LAN pairing with a Hue bridge
// (lan.go) and device links through a helper (linkdev.go). They share the
// service's dependencies and flows.
type Devices struct{ *Service }
