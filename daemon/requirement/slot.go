package requirement

// SlotPattern is the slot rule of spec §12.2: lowercase and dash-only by
// construction, because SQLite compares bytes exactly and a mixed-case form
// would fork one provider into two rows. Other packages (connection-relative
// URLs of §15, the API) import ValidSlot; they never restate the rule.
const SlotPattern = `^[a-z0-9][a-z0-9-]{0,39}$`

// ValidSlot reports whether s matches SlotPattern. Mixed case is rejected,
// never folded (ruling R13).
func ValidSlot(s string) bool {
	if len(s) == 0 || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ValidFieldKey reports whether s has the shape of a field key,
// ^[a-z0-9_]{1,40}$ (the parser's rule, which also refuses a leading "_").
func ValidFieldKey(s string) bool { return validFieldKey(s) }
