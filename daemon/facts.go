package daemon

import (
	"strings"

	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/scrub"
)

// Fact is what the provider chat lane's context may know about one
// connection (§16, API.md GET /v1/apps/{appId}/facts): never a credential
// and never a resolved LAN address.
type Fact struct {
	Slot     string
	Provider string
	Kind     requirement.Kind
	Status   Status
	// Scopes is a one-line summary of the requirement's scopes ("" when it
	// has none).
	Scopes string
	// Hosts are the public hosts the connection may reach: the frozen
	// ceiling of an approved row, the requested hosts of any other. A LAN
	// row lists none: it is addressed by Address alone.
	Hosts []string
	// Address is the symbolic address snug-connection://<slot>/ that
	// reaches the connection without knowing its host.
	Address string
	// LAN reports a device on the user's network; Label is its lanHost
	// label, with dotted RFC-1918 literals scrubbed.
	LAN   bool
	Label string
	// Armed reports a standing approval armed on the connection (§17 rule
	// 6: disclosed wherever the connection is).
	Armed bool
}

// maxScopeSummary bounds Fact.Scopes.
const maxScopeSummary = 300

// Facts returns the chat lane's facts about appID's connections, in slot
// order; nil when the app has none. Every text field has dotted RFC-1918
// literals scrubbed (§16), whatever it holds.
func (d *Daemon) Facts(appID string) []Fact {
	a := d.index.Load().apps[appID]
	if a == nil {
		return nil
	}
	out := make([]Fact, 0, len(a.rows))
	for i := range a.rows {
		g := &a.rows[i]
		if g.requirement() == nil {
			continue // a row that no longer validates says nothing
		}
		f := Fact{
			Slot:     g.slot,
			Provider: scrub.PrivateIPv4(g.req.Provider.Name),
			Kind:     g.req.Kind,
			Status:   g.status,
			Scopes:   scrub.Clip(scrub.PrivateIPv4(strings.Join(g.req.Scopes, ", ")), maxScopeSummary), // scrub before the cut, or a cut address survives
			Address:  "snug-connection://" + g.slot + "/",
		}
		if g.req.LANHost != nil {
			f.LAN, f.Label = true, scrub.PrivateIPv4(g.req.LANHost.Label)
		} else {
			hosts := g.claims
			if g.approved() {
				hosts = g.ceiling
			}
			for _, h := range hosts {
				if !requirement.IsRFC1918Literal(h) {
					f.Hosts = append(f.Hosts, h)
				}
			}
		}
		_, f.Armed = d.StandingFor(appID, g.slot)
		out = append(out, f)
	}
	return out
}
