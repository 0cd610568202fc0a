package requirement

import (
	"encoding/base64"
	"iter"
	"math"
	"slices"
	"strings"
)

// DetectCredential reports whether s contains a credential-shaped value
// ("a host that finds a credential-shaped value inside a
// requirement rejects the requirement"). reason is a fixed
// phrase naming the shape ("a GitHub token"); it never contains any part of
// s. Parse runs it over every string a requirement holds except the fixed
// vocabularies (kind, field type, lanHost class, testRequest method): the
// slot, the provider name and URLs, field keys, labels, descriptions and
// placeholders, registration instructions and console URL, endpoints,
// scopes, authorizeParams names and values, the lanHost label, declared
// hosts (normalized), testRequest.pathAndQuery, and template names, static
// text and quoted literals. It is safe for concurrent use.
//
// It fails closed: shapes are matched loosely, and a value that merely looks
// like a credential is refused. What it looks for, in this order:
//
//   - a PEM block ("-----BEGIN"), whatever it armors;
//   - userinfo in a URL ("https://user:pass@host", "https://token@host");
//   - a Slack or Discord webhook URL (the URL is the credential);
//   - "Bearer <token>": "bearer", whitespace, then at least 16 token68
//     characters with a digit or with mixed case;
//   - "Basic <credentials>": "basic", whitespace, then base64 that decodes
//     to printable text containing a ':';
//   - a known token prefix followed by enough token characters that are not
//     a placeholder: sk- (OpenAI, Anthropic; 20), sk_live_/sk_test_/
//     rk_live_/rk_test_/pk_live_/pk_test_/whsec_ (Stripe; 8), ghp_/gho_/
//     ghs_/ghu_/ghr_ (GitHub; 16), github_pat_ (16), glpat- (GitLab; 16),
//     xox?- (Slack; 8), xapp- (8), GOCSPX- (Google client secret; 16),
//     npm_ (30), hf_ (30), shpat_/shpss_/shpca_/shppa_ (Shopify; 16),
//     sq0atp-/sq0csp- (Square; 16), dop_v1_/doo_v1_/dor_v1_
//     (DigitalOcean; 32), pypi- (16), glsa_ (Grafana; 16); AKIA or ASIA followed by exactly 16 of [A-Z0-9] (AWS);
//     AIza followed by 35 token characters (Google API key); ya29.
//     (Google access token; 16); SG.x.y (SendGrid);
//   - a JWT: "eyJ…" "." "eyJ…" (header and payload of base64url JSON);
//   - a Telegram bot token: 8–10 digits, ':', 30 or more token characters;
//   - a credential-named assignment with a non-placeholder value of 6 or
//     more characters: key=, api_key=, apikey=, api-key=, access_key=,
//     access_token=, token=, auth=, auth_token=, secret=, client_secret=,
//     password=, passwd=, pwd=, sig=, signature=, appid=, app_key=,
//     appkey=, private_key=, refresh_token=, id_token=, session=,
//     accountkey= (names case-insensitive; as in "?key=…" in a URL,
//     "token=…" in prose or an Azure "AccountKey=…" connection string);
//   - a long hexadecimal string: 32 or more hex digits with both a digit
//     and a letter;
//   - a long high-entropy string: 32 or more characters of the base64 and
//     base64url alphabets, with at least two of lower case, upper case and
//     digits, a Shannon entropy of at least 3.5 bits per character, and
//     "words" (runs split at separators, letter-digit changes and CamelCase
//     humps) shorter than 3.5 characters on average: random text breaks
//     into two-character pieces, identifiers and paths into words. Random
//     mixed-case strings of 32 characters are caught all but about once in
//     a thousand; single-case alphanumeric ones (base32, base36) about
//     three times in five to nine times in ten;
//   - a random-looking token: 20 to 31 such characters with all three of
//     lower case, upper case and digits, words shorter than 3 characters on
//     average and an entropy of at least 3.8 bits per character. Random
//     base62 keys of 20 characters are caught about nine times in ten, of
//     24 to 31 characters about 97 to 99 times in a hundred.
//
// A placeholder, for the prefix and assignment rules, is text whose
// letters are all one case and that has no digit ("xxxxxxxx",
// "YOUR_TOKEN_HERE", "your-key"). Known false positives, all refused on
// purpose: a vendor prefix followed by a mixed-case or digit-bearing example
// ("ghp_ExampleToken", "sk_test_123456789"); any 32-hex-digit example or
// commit hash ("0123456789abcdef0123456789abcdef"); any UUID, including an
// Entra tenant ID in an endpoint path or a UUID subdomain (UUID-shaped API
// keys are common, and multi-tenant endpoints such as
// login.microsoftonline.com/common need none); a truncated but JWT-shaped
// example ("eyJhbGci.eyJzdWIi"); any PEM header, even a certificate's;
// "Bearer abc123def456ghi789"; a documentation URL with a ?token=abc12345
// example; base64 of short text ("dGhlIHNhbXBsZSBub25jZQ=="); a 20- to
// 31-character mixed-case identifier that is mostly digits and capitals
// ("iPhone15ProMaxUS2024"). Placeholders and examples should be
// illustrative ("your API key", "sk_live_…", "xxxxxxxx"), never realistic.
// Known false negatives: short or low-entropy secrets (a 12-digit PIN, a
// dictionary password, random keys under 20 characters), single-case
// random strings under 32 characters or that happen to segment like words,
// and secrets split across seats; the detector is a schema-time guard, not
// a proof that a requirement is clean.
func DetectCredential(s string) (reason string, ok bool) {
	if strings.Contains(s, "-----BEGIN") {
		return "a PEM block", true
	}
	if hasURLUserinfo(s) {
		return "credentials in a URL's userinfo", true
	}
	lower := asciiLower(s)
	for _, hook := range []string{"hooks.slack.com/services/", "discord.com/api/webhooks/", "discordapp.com/api/webhooks/"} {
		if strings.Contains(lower, hook) {
			return "a webhook URL", true
		}
	}
	if hasAuthScheme(s, lower, "bearer", bearerToken) {
		return "a bearer token", true
	}
	if hasAuthScheme(s, lower, "basic", basicCredentials) {
		return "basic-auth credentials", true
	}
	vendor := prefixes()
	for tok := range tokens(s, isWordTokenChar) {
		if reason, ok := prefixedToken(tok, &vendor); ok {
			return reason, true
		}
	}
	for tok := range tokens(s, isDottedTokenChar) {
		if isJWT(tok) {
			return "a JSON Web Token", true
		}
		if reason, ok := dottedToken(tok); ok {
			return reason, true
		}
	}
	if hasTelegramToken(s) {
		return "a Telegram bot token", true
	}
	if hasCredentialAssignment(s) {
		return "a credential-named parameter with a value", true
	}
	for tok := range tokens(s, isBase64Char) {
		switch {
		case len(tok) >= 32:
			if isLongHex(tok) {
				return "a long hexadecimal string", true
			}
			if isHighEntropy(tok) {
				return "a long high-entropy string", true
			}
		case len(tok) >= 20:
			if isRandomMixed(tok) {
				return "a random-looking token", true
			}
		}
	}
	return "", false
}

