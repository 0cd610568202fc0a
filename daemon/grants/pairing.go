package grants

import (
	"github.com/snug/snugd/daemon/registry"
	"github.com/snug/snugd/daemon/requirement"
)

// Pairing in package daemon is a connection's pairing with a device (the pairing
// families: exchange, device link, token claim), named by the registry.
// Pairing a host with snugd is daemon/hostauth's.

// pairingOwed reports the pairing family the registry names for r, if any,
// and whether state still lacks that family's own verify marker. Each
// family has its own marker and no other family's marker stands in for it:
// a connected row without its marker still owes its pairing, so the wizard
// repairs itself without a data migration.
func (d *Book) PairingOwed(r *requirement.Requirement, state ConnState, hasState bool) (registry.Family, bool) {
	if r == nil {
		return "", false
	}
	p, ok := d.registry.Pairing(r)
	if !ok {
		return "", false
	}
	if !hasState {
		return p.Family, true
	}
	var marker *int64
	switch p.Family {
	case registry.FamilyExchange:
		marker = state.LANVerifiedAt
	case registry.FamilyDeviceLink:
		marker = state.LinkVerifiedAt
	case registry.FamilyTokenClaim:
		marker = state.ClaimVerifiedAt
	}
	return p.Family, marker == nil
}
