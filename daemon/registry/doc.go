// Package registry is snugd's pinned provider registry (spec §12.12, ruling
// R22): embedded, reviewed data validated at startup, and the borrow ban that
// substitutes pinned values into a matching requirement.
//
// Imports: the standard library and daemon/requirement.
package registry