func isWordTokenChar(c byte) bool {
	return isASCIILetter(c) || isDigit(c) || c == '_' || c == '-'
}

func isDottedTokenChar(c byte) bool { return isWordTokenChar(c) || c == '.' }

func isBase64Char(c byte) bool {
	return isASCIILetter(c) || isDigit(c) || c == '+' || c == '/' || c == '=' || c == '_' || c == '-'
}

func isToken68Char(c byte) bool {
	return isBase64Char(c) || c == '.' || c == '~'
}

// tokens yields the maximal runs of bytes of s for which in holds.
func tokens(s string, in func(byte) bool) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := -1
		for i := 0; i <= len(s); i++ {
			if i < len(s) && in(s[i]) {
				if start < 0 {
					start = i
				}
				continue
			}
			if start >= 0 {
				if !yield(s[start:i]) {
					return
				}
				start = -1
			}
		}
	}
}

// isPlaceholder reports whether s reads as an illustrative placeholder: no
// digit, and its letters all of one case.
func isPlaceholder(s string) bool {
	var lower, upper bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isDigit(c):
			return false
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		}
	}
	return !(lower && upper)
}

// prefixes are the vendor token prefixes matched at the start of a
// [A-Za-z0-9_-] run, with the fewest characters that must follow.
// It returns an array, not a slice, so a call costs no allocation.
func prefixes() [30]vendorPrefix {
	return [...]vendorPrefix{
		{"sk_live_", "a Stripe key", 8}, {"sk_test_", "a Stripe key", 8},
		{"rk_live_", "a Stripe key", 8}, {"rk_test_", "a Stripe key", 8},
		{"pk_live_", "a Stripe key", 8}, {"pk_test_", "a Stripe key", 8},
		{"whsec_", "a Stripe webhook secret", 8},
		{"sk-", "an OpenAI- or Anthropic-style secret key", 20},
		{"ghp_", "a GitHub token", 16}, {"gho_", "a GitHub token", 16},
		{"ghs_", "a GitHub token", 16}, {"ghu_", "a GitHub token", 16},
		{"ghr_", "a GitHub token", 16}, {"github_pat_", "a GitHub token", 16},
		{"glpat-", "a GitLab token", 16}, {"glsa_", "a Grafana token", 16},
		{"xapp-", "a Slack token", 8},
		{"GOCSPX-", "a Google OAuth client secret", 16},
		{"npm_", "an npm token", 30}, {"hf_", "a Hugging Face token", 30},
		{"shpat_", "a Shopify token", 16}, {"shpss_", "a Shopify token", 16},
		{"shpca_", "a Shopify token", 16}, {"shppa_", "a Shopify token", 16},
		{"sq0atp-", "a Square token", 16}, {"sq0csp-", "a Square token", 16},
		{"dop_v1_", "a DigitalOcean token", 32}, {"doo_v1_", "a DigitalOcean token", 32},
		{"dor_v1_", "a DigitalOcean token", 32},
		{"pypi-", "a PyPI token", 16},
	}
}

