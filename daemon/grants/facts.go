package grants

import (
	"strings"

	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/scrub"
)

// Fact is what the provider chat lane's context may know about one
// connection (API.md GET /v1/apps/{appId}/facts): never a credential
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
const MaxScopeSummary = 300

// Facts returns the chat lane's facts about appID's connections, in slot
// order; nil when the app has none. Every text field has dotted RFC-1918
// literals scrubbed, whatever it holds.
func (d *Records) Facts(appID string) []Fact {
	a := d.index.Load().Apps[appID]
	if a == nil {
		return nil
	}
	out := make([]Fact, 0, len(a.Rows))
	for i := range a.Rows {
		g := &a.Rows[i]
		if g.Requirement() == nil {
			continue // a row that no longer validates says nothing
		}
		f := Fact{
			Slot:     g.Slot,
			Provider: scrub.PrivateIPv4(g.Req.Provider.Name),
			Kind:     g.Req.Kind,
			Status:   g.Status,
			Scopes:   scrub.Clip(scrub.PrivateIPv4(strings.Join(g.Req.Scopes, ", ")), MaxScopeSummary), // scrub before the cut, or a cut address survives
			Address:  "snug-connection://" + g.Slot + "/",
		}
		if g.Req.LANHost != nil {
			f.LAN, f.Label = true, scrub.PrivateIPv4(g.Req.LANHost.Label)
		} else {
			hosts := g.Claims
			if g.Approved() {
				hosts = g.Ceiling
			}
			for _, h := range hosts {
				if !requirement.IsRFC1918Literal(h) {
					f.Hosts = append(f.Hosts, h)
				}
			}
		}
		f.Armed = d.gates.StandingArmed(appID, g.Slot)
		out = append(out, f)
	}
	return out
}
