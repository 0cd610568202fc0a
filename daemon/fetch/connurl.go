package fetch

import (
	"net/url"
	"strings"

	"github.com/snug/snugd/daemon/requirement"
	"github.com/snug/snugd/daemon/scrub"
)

// Connection-relative addressing: an app addresses
// its OWN declared connection by slot,
//
//	snug-connection://<slot><pathAndQuery>
//
// and the executor rebuilds the URL against the connection's one ceiling
// host after gate 1 (resolveConnection). The resolved host is disclosed to
// the user (the confirm names it) and never to the app: the net-response
// echoes the snug-connection:// URL, refusal messages are fixed sentences,
// and error-path text is scrubbed of the resolved host (scrubResolved).

// connectionScheme is the scheme, matched case-insensitively.
const ConnectionScheme = "snug-connection:"

// connURLKind is the three-way result of parseConnectionURL.
type ConnURLKind int

const (
	// notConnectionURL: fall through to the literal-URL path untouched.
	NotConnectionURL ConnURLKind = iota
	// connectionURLMalformed: refuse loudly, never guess.
	ConnectionURLMalformed
	// connectionURLOK: slot and pathAndQuery are set.
	ConnectionURLOK
)

// connectionURL is a parsed connection URL.
type connectionURL struct {
	Slot         string
	PathAndQuery string
}

// parseConnectionURL applies the connection URL grammar: the scheme matches
// case-insensitively and everything after it exactly; "//" is required; a
// path is required; the slot matches requirement.ValidSlot (the slot rule,
// imported and never restated); pathAndQuery does not begin with "//" and
// holds no '\' and no '#', and parses as a path with an optional query.
func ParseConnectionURL(s string) (connectionURL, ConnURLKind) {
	if len(s) < len(ConnectionScheme) || !strings.EqualFold(s[:len(ConnectionScheme)], ConnectionScheme) {
		return connectionURL{}, NotConnectionURL
	}
	rest, ok := strings.CutPrefix(s[len(ConnectionScheme):], "//")
	if !ok {
		return connectionURL{}, ConnectionURLMalformed
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return connectionURL{}, ConnectionURLMalformed // no path: apps address resources, not devices
	}
	slot, pq := rest[:i], rest[i:]
	if !requirement.ValidSlot(slot) ||
		strings.HasPrefix(pq, "//") || strings.ContainsAny(pq, `\#`) {
		return connectionURL{}, ConnectionURLMalformed
	}
	for i := 0; i < len(pq); i++ {
		if c := pq[i]; c <= ' ' || c == 0x7f {
			return connectionURL{}, ConnectionURLMalformed
		}
	}
	ref, err := url.Parse(pq)
	if err != nil || ref.Scheme != "" || ref.Host != "" || ref.Opaque != "" || ref.User != nil {
		return connectionURL{}, ConnectionURLMalformed
	}
	return connectionURL{Slot: slot, PathAndQuery: pq}, ConnectionURLOK
}

// connTarget is a resolved connection URL: the slot the app named and the
// ceiling host it resolved to (which the app never sees).
type ConnTarget struct {
	Slot string
	Host string
}

// scrubResolved removes the resolved host, in every spelling a message
// could carry, from s (scrub.Host). It is a no-op on a nil target.
func (c *ConnTarget) ScrubResolved(s string) string {
	if c == nil {
		return s
	}
	return scrub.Host(s, c.Host)
}

// symbolic is the form the journal and the facts record for the
// connection: never the resolved host.
func (c *ConnTarget) symbolic() string { return "snug-connection://" + c.Slot }
