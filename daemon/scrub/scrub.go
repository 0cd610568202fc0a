package scrub

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	"github.com/snug/snugd/daemon/internal/multimatch"
)

// Gate 10's value scrub. It is exact-substring matching over
// the values this request injected, in every spelling the executor knows
// how to derive:
//
//   - the raw value, and every value the renderer derived from one: each
//     rendered value that read a field and each helper output that did
//     (the base64 of user:pass without "Basic ", a whole cdp_jwt, an
//     HMAC), as daemon/template's Rendered.Secrets lists them;
//   - the halves of a basic_auth value held as one "user:pass" field
//     (SimpleFIN's access credentials), each when it is at least MinHalf
//     bytes long: a shorter half is not credential-shaped, and scrubbing
//     a three-letter user name would mangle ordinary text in every answer
//     (a short user name is not the secret; the password, when short, is
//     weak whatever the scrub does);
//   - the percent-encoded spellings a provider is likely to echo
//     (QueryEscape, PathEscape and RFC 3986's, with upper- and lowercase
//     hex);
//   - the JSON-escaped spellings of each of the above: every byte that
//     encoding/json, PHP's json_encode or .NET's System.Text.Json escapes
//     ("\/" for "/", the short escapes, "\u00XX" in lower- and uppercase
//     hex, "\uXXXX" for a non-ASCII rune), in every combination of
//     escaped and unescaped classes of bytes when a value holds few kinds
//     (at most maxJSONSpellings); a value holding many kinds gets the
//     encoders' own spellings only (Go's with and without HTML escaping,
//     PHP's and .NET's defaults, everything escaped), so a bespoke mix of
//     escapes defeats it.
//
// A provider that re-encodes a credential otherwise (base64 or hex of a
// value the renderer did not derive, a split or reversed value, an
// encoding within an encoding, a half shorter than MinHalf) defeats the
// scrub by design: the frozen ceiling, who may receive the secret at all,
// is the primary wall, and the scrub is a second line, nothing more.
//
// The body is scanned once for every spelling (daemon/internal/multimatch,
// built once per value set: per Set, or shared through a Cache) when it is
// long enough for that to pay; a short text is searched per spelling. Both find every occurrence, overlapping ones
// included, and replace each maximal run of covered bytes with one Mark.

// Mark replaces every scrubbed value.
const Mark = "[scrubbed]"

// MinHalf is the shortest half of a "user:pass" value AddUserPass scrubs
// on its own (the whole value is always scrubbed).
const MinHalf = 8

// Set collects the values one request injected and replaces them.
// The zero Set is empty and replaces nothing. A Set is not safe for
// concurrent use: it belongs to one request.
type Set struct {
	vals  []string
	cache *Cache    // nil: compile for this Set alone
	comp  *compiled // the spellings of vals (and their matcher)
	of    int       // len(vals) when comp was made
}

// UseCache makes s take its compiled spellings from c (nil: compile them
// for s alone). Call it before Apply.
func (s *Set) UseCache(c *Cache) { s.cache = c }

// compiled returns the spellings of s's values, compiled or fetched from
// the cache when the values changed since.
func (s *Set) compiled() *compiled {
	if s.comp == nil || s.of != len(s.vals) {
		if s.cache != nil {
			s.comp = s.cache.lookup(s.vals)
		} else {
			s.comp = &compiled{cands: spellings(s.vals)}
		}
		s.of = len(s.vals)
	}
	return s.comp
}

// Add records values that were injected (empty ones are ignored).
func (s *Set) Add(vs ...string) {
	for _, v := range vs {
		if v != "" && !slices.Contains(s.vals, v) {
			s.vals = append(s.vals, v)
		}
	}
}

// AddUserPass records a basic_auth value held as one "user:pass" field:
// the whole value, and each half of at least MinHalf bytes.
func (s *Set) AddUserPass(v string) {
	s.Add(v)
	user, pass, ok := strings.Cut(v, ":")
	if !ok {
		return
	}
	for _, h := range []string{user, pass} {
		if len(h) >= MinHalf {
			s.Add(h)
		}
	}
}

// Values returns the values recorded, in the order added. The caller
// must not modify the result.
func (s *Set) Values() []string { return s.vals }

// Candidates returns every spelling to scrub, longest first. The caller
// must not modify the result.
func (s *Set) Candidates() []string { return s.compiled().cands }

// matchMin is the text length from which Apply scans once with the
// multi-pattern matcher rather than once per spelling: below it, building
// the matcher costs more than the searches it saves. Both costs grow with
// the number of spellings (BenchmarkScrub1MiB: about 13 µs per spelling
// to build, 0.3 ms per spelling and MiB to search), so the crossover is a
// length, about 40 KiB, whatever the set. With a Cache the matcher is
// built once per value set, not per request, and only the search costs
// count: the crossover is then cachedMatchMin.
const (
	matchMin       = 32 << 10
	cachedMatchMin = 1 << 10
)

