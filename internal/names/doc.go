// Package names holds the one text rule for every name a person reads to
// decide whether to trust something: a host's display name, a helper's
// device label, a LAN bridge's name. Check says whether a name may be
// stored at all; Display renders a name for a screen, flagged and escaped
// when it looks like another name; FoldsOnto is the case-folding
// comparison a gate uses when a key must not pass for another.
//
// Imports: the standard library and golang.org/x/text. Every package of
// the module may import it; it imports nothing of the module.
package names
