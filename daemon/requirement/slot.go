package requirement

import "github.com/snug/snugd/daemon/internal/ident"

// SlotPattern is the slot rule (ident.SlotPattern, where it
// is written once): lowercase and dash-only by construction. The schema and
// the packages above it (connection-relative URLs, the registry,
// the starters) name it through this package; they never restate it.
const SlotPattern = ident.SlotPattern

// ValidSlot reports whether s matches SlotPattern. Mixed case is rejected,
// never folded.
func ValidSlot(s string) bool { return ident.ValidSlot(s) }

// ValidFieldKey reports whether s has the shape of a field key,
// ^[a-z0-9_]{1,40}$ (the parser's rule, which also refuses a leading "_").
func ValidFieldKey(s string) bool { return validFieldKey(s) }
