package requirement

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// A Violation is one way a requirement breaks the contract. Path names the
// seat ("provider.name", "fields[2].key", "request.headerTemplate.X-Key";
// "$" is the document itself), Rule is a stable machine name from the list
// below (template findings keep the lint's own "template.*" names), and
// Message is a sentence for people. Neither Path nor Message ever carries a
// value from the requirement: a seat holding a credential-shaped value is
// named, the value is not, and an object key that is not safe to show is
// written by position ("authorizeParams.#3").
type Violation struct {
	Path    string
	Rule    string
	Message string
}

// String returns "path: message (rule)".
func (v Violation) String() string {
	return v.Path + ": " + v.Message + " (" + v.Rule + ")"
}

// Rule names. They are part of the API (the loopback API returns them as
// details of a 422): never rename or reuse one; add new ones at the end.
const (
	RuleJSONSyntax       = "json.syntax"        // not JSON (offset in the message)
	RuleJSONDuplicateKey = "json.duplicate-key" // one object names a key twice
	RuleJSONTooLarge     = "json.too-large"     // more than MaxSize bytes
	RuleTypeMismatch     = "type.mismatch"      // wrong JSON type for the seat
	RuleKeyUnknown       = "key.unknown"        // a key the schema does not define, at any level
	RuleKeyMissing       = "key.missing"        // a required key is absent
	RuleStringEmpty      = "string.empty"       // an empty string where text is required
	RuleStringTooLong    = "string.too-long"    // longer than the seat's bound, in UTF-16 code units
	RuleArrayTooShort    = "array.too-short"    // fewer entries than the seat's minimum
	RuleArrayTooLong     = "array.too-long"     // more entries than the seat's maximum
	RuleObjectTooLarge   = "object.too-large"   // more members than the seat's maximum

	RuleSlotPattern = "slot.pattern" // slot does not match SlotPattern
	RuleKindUnknown = "kind.unknown" // not one of the seven kinds

	RuleTextASCII      = "text.ascii"      // provider.name outside printable ASCII
	RuleTextNFC        = "text.nfc"        // text not in Unicode NFC
	RuleTextControl    = "text.control"    // a control, format (zero-width, bidi), private-use or separator character
	RuleTextWhitespace = "text.whitespace" // leading or trailing whitespace; in provider.name also a double space
	RuleTextMarkup     = "text.markup"     // markup in a plain-text seat

	RuleURLInvalid             = "url.invalid"              // not a well-formed absolute URL of printable ASCII
	RuleURLScheme              = "url.scheme"               // not https://
	RuleURLUserinfo            = "url.userinfo"             // userinfo in the authority, even an empty '@'
	RuleURLHost                = "url.host"                 // host is not a DNS hostname (IP literal, numeric spelling, bad label)
	RuleURLHostNotNormalized   = "url.host-not-normalized"  // host not written lowercase in its ASCII (punycode) form
	RuleURLPort                = "url.port"                 // port not canonical decimal 1–65535
	RuleURLFragment            = "url.fragment"             // a fragment on an OAuth endpoint
	RuleURLCredentialParam     = "url.credential-param"     // a query parameter named like a credential, with a value
	RuleFieldKeyPattern        = "field.key-pattern"        // field key does not match ^[a-z0-9_]{1,40}$
	RuleFieldKeyReserved       = "field.key-reserved"       // field key begins with _, the prefix of snugd's own slot state
	RuleFieldKeyDuplicate      = "field.key-duplicate"      // two fields (either layer) share a key
	RuleFieldType              = "field.type"               // not text, secret, password or url
	RuleScopeCharset           = "scope.charset"            // not an RFC 6749 scope-token
	RuleScopeDuplicate         = "scope.duplicate"          // a scope listed twice
	RuleAuthorizeParamName     = "authorize-param.name"     // name outside ^[A-Za-z0-9_.\[\]-]{1,64}$
	RuleAuthorizeParamReserved = "authorize-param.reserved" // a parameter snugd sets itself (ReservedAuthorizeParams)

	RuleHostEmpty       = "host.empty"        // an empty host
	RuleHostTooLong     = "host.too-long"     // over 253 characters, or a label over 63 octets
	RuleHostScheme      = "host.scheme"       // a scheme where a bare hostname belongs
	RuleHostUserinfo    = "host.userinfo"     // an '@'
	RuleHostPath        = "host.path"         // a path, query or fragment
	RuleHostPort        = "host.port"         // a ':' port
	RuleHostTrailingDot = "host.trailing-dot" // a trailing dot (never matches at gate 4)
	RuleHostIPLiteral   = "host.ip-literal"   // an IP address literal
	RuleHostNumeric     = "host.numeric"      // a numeric spelling such as 127.1, 0x7f.1, 2130706433
	RuleHostInvalid     = "host.invalid"      // not a valid IDNA hostname
	RuleHostDuplicate   = "host.duplicate"    // two entries normalize to the same host

	RuleHostsRequired      = "hosts.required"      // no lanHost and no declaredApiHosts (a host is required)
	RuleLANHostClass       = "lan-host.class"      // lanHost.class is not rfc1918-ipv4-literal
	RuleLANHostCount       = "lan-host.host-count" // lanHost beside two or more hosts
	RuleLANHostOffClass    = "lan-host.host-class" // lanHost beside a host outside the class, endpoints or a userLayer
	RuleKindSeatForbidden  = "kind.seat-forbidden" // a seat the kind must not carry
	RuleKindSeatRequired   = "kind.seat-required"  // a seat the kind must carry
	RuleTestRequestMethod  = "test-request.method" // testRequest.method is not exactly GET
	RuleTestRequestPath    = "test-request.path"   // testRequest.pathAndQuery malformed
	RuleUserLayerChannel   = "user-layer.channel"  // userLayer outside registry substitution
	RuleCredentialDetected = "credential.detected" // a credential-shaped value
	RuleTemplateInvalid    = "template.invalid"    // a lint finding that named no rule of its own
)

// violations collects a parse's findings.
type violations []Violation

func (vs *violations) add(path, rule, msg string) {
	*vs = append(*vs, Violation{Path: path, Rule: rule, Message: msg})
}

// sorted returns the violations in a deterministic order (by path, with
// array indices compared as numbers, then rule, then message) without
// duplicates.
func (vs violations) sorted() []Violation {
	out := slices.Clone([]Violation(vs))
	slices.SortFunc(out, func(a, b Violation) int {
		if c := comparePaths(a.Path, b.Path); c != 0 {
			return c
		}
		if c := strings.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

// comparePaths orders paths segment by segment, comparing runs of digits as
// numbers so that fields[10] sorts after fields[9].
func comparePaths(a, b string) int {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			na, ra := digitRun(a)
			nb, rb := digitRun(b)
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = ra, rb
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitRun(s string) (run, rest string) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	run = strings.TrimLeft(s[:i], "0")
	return run, s[i:]
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// joinKey appends an object member to a path. A member name is written as
// itself only when it is safe to show: printable ASCII from a conservative
// set, at most 64 characters and not credential-shaped. Any other name is
// written by its position in the object ("#3"), so a violation never
// repeats a name that could be a secret.
func joinKey(path, name string, pos int) string {
	seg := name
	if !safeName(name) {
		seg = "#" + strconv.Itoa(pos)
	}
	if path == "" {
		return seg
	}
	return path + "." + seg
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

func safeName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '-' || c == '[' || c == ']'
		if !ok {
			return false
		}
	}
	_, hit := DetectCredential(name)
	return !hit
}
