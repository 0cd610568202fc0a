// Package requirement is the connection requirement contract of spec
// §12.5–§12.11 and §13: the strict parser, its bounds and coherence rules,
// the canonical form, host normalization and deriveConnectionAllowedHosts.
//
// Imports: the standard library, daemon/template, golang.org/x/net and
// golang.org/x/text.
package requirement
