package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snug/snugd/daemon/wire"
)

// access says who may call a route.
type access int

const (
	// open routes take no token: health, pair and redeem. On TCP an Origin
	// is admitted only as the route's originRule says.
	open access = iota
	// authed routes need a paired host's token on TCP (bound to its
	// origin); the ctl channel serves them without one.
	authed
	// ctlOnly routes exist on the ctl channel only. The TCP listener does
	// not have them at all: 404, exactly like an unknown path.
	ctlOnly
)

// originRule says which Origin an open route admits. Authed routes admit
// only the origin of a paired web host, and then only with that host's
// token.
type originRule int

const (
	originPaired  originRule = iota // a paired host's origin (health)
	originPairing                   // any web origin, which must be the one being paired (pair)
	originRedeem                    // the origin of the pairing being redeemed (redeem)
	originNone                      // no Origin at all: the OAuth loopback redirect target
)

// class is a route's time behaviour.
type class int

const (
	// quick routes get the read and write deadline quickTimeout.
	quick class = iota
	// long routes (POST /v1/net) read their body eagerly within the
	// server's read timeout, then lift the read deadline, and may run for
	// longTimeout: a call parked on a confirm must not be cut off.
	long
	// stream routes (GET /v1/events) have no deadline; they end when the
	// client goes away or the daemon shuts down.
	stream
	// bulk routes (export, import; ctl only) move files.
	bulk
)

// Timeouts per class.
const (
	quickTimeout = time.Minute
	longTimeout  = 15 * time.Minute
	bulkTimeout  = 30 * time.Minute
)

// Body limits, enforced before anything parses a byte (the net frame size classes).
const (
	noBody          = 0
	smallBody       = 16 << 10                      // control calls: pair, redeem, codes, empty writer bodies
	requirementBody = 256 << 10                     // a requirement, a directive, an install, credential values
	netBody         = wire.MaxNetFrameBytes + 8<<10 // a net-request frame plus the envelope's appId and delivery
	bulkBody        = 1 << 30                       // an imported user DB (ctl only)
)

// appScope says how a route reaches an app, so that a host reaches only
// the apps it owns or was given (grants.Book.AppVisible). Every
// authed route must say: newTable refuses a table with an authed route
// that does not, and TestEveryAppScopedRouteHidesAnotherHostsApp walks
// the table for a second host.
type appScope int

const (
	// scopeUnset is the zero value: a route that has not said.
	scopeUnset appScope = iota
	// scopeNone routes are about no app (status's own filtering aside:
	// registry, schemas, health, pairing, the ctl channel's own routes).
	scopeNone
	// scopePath routes name the app in their :appId parameter. The
	// chain checks it before the handler runs: another host's app is
	// 404 APP_NOT_FOUND, whatever the route.
	scopePath
	// scopeBody routes name the app in their body (POST /v1/net, POST
	// /v1/standing); the handler checks it before calling the daemon.
	scopeBody
	// scopeFiltered routes list or address items of many apps
	// (confirms, standing approvals, the journal, the hint stream,
	// status); the handler shows a host only its apps' items and answers
	// an item of another app as it answers an unknown id.
	scopeFiltered
)

// route is one entry of the route table.
type route struct {
	method string
	path   string // echo's pattern: literal segments and :params
	access access
	origin originRule // open routes only
	app    appScope
	limit  int64 // the largest body accepted, in bytes
	class  class
	// rawType is the one non-JSON body type the route takes (import's
	// SQLite file); "" for JSON only.
	rawType string
	handle  func(*Server, echo.Context) error
}