// vendorPrefix is one row of prefixes.
type vendorPrefix struct {
	prefix, reason string
	min            int
}

// prefixedToken checks one [A-Za-z0-9_-] run against the vendor shapes.
func prefixedToken(tok string, vendor *[30]vendorPrefix) (string, bool) {
	for _, p := range vendor {
		if rest, ok := strings.CutPrefix(tok, p.prefix); ok && len(rest) >= p.min && !isPlaceholder(rest) {
			return p.reason, true
		}
	}
	// Slack: xoxa-, xoxb-, xoxp-, xoxo-, xoxr-, xoxs-, xoxe-, …
	if len(tok) > 5 && strings.HasPrefix(tok, "xox") && isASCIILetter(tok[3]) && tok[4] == '-' {
		if rest := tok[5:]; len(rest) >= 8 && !isPlaceholder(rest) {
			return "a Slack token", true
		}
	}
	if len(tok) == 20 && (strings.HasPrefix(tok, "AKIA") || strings.HasPrefix(tok, "ASIA")) {
		rest := tok[4:]
		if allBytes(rest, func(c byte) bool { return c >= 'A' && c <= 'Z' || isDigit(c) }) && !isPlaceholder(rest) {
			return "an AWS access key ID", true
		}
	}
	if rest, ok := strings.CutPrefix(tok, "AIza"); ok && len(rest) >= 35 && !isPlaceholder(rest) {
		return "a Google API key", true
	}
	return "", false
}

