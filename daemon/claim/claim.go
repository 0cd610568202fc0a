package claim

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/snug/snugd/daemon/requirement"
)

// Limits on what the checks read. A SimpleFIN setup token is the base64 of
// a claim URL of about a hundred bytes, and an access URL is about as
// long; these bounds leave ample room and refuse a pasted document.
const (
	// MaxTokenBytes bounds a pasted setup token, surrounding whitespace
	// included.
	MaxTokenBytes = 4096
	// MaxURLBytes bounds a decoded claim URL and an access URL.
	MaxURLBytes = 2048
	// maxIDBytes bounds the token id in a claim URL's last segment.
	maxIDBytes = 512
)

// ParseSetupToken decodes a pasted setup token leniently and checks the
// claim URL inside it strictly. Lenient: standard or URL-safe
// base64, with or without padding, with surrounding whitespace. Strict:
// the decoded URL is printable ASCII, https, without userinfo, on a host
// that (normalized) is exactly a member of ceiling on the default port,
// without query or fragment, and its path is accessPath + "/claim/" + a
// token id. It returns the claim URL rebuilt from the checked parts,
// exactly what may be POSTed.
//
// Errors are *Error with ReasonTokenShape, ReasonClaimScheme,
// ReasonClaimUserinfo, ReasonClaimHost or ReasonClaimPath, checked in that
// order. ParseSetupToken is safe for concurrent use.
func ParseSetupToken(pasted string, ceiling []string, accessPath string) (*url.URL, error) {
	raw, err := DecodeToken(pasted)
	if err != nil {
		return nil, err
	}
	return CheckClaimURL(raw, ceiling, accessPath)
}

// DecodeToken is ParseSetupToken's lenient half: it trims surrounding
// ASCII whitespace and decodes standard or URL-safe base64, padded or
// not, refusing a mix of the two alphabets, misplaced padding, and a
// result that is not printable ASCII of at most MaxURLBytes (a URL has no
// other bytes). The only error is ReasonTokenShape.
func DecodeToken(pasted string) (string, error) {
	if len(pasted) > MaxTokenBytes {
		return "", Refuse(ReasonTokenShape)
	}
	t := strings.Trim(pasted, " \t\r\n\v\f")
	s := strings.TrimRight(t, "=")
	if len(t)-len(s) > 2 || s == "" {
		return "", Refuse(ReasonTokenShape)
	}
	std, urlSafe := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '+' || c == '/':
			std = true
		case c == '-' || c == '_':
			urlSafe = true
		default:
			return "", Refuse(ReasonTokenShape)
		}
	}
	if std && urlSafe {
		return "", Refuse(ReasonTokenShape)
	}
	enc := base64.RawStdEncoding
	if urlSafe {
		enc = base64.RawURLEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil || !printableURL(string(b)) {
		return "", Refuse(ReasonTokenShape)
	}
	return string(b), nil
}

// CheckClaimURL is ParseSetupToken's strict half, on the decoded claim
// URL; see ParseSetupToken.
func CheckClaimURL(raw string, ceiling []string, accessPath string) (*url.URL, error) {
	if !printableURL(raw) {
		return nil, Refuse(ReasonTokenShape)
	}
	u, err := url.Parse(raw) // its error quotes raw: never passed on
	if err != nil {
		return nil, Refuse(ReasonTokenShape)
	}
	if u.Scheme != "https" {
		return nil, Refuse(ReasonClaimScheme)
	}
	if u.User != nil {
		return nil, Refuse(ReasonClaimUserinfo)
	}
	host, ok := ceilingHost(u, ceiling)
	if !ok {
		return nil, Refuse(ReasonClaimHost)
	}
	if u.Opaque != "" || u.RawPath != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, Refuse(ReasonClaimPath)
	}
	id, ok := strings.CutPrefix(u.Path, accessPath+"/claim/")
	if !validAccessPath(accessPath) || !ok || !validID(id) {
		return nil, Refuse(ReasonClaimPath)
	}
	return &url.URL{Scheme: "https", Host: host, Path: u.Path}, nil
}

// Access is a checked access URL's parts. Its String, GoString and
// LogValue never show the credentials; Credentials does.
type Access struct {
	// Host is the access URL's host, normalized: a member of the ceiling.
	Host     string
	username string
	password string
}