// routes is the whole route table, in one place. Both channels are built
// from it: the TCP listener serves every route but the ctlOnly ones; the
// ctl socket serves them all. The security chain (guard.go) reads the
// same entries before routing.
//
// No route here lets an app reach a requirement or grant writer: an app
// never talks to snugd at all (its frames reach snugd only through a
// paired host, and only POST /v1/net takes a frame), and the proposer
// routes are the three proposal channels, each called by a host
// (conformance P3-C12.1-01, P3-C12.1-09, P3-S17-01).
func routes() []route {
	const (
		get  = http.MethodGet
		post = http.MethodPost
		put  = http.MethodPut
		del  = http.MethodDelete
		conn = "/v1/apps/:appId/connections/:slot"
	)
	return []route{
		{method: get, path: "/v1/health", access: open, app: scopeNone, origin: originPaired, limit: noBody, handle: (*Server).health},
		{method: post, path: "/v1/hosts/pair", access: open, app: scopeNone, origin: originPairing, limit: smallBody, handle: (*Server).pair},
		{method: post, path: "/v1/hosts/pair/:pairingId/redeem", access: open, app: scopeNone, origin: originRedeem, limit: smallBody, handle: (*Server).redeem},

		{method: get, path: "/v1/hosts", access: ctlOnly, app: scopeNone, limit: noBody, handle: (*Server).hosts},
		{method: post, path: "/v1/hosts/approve", access: ctlOnly, app: scopeNone, limit: smallBody, handle: (*Server).approveHost},
		{method: post, path: "/v1/hosts/deny", access: ctlOnly, app: scopeNone, limit: smallBody, handle: (*Server).denyHost},
		{method: post, path: "/v1/hosts/invite", access: ctlOnly, app: scopeNone, limit: smallBody, handle: (*Server).inviteHost},
		{method: del, path: "/v1/hosts/:hostId", access: ctlOnly, app: scopeNone, limit: noBody, handle: (*Server).deleteHost},

		{method: get, path: "/v1/status", access: authed, app: scopeFiltered, limit: noBody, handle: (*Server).status},
		{method: get, path: "/v1/events", access: authed, app: scopeFiltered, limit: noBody, class: stream, handle: (*Server).events},

		{method: get, path: "/v1/apps", access: ctlOnly, limit: noBody, handle: (*Server).apps},
		{method: get, path: "/v1/apps/:appId/connections", access: authed, app: scopePath, limit: noBody, handle: (*Server).connections},
		{method: put, path: conn, access: authed, app: scopePath, limit: requirementBody, handle: (*Server).putConnection},
		{method: post, path: "/v1/apps/:appId/directives", access: authed, app: scopePath, limit: requirementBody, handle: (*Server).directive},
		{method: post, path: "/v1/apps/:appId/install", access: authed, app: scopePath, limit: requirementBody, handle: (*Server).install},
		{method: get, path: conn + "/review", access: authed, app: scopePath, limit: noBody, handle: (*Server).review},
		{method: post, path: conn + "/option", access: authed, app: scopePath, limit: smallBody, handle: (*Server).pickOption},
		{method: post, path: conn + "/approve", access: authed, app: scopePath, limit: smallBody, handle: (*Server).approve},
		{method: post, path: conn + "/reapprove", access: authed, app: scopePath, limit: smallBody, handle: (*Server).reapprove},
		{method: post, path: conn + "/revoke", access: authed, app: scopePath, limit: smallBody, handle: (*Server).revoke},
		{method: post, path: conn + "/reconnect", access: authed, app: scopePath, limit: smallBody, handle: (*Server).reconnect},
		{method: put, path: conn + "/credentials", access: authed, app: scopePath, limit: requirementBody, handle: (*Server).credentials},
		{method: post, path: conn + "/test", access: authed, app: scopePath, limit: smallBody, class: long, handle: (*Server).testConnection},
		{method: post, path: conn + "/claim", access: authed, app: scopePath, limit: smallBody, handle: (*Server).claim},
		{method: post, path: conn + "/lan/address", access: authed, app: scopePath, limit: smallBody, handle: (*Server).lanAddress},
		{method: post, path: conn + "/lan/probe", access: authed, app: scopePath, limit: smallBody, handle: (*Server).lanProbe},
		{method: post, path: conn + "/lan/pair", access: authed, app: scopePath, limit: smallBody, handle: (*Server).lanPair},
		{method: post, path: "/v1/lan/discover", access: authed, app: scopeFiltered, limit: smallBody, handle: (*Server).lanDiscover},
		{method: post, path: conn + "/link/start", access: authed, app: scopePath, limit: smallBody, handle: (*Server).linkStart},
		{method: get, path: "/v1/apps/:appId/facts", access: authed, app: scopePath, limit: noBody, handle: (*Server).facts},

		{method: post, path: "/v1/net", access: authed, app: scopeBody, limit: netBody, class: long, handle: (*Server).net},
		{method: get, path: "/v1/confirms", access: authed, app: scopeFiltered, limit: noBody, handle: (*Server).confirms},
		{method: get, path: "/v1/confirms/:id", access: authed, app: scopeFiltered, limit: noBody, handle: (*Server).confirm},
		{method: post, path: "/v1/confirms/:id", access: authed, app: scopeFiltered, limit: smallBody, handle: (*Server).decide},
		{method: get, path: "/v1/standing", access: authed, app: scopeFiltered, limit: noBody, handle: (*Server).standings},
		{method: post, path: "/v1/standing", access: authed, app: scopeBody, limit: smallBody, handle: (*Server).arm},
		{method: del, path: "/v1/standing/:id", access: authed, app: scopeFiltered, limit: noBody, handle: (*Server).disarm},
		{method: post, path: "/v1/standing/kill", access: authed, app: scopeFiltered, limit: smallBody, handle: (*Server).kill},
		{method: get, path: "/v1/journal", access: authed, app: scopeFiltered, limit: noBody, handle: (*Server).journal},
		{method: get, path: "/v1/flows/:flowId", access: authed, app: scopeFiltered, limit: noBody, handle: (*Server).flow},
		{method: del, path: "/v1/flows/:flowId", access: authed, app: scopeFiltered, limit: noBody, handle: (*Server).cancelFlow},
		{method: post, path: "/v1/oauth/start", access: authed, app: scopeBody, limit: smallBody, handle: (*Server).oauthStart},
		{method: post, path: "/v1/oauth/callback", access: authed, app: scopeFiltered, limit: smallBody, handle: (*Server).oauthWebCallback},
		{method: get, path: "/oauth/callback", access: open, app: scopeNone, origin: originNone, limit: noBody, handle: (*Server).oauthLoopback},

		{method: get, path: "/v1/registry", access: authed, app: scopeNone, limit: noBody, handle: (*Server).registry},
		{method: get, path: "/v1/schemas", access: authed, app: scopeNone, limit: noBody, handle: (*Server).schemas},
		{method: get, path: "/v1/schemas/:type", access: authed, app: scopeNone, limit: noBody, handle: (*Server).schema},

		{method: get, path: "/v1/apps/:appId/access", access: ctlOnly, app: scopePath, limit: noBody, handle: (*Server).appAccess},
		{method: post, path: "/v1/apps/:appId/shares", access: ctlOnly, app: scopePath, limit: smallBody, handle: (*Server).shareApp},
		{method: del, path: "/v1/apps/:appId/shares/:hostId", access: ctlOnly, app: scopePath, limit: noBody, handle: (*Server).unshareApp},

		{method: post, path: "/v1/export", access: ctlOnly, app: scopeNone, limit: noBody, class: bulk, handle: (*Server).export},
		{method: post, path: "/v1/import", access: ctlOnly, app: scopeNone, limit: bulkBody, class: bulk, rawType: sqliteType, handle: (*Server).importDB},
	}
}