// dottedToken checks the shapes whose alphabet includes '.'.
func dottedToken(tok string) (string, bool) {
	if rest, ok := strings.CutPrefix(tok, "ya29."); ok && len(rest) >= 16 && !isPlaceholder(rest) {
		return "a Google access token", true
	}
	if rest, ok := strings.CutPrefix(tok, "SG."); ok {
		if a, b, ok := strings.Cut(rest, "."); ok && len(a) >= 16 && len(b) >= 16 && !isPlaceholder(a+b) {
			return "a SendGrid key", true
		}
	}
	return "", false
}

func allBytes(s string, f func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !f(s[i]) {
			return false
		}
	}
	return true
}

// isJWT reports whether tok has a JWT's first two segments: base64url JSON
// objects, which always begin "eyJ".
func isJWT(tok string) bool {
	for {
		i := strings.Index(tok, "eyJ")
		if i < 0 {
			return false
		}
		if i == 0 || tok[i-1] == '.' {
			first, rest, ok := strings.Cut(tok[i:], ".")
			second, _, _ := strings.Cut(rest, ".")
			if ok && len(first) >= 4 && len(second) >= 4 && strings.HasPrefix(second, "eyJ") {
				return true
			}
		}
		tok = tok[i+3:]
	}
}

// hasURLUserinfo reports whether some "scheme://" in s is followed by an
// authority containing '@'.
func hasURLUserinfo(s string) bool {
	for rest := s; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			return false
		}
		rest = rest[i+3:]
		end := strings.IndexAny(rest, "/?#\\ \t\r\n\"'<>")
		if end < 0 {
			end = len(rest)
		}
		if strings.ContainsRune(rest[:end], '@') {
			return true
		}
	}
}

// asciiLower lowers ASCII letters only, so the result has s's byte
// offsets: strings.ToLower would not (U+023A lowers to a longer rune), and
// an offset found in the lowered text must index s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// hasAuthScheme finds "<scheme><whitespace><credentials>" (scheme
// case-insensitive, lower is asciiLower(s)) and asks check about the
// credentials.
func hasAuthScheme(s, lower, scheme string, check func(string) bool) bool {
	for off := 0; ; {
		i := strings.Index(lower[off:], scheme)
		if i < 0 {
			return false
		}
		i += off
		off = i + len(scheme)
		if i > 0 && isASCIILetter(s[i-1]) {
			continue
		}
		j := off
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j == off {
			continue
		}
		k := j
		for k < len(s) && isToken68Char(s[k]) {
			k++
		}
		if check(s[j:k]) {
			return true
		}
	}
}

func bearerToken(tok string) bool {
	return len(tok) >= 16 && !isPlaceholder(tok)
}

func basicCredentials(tok string) bool {
	if len(tok) < 8 {
		return false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(tok)
		if err != nil {
			continue
		}
		text := string(b)
		if printableASCII(text) && strings.Contains(text, ":") {
			return true
		}
	}
	return false
}

// hasTelegramToken finds 8–10 digits, ':', then 30 or more token characters.
func hasTelegramToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ':' {
			continue
		}
		d := i
		for d > 0 && isDigit(s[d-1]) {
			d--
		}
		if n := i - d; n < 8 || n > 10 || (d > 0 && isWordTokenChar(s[d-1])) {
			continue
		}
		k := i + 1
		for k < len(s) && isWordTokenChar(s[k]) {
			k++
		}
		if k-i-1 >= 30 {
			return true
		}
	}
	return false
}

// credentialNames are parameter names whose value is a credential.
func credentialNames() [24]string {
	return [...]string{
		"key", "api_key", "apikey", "api-key", "access_key", "access_token", "token",
		"auth", "auth_token", "secret", "client_secret", "password", "passwd", "pwd",
		"sig", "signature", "appid", "app_key", "appkey", "private_key",
		"refresh_token", "id_token", "session", "accountkey",
	}
}

// isCredentialName reports whether a query parameter name names a
// credential, case-insensitively.
func isCredentialName(name string) bool {
	names := credentialNames()
	return slices.Contains(names[:], strings.ToLower(name))
}