// Apply returns x with every byte that lies inside an occurrence of any
// candidate replaced: each maximal run of such bytes becomes one
// Mark. Occurrences are found independently per candidate,
// overlapping ones included, so two values that overlap in the text
// ("abcdefgh" and "efghijkl" in "abcdefghijkl") leave no tail of either
// behind, which a leftmost, non-overlapping replacement would.
func (s *Set) Apply(x string) string {
	if len(s.vals) == 0 || x == "" {
		return x
	}
	if len(x) >= matchMin || s.cache != nil && len(x) >= cachedMatchMin {
		return s.applyOnce(x)
	}
	return s.applyEach(x)
}

// ApplyBytes is Apply for text held as bytes (an answer body as it was
// read), which it reads in place and does not keep: it returns x itself,
// not copied, when nothing is replaced (the common case), else a new
// slice. It replaces exactly what Apply replaces.
func (s *Set) ApplyBytes(x []byte) []byte {
	if len(s.vals) == 0 || len(x) == 0 {
		return x
	}
	if len(x) >= matchMin || s.cache != nil && len(x) >= cachedMatchMin {
		runs := coveredRuns(s.compiled().matcher().Each, x)
		if runs == nil {
			return x
		}
		return appendMarked(make([]byte, 0, len(x)), x, runs)
	}
	// A short text: searched per spelling, as a string.
	str := string(x)
	if out := s.applyEach(str); out != str {
		return []byte(out)
	}
	return x
}

// applyOnce is Apply in one pass of the matcher.
func (s *Set) applyOnce(x string) string {
	runs := coveredRuns(s.compiled().matcher().EachString, x)
	if runs == nil {
		return x
	}
	return string(appendMarked(make([]byte, 0, len(x)), x, runs))
}

// coveredRuns returns the maximal runs of x that lie inside a match of
// each, in order; nil when there is none. Matches arrive in order of
// their end, so the runs are merged on a stack (a later match may start
// before runs it swallows).
func coveredRuns[S ~string | ~[]byte](each func(S, func(multimatch.Match) bool), x S) [][2]int {
	var runs [][2]int
	each(x, func(mt multimatch.Match) bool {
		start := mt.Start
		for len(runs) > 0 && runs[len(runs)-1][1] >= start {
			start = min(start, runs[len(runs)-1][0])
			runs = runs[:len(runs)-1]
		}
		runs = append(runs, [2]int{start, mt.End})
		return true
	})
	return runs
}

// appendMarked appends x to dst with each run replaced by one Mark.
func appendMarked[S ~string | ~[]byte](dst []byte, x S, runs [][2]int) []byte {
	last := 0
	for _, r := range runs {
		dst = append(dst, x[last:r[0]]...)
		dst = append(dst, Mark...)
		last = r[1]
	}
	return append(dst, x[last:]...)
}

// applyEach is Apply with one search per candidate.
func (s *Set) applyEach(x string) string {
	cands := s.Candidates()
	var covered []bool // allocated at the first match; the common case has none
	for _, c := range cands {
		i := strings.Index(x, c)
		if i < 0 {
			continue
		}
		if covered == nil {
			covered = make([]bool, len(x))
		}
		step := shortestPeriod(c)
		end := 0 // covered[:end] is already set for this candidate
		for {
			for j := max(i, end); j < i+len(c); j++ {
				covered[j] = true
			}
			end = i + len(c)
			// The next occurrence cannot start closer than the shortest
			// period: two occurrences s apart make s a period of c.
			next := i + step
			n := strings.Index(x[next:], c)
			if n < 0 {
				break
			}
			i = next + n
		}
	}
	if covered == nil {
		return x
	}
	var b strings.Builder
	b.Grow(len(x))
	for i := 0; i < len(x); {
		j := i
		for j < len(x) && covered[j] == covered[i] {
			j++
		}
		if covered[i] {
			b.WriteString(Mark)
		} else {
			b.WriteString(x[i:j])
		}
		i = j
	}
	return b.String()
}

// shortestPeriod returns the smallest p > 0 with c[i] == c[i+p] for every
// i, from the prefix function (Knuth–Morris–Pratt): len(c) for a string
// with no border.
func shortestPeriod(c string) int {
	pi := make([]int, len(c))
	for i := 1; i < len(c); i++ {
		k := pi[i-1]
		for k > 0 && c[i] != c[k] {
			k = pi[k-1]
		}
		if c[i] == c[k] {
			k++
		}
		pi[i] = k
	}
	return len(c) - pi[len(c)-1]
}