// table is one channel's routes, matched by the security chain before
// echo routes the request.
type table struct {
	routes []*route
	pats   [][]string // each route's path, split into segments once
}

func newTable(ctl bool) *table {
	t := &table{}
	for _, r := range routes() {
		if r.access == authed && r.app == scopeUnset {
			// A programming error: a host could reach another host's
			// app through the route. Refuse to build the API at all.
			panic("api: route " + r.method + " " + r.path + " does not say how it reaches an app")
		}
		if r.access == ctlOnly && !ctl {
			continue
		}
		t.routes = append(t.routes, &r)
		t.pats = append(t.pats, strings.Split(r.path, "/"))
	}
	return t
}

// match finds the route for method and the escaped path, with its
// parameters unescaped. When no route has the method, it returns the
// methods the path does have (none: an unknown path).
func (t *table) match(method, escapedPath string) (rt *route, params map[string]string, methods []string) {
	segs := strings.Split(escapedPath, "/")
	for i, r := range t.routes {
		p, ok := matchPattern(t.pats[i], segs)
		if !ok {
			continue
		}
		if r.method == method {
			return r, p, nil
		}
		methods = append(methods, r.method)
	}
	return nil, nil, methods
}

// matchPattern matches a pattern's segments against an escaped path's: a
// literal segment must be equal byte for byte (so "%761" is not "v1"); a
// :param takes one non-empty segment, unescaped.
func matchPattern(pat, segs []string) (map[string]string, bool) {
	if len(pat) != len(segs) {
		return nil, false
	}
	var params map[string]string
	for i, p := range pat {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			v, err := pathUnescape(segs[i])
			if err != nil || v == "" {
				return nil, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[name] = v
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return params, true
}