// hasCredentialAssignment finds name=value with a credential name and a
// value of 6 or more characters that is not a placeholder or a template.
// Both scans are bounded (names are short; 64 characters of value decide),
// so a string of many '=' costs linear time.
func hasCredentialAssignment(s string) bool {
	names := credentialNames()
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			continue
		}
		n := i
		for n > 0 && i-n <= maxCredentialName && isWordTokenChar(s[n-1]) {
			n--
		}
		if n == i || i-n > maxCredentialName || !slices.Contains(names[:], strings.ToLower(s[n:i])) {
			continue
		}
		v := i + 1
		for v < len(s) && v-i <= 64 && !strings.ContainsRune("&#; \t\"'<>,)", rune(s[v])) {
			v++
		}
		val := s[i+1 : v]
		if len(val) >= 6 && !isPlaceholder(val) && !strings.HasPrefix(val, "{{") {
			return true
		}
	}
	return false
}

// maxCredentialName is the length of the longest credentialNames entry.
const maxCredentialName = len("refresh_token")

func isLongHex(tok string) bool {
	var digit, letter bool
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case isDigit(c):
			digit = true
		case isHex(c):
			letter = true
		default:
			return false
		}
	}
	return digit && letter
}

// isHighEntropy applies the high-entropy rule to a base64-alphabet run of
// 32 or more characters: at least two character classes, a Shannon entropy
// of at least 3.5 bits per character, and alphanumeric segments shorter
// than 3.5 characters on average.
func isHighEntropy(tok string) bool {
	st := measure(tok)
	return st.classes >= 2 && st.meanSegment < 3.5 && st.entropy >= 3.5
}

// isRandomMixed applies the shorter rule to a base64-alphabet run of 20 to
// 31 characters, the length of many API keys (a CoinGecko key is "CG-" and
// 24 characters): lower case, upper case and digits all present, segments
// shorter than 3 characters on average and a Shannon entropy of at least
// 3.8 bits per character. Random base62 text of 20 characters passes it
// about nine times in ten, of 24 or more about 97 times in a hundred;
// identifiers and paths with real words do not ("GetAccountBalanceV2",
// "OAuth2ClientCredentials"), while base64 of short text does.
func isRandomMixed(tok string) bool {
	st := measure(tok)
	return st.classes == 3 && st.meanSegment < 3 && st.entropy >= 3.8
}

// tokenStats are what the two entropy rules look at.
type tokenStats struct {
	classes     int     // how many of lower case, upper case and digits occur
	meanSegment float64 // alphanumeric characters per segment; +Inf with none
	entropy     float64 // Shannon entropy in bits per character
}

// measure computes a token's statistics. Segments are what a CamelCase or
// path reading would call words: a new one starts at every separator, at a
// letter-digit change, at a lower- to upper-case change and before the last
// capital of an upper-case run that continues in lower case. Random text
// breaks into segments of about two characters; identifiers and paths
// ("GetAccountBalanceV2", "/2010-04-01/Accounts") into segments of four or
// more.
func measure(tok string) tokenStats {
	var counts [256]int
	var classes [4]bool
	segments, alnum := 0, 0
	prev := byte(0) // 0 separator, 1 lower, 2 upper, 3 digit
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		counts[c]++
		var class byte
		switch {
		case c >= 'a' && c <= 'z':
			class = 1
		case c >= 'A' && c <= 'Z':
			class = 2
		case isDigit(c):
			class = 3
		default:
			prev = 0
			continue
		}
		classes[class] = true
		alnum++
		switch {
		case prev == 0, (class == 3) != (prev == 3), prev == 1 && class == 2:
			segments++
		case prev == 2 && class == 2 && i+1 < len(tok) && tok[i+1] >= 'a' && tok[i+1] <= 'z':
			segments++
		}
		prev = class
	}
	st := tokenStats{meanSegment: math.Inf(1)}
	for _, b := range classes {
		if b {
			st.classes++
		}
	}
	if segments > 0 {
		st.meanSegment = float64(alnum) / float64(segments)
	}
	total := float64(len(tok))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / total
			st.entropy -= p * math.Log2(p)
		}
	}
	return st
}
