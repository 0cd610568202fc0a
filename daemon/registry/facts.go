package registry

import (
	"errors"
	"slices"
	"strings"

	"github.com/snug/snugd/daemon/requirement"
)

// The render-time facts. They are answered from the registry for
// a requirement row when a wizard renders; they are never persisted and
// never become part of a requirement. Each binds to what the row will
// actually do, not to the name it carries:
//
//   - the OAuth facts (WebRegistration, DesktopRedirect) bind to the row's
//     authorize and token URLs, which must byte-match an OAuth option's
//     pin: a walkthrough or posture the registry reviewed must never dress
//     a flow whose token exchange goes somewhere it never vouched for;
//   - the other facts (BrowserCallable, Pairing) bind to the row's frozen
//     ceiling, which must be non-empty and lie wholly within one entry's
//     pinned hosts; a LAN row, whose one host is the user's own address,
//     binds by its lanHost and its provider name.
//
// A row that binds to no entry gets the fact's "unknown" or "not vouched"
// answer.

// Errors of DesktopRedirect: fixed sentences a wizard may show as they are.
var (
	ErrRedirectUnvouched = errors.New("snugd's registry does not vouch for a desktop sign-in redirect for this provider, so the desktop sign-in cannot start; snugd will not guess one")
	ErrNoRedirectFlow    = errors.New("this connection's kind has no sign-in redirect")
	ErrLoopbackNeedsPKCE = errors.New("a loopback sign-in redirect needs pkce, and this connection turns pkce off")
)

// oauthEntry returns the entry one of whose OAuth options pins exactly r's
// authorize and token URLs.
func (g *Registry) oauthEntry(r *requirement.Requirement) *entry {
	if r.Endpoints.Authorize == "" || r.Endpoints.Token == "" {
		return nil
	}
	return g.byEndpoints[endpointPin{r.Endpoints.Authorize, r.Endpoints.Token}]
}

// boundEntry returns the entry whose pinned hosts hold r's whole ceiling,
// or, for a LAN row, the LAN entry its name names.
func (g *Registry) boundEntry(r *requirement.Requirement) *entry {
	hosts := requirement.DeriveAllowedHosts(r)
	if r.LANHost != nil {
		e := g.byName[foldName(r.Provider.Name)]
		if e == nil || !e.isLAN() || len(hosts) > 1 || (len(hosts) == 1 && !requirement.IsRFC1918Literal(hosts[0])) {
			return nil
		}
		return e
	}
	if len(hosts) == 0 {
		return nil
	}
	e := g.byHost[hosts[0]]
	if e == nil {
		return nil
	}
	for _, h := range hosts[1:] {
		if g.byHost[h] != e {
			return nil
		}
	}
	return e
}

// WebRegistration returns the walkthrough a web-surface wizard shows for
// r, and whether it is the registry's pinned web walkthrough. The pin
// applies only when r's authorize and token URLs byte-match an OAuth
// option of an entry with web seats (then the entry vouches the
// origin-callback posture too). Otherwise — an entry without web seats, a
// row that merely carries a pinned provider's name with endpoints of its
// own, a row of no entry — the row keeps its own registration, returned as
// a copy with false: an absent web seat never refuses. Fields, scopes,
// hosts and templates are the row's always; WebRegistration reads r and
// changes nothing.
func (g *Registry) WebRegistration(r *requirement.Requirement) (requirement.Registration, bool) {
	if e := g.oauthEntry(r); e != nil && e.webRegistration != nil {
		return cloneRegistration(*e.webRegistration), true
	}
	return cloneRegistration(r.Registration), false
}

// DesktopRedirect answers whether the desktop OAuth flow may start for r,
// and with which redirect posture. It refuses, with a fixed sentence, a
// row whose kind has no redirect (ErrNoRedirectFlow), a row whose
// endpoints are not an option pin of an entry that vouches a desktop
// posture (ErrRedirectUnvouched: the wizard refuses honestly at entry and
// never guesses), and a loopback posture beside a row that turns pkce off
// (ErrLoopbackNeedsPKCE).
func (g *Registry) DesktopRedirect(r *requirement.Requirement) (RedirectPosture, error) {
	if r.Kind != requirement.KindOAuth2AuthCode {
		return "", ErrNoRedirectFlow
	}
	e := g.oauthEntry(r)
	if e == nil || e.desktopRedirect == "" {
		return "", ErrRedirectUnvouched
	}
	if r.PKCE != nil && !*r.PKCE {
		return "", ErrLoopbackNeedsPKCE
	}
	return e.desktopRedirect, nil
}

// BrowserCallable returns the entry's documented fact for r: a new true or
// false, or nil when the fact is unknown — the entry does not say, or r
// binds to no entry. A wizard discloses nil as unknown, never as "works".
func (g *Registry) BrowserCallable(r *requirement.Requirement) *bool {
	e := g.boundEntry(r)
	if e == nil {
		return nil
	}
	return clonePtr(e.browserCallable)
}

// Pairing returns the pairing family data for r: the entry's pairing seat,
// when r binds to the entry and carries the option's kind and the field the
// ceremony fills. ok is false when r needs no pairing the registry knows.
func (g *Registry) Pairing(r *requirement.Requirement) (Pairing, bool) {
	e := g.boundEntry(r)
	if e == nil || e.pairing == nil {
		return Pairing{}, false
	}
	o := e.options[0] // a pairing entry has exactly one option
	if r.Kind != o.base.Kind || !slices.ContainsFunc(r.Fields, func(f requirement.Field) bool { return f.Key == e.pairing.Field }) {
		return Pairing{}, false
	}
	p := *e.pairing
	p.Exchange = clonePtr(p.Exchange)
	return p, true
}

// HelperForHost reports whether host is the symbolic host of a registered
// helper, and which. Matching is exact and byte for byte, because the
// executor's SSRF gate stands down for exactly these names and for nothing
// else: "sim.sidecar.invalid" is the sim helper's; "x.sim.sidecar.invalid",
// "sim.sidecar.invalid." (trailing dot) and "SIM.sidecar.invalid" are not.
// Pass the host normalized (requirement.NormalizeHost lowercases it and
// refuses the trailing dot); an unnormalized spelling fails closed here.
func (g *Registry) HelperForHost(host string) (helperID string, ok bool) {
	helperID, ok = g.helpers[host]
	return helperID, ok
}

// Helpers returns every registered helper, sorted by ID: the table the
// helper supervisor is built from.
func (g *Registry) Helpers() []Helper {
	var out []Helper
	for _, e := range g.entries {
		if e.helper != nil {
			out = append(out, *e.helper)
		}
	}
	slices.SortFunc(out, func(a, b Helper) int { return strings.Compare(a.ID, b.ID) })
	return out
}