// Credentials returns the basic_auth value the registry's field holds:
// the user name and the password joined by a colon (RFC 7617).
func (a Access) Credentials() string { return a.username + ":" + a.password }

// String returns a redacted form: an Access holds a credential.
func (a Access) String() string { return "claim.Access{Host:" + a.Host + ", REDACTED}" }

// GoString returns the same redacted form as String.
func (a Access) GoString() string { return a.String() }

// LogValue keeps the credentials out of a log record.
func (a Access) LogValue() slog.Value { return slog.StringValue(a.String()) }

// ParseAccessURL checks the body of the bridge's answer to the claim
// POST: exactly one access URL and nothing else (no CR, LF, space or any
// byte after the URL; at most MaxURLBytes), https, on a host that
// (normalized) is exactly a member of ceiling on the default port,
// carrying a user name and a password (printable ASCII once decoded; no
// colon in the user name), with the path exactly accessPath and no query
// or fragment (the same four checks as the claim URL, and the
// pinned access path).
//
// Errors are *Error with ReasonAccessShape, ReasonAccessScheme,
// ReasonAccessUserinfo, ReasonAccessHost or ReasonAccessPath. It is safe
// for concurrent use.
func ParseAccessURL(body []byte, ceiling []string, accessPath string) (Access, error) {
	raw := string(body)
	if !printableURL(raw) {
		return Access{}, Refuse(ReasonAccessShape)
	}
	u, err := url.Parse(raw) // its error quotes the credentials: never passed on
	if err != nil || u.Scheme == "" || u.Opaque != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		return Access{}, Refuse(ReasonAccessShape)
	}
	if u.Scheme != "https" {
		return Access{}, Refuse(ReasonAccessScheme)
	}
	if u.User == nil {
		return Access{}, Refuse(ReasonAccessUserinfo)
	}
	user := u.User.Username()
	pass, hasPass := u.User.Password()
	if user == "" || !hasPass || pass == "" || strings.Contains(user, ":") || !printable(user) || !printable(pass) {
		return Access{}, Refuse(ReasonAccessUserinfo)
	}
	host, ok := ceilingHost(u, ceiling)
	if !ok {
		return Access{}, Refuse(ReasonAccessHost)
	}
	if !validAccessPath(accessPath) || u.RawPath != "" || u.Path != accessPath {
		return Access{}, Refuse(ReasonAccessPath)
	}
	return Access{Host: host, username: user, password: pass}, nil
}

// CheckInfo is the verify-before-claim check of the bridge's /info answer:
// a JSON object whose versions array lists the protocol versions the
// server speaks, one of them of major version 1 ("1.0"). Anything else is
// ReasonNotBridge.
func CheckInfo(body []byte) error {
	var info struct {
		Versions []string `json:"versions"`
	}
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &info) != nil {
		return Refuse(ReasonNotBridge)
	}
	if !slices.ContainsFunc(info.Versions, func(v string) bool { return v == "1" || strings.HasPrefix(v, "1.") }) {
		return Refuse(ReasonNotBridge)
	}
	return nil
}

// ceilingHost returns u's host normalized when it is exactly a member of
// ceiling and u names no port but the default one.
func ceilingHost(u *url.URL, ceiling []string) (string, bool) {
	if p := u.Port(); p != "" && p != "443" {
		return "", false
	}
	h, err := requirement.NormalizeHost(u.Hostname())
	if err != nil || !slices.Contains(ceiling, h) {
		return "", false
	}
	return h, true
}

// printableURL reports whether s is 1 to MaxURLBytes bytes of printable
// ASCII without space: what a URL is made of, and nothing that could end
// a header line or hide a second URL.
func printableURL(s string) bool {
	return s != "" && len(s) <= MaxURLBytes && printable(s)
}

// printable reports whether every byte of s is printable ASCII other than
// space (0x21–0x7E).
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// validAccessPath reports whether the registry's pinned path is usable: a
// rooted path without a trailing slash. An unusable pin refuses every
// claim (fail closed).
func validAccessPath(p string) bool {
	return len(p) > 1 && p[0] == '/' && !strings.HasSuffix(p, "/")
}

// validID reports whether s is a claim URL's token id: 1 to 512
// unreserved characters (RFC 3986), and not a dot segment.
func validID(s string) bool {
	if s == "" || len(s) > maxIDBytes || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}