// spellings expands raw values into every spelling the scrub looks
// for, unique and longest first.
func spellings(raw []string) []string {
	out := make([]string, 0, 12*len(raw))
	for _, v := range raw {
		if v == "" {
			continue
		}
		forms := []string{v}
		for _, e := range []string{url.QueryEscape(v), url.PathEscape(v), escapeRFC3986(v)} {
			if e != v {
				forms = append(forms, e, lowerHex(e))
			}
		}
		for _, f := range forms {
			out = append(out, f)
			out = appendJSONSpellings(out, f)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if c := cmp.Compare(len(b), len(a)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return slices.Compact(out)
}

// values replaces every spelling of the raw values in x.
func values(x string, raw []string) string {
	s := Set{}
	s.Add(raw...)
	return s.Apply(x)
}

// escapeRFC3986 percent-encodes every byte but RFC 3986's unreserved
// characters, with uppercase hex: template.PlaceQuery's spelling.
func escapeRFC3986(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return b.String()
}

// lowerHex rewrites the hex digits of every %XX escape in s in lowercase.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if 'A' <= b[j] && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
		}
	}
	return string(b)
}

// HostMark replaces a connection's resolved host in error-path text.
const HostMark = "[connection host]"

// Host replaces every occurrence of host in s, in any ASCII case, with
// HostMark (error-path text of a connection-relative request names
// the connection, never the host it resolved to). An empty host replaces
// nothing.
func Host(s, host string) string {
	if host == "" {
		return s
	}
	lower, host := asciiLower(s), asciiLower(host) // byte lengths kept
	if !strings.Contains(lower, host) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(lower, host)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(HostMark)
		s, lower = s[i+len(host):], lower[i+len(host):]
	}
}

// PrivateAddressMark replaces an RFC-1918 literal in model-bound text.
const PrivateAddressMark = "[private address]"

// PrivateIPv4 replaces every dotted-decimal RFC-1918 IPv4 literal in
// s: unconditionally, whatever the text is. It looks at every
// run of digits and dots and replaces the whole run when any four
// consecutive parts of it spell an address in 10/8, 172.16/12 or
// 192.168/16, leading zeros read as decimal ("192.168.001.020" counts). It
// over-scrubs rather than under-scrubs: "v1.10.0.0.7" loses its run too.
func PrivateIPv4(s string) string {
	if b, ok := privateIPv4(s); ok {
		return string(b)
	}
	return s
}

// PrivateIPv4Bytes is PrivateIPv4 for text held as bytes, which it reads
// in place and does not keep: it returns b itself, not copied, when it
// holds no such literal, else a new slice.
func PrivateIPv4Bytes(b []byte) []byte {
	if out, ok := privateIPv4(b); ok {
		return out
	}
	return b
}

// privateIPv4 is s with PrivateIPv4's replacements, and whether it made
// any (without one, out is nil).
func privateIPv4[S ~string | ~[]byte](s S) (out []byte, replaced bool) {
	last := 0
	for i := 0; i < len(s); {
		if !isDigitOrDot(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isDigitOrDot(s[j]) {
			j++
		}
		if holdsPrivateIPv4(string(s[i:j])) {
			if out == nil {
				out = make([]byte, 0, len(s))
			}
			out = append(out, s[last:i]...)
			out = append(out, PrivateAddressMark...)
			last = j
		}
		i = j
	}
	if out == nil {
		return nil, false
	}
	return append(out, s[last:]...), true
}

func isDigitOrDot(c byte) bool { return c == '.' || '0' <= c && c <= '9' }

// holdsPrivateIPv4 reports whether run holds an RFC-1918 dotted quad as a
// substring: four consecutive dot-separated parts where the first may be
// the tail of a longer digit run ("00172.17.0.0" holds 172.17.0.0) and the
// last the head of one ("10.0.0.1234" holds 10.0.0.123).
func holdsPrivateIPv4(run string) bool {
	parts := strings.Split(run, ".")
	for i := 0; i+4 <= len(parts); i++ {
		b, ok1 := octet(parts[i+1])
		_, ok2 := octet(parts[i+2])
		if !ok1 || !ok2 {
			continue
		}
		first, last := parts[i], parts[i+3]
		for n := 1; n <= 3 && n <= len(first); n++ {
			a, _ := octet(first[len(first)-n:])
			if !(a == 10 || a == 172 && b >= 16 && b <= 31 || a == 192 && b == 168) {
				continue
			}
			for m := 1; m <= 3 && m <= len(last); m++ {
				if _, ok := octet(last[:m]); ok {
					return true
				}
			}
		}
	}
	return false
}

// octet parses a decimal part of 1–3 digits (leading zeros allowed) that
// is at most 255.
func octet(p string) (int, bool) {
	if len(p) == 0 || len(p) > 3 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		n = n*10 + int(p[i]-'0')
	}
	return n, n <= 255
}
