// Package multimatch finds every occurrence of a fixed set of byte patterns
// in one pass over a text (Aho–Corasick, compiled to a DFA over byte
// classes). It is a leaf: the scrub uses it to look for every candidate
// form of every secret (raw, percent-encoded, JSON-escaped) in a body at
// once, instead of one search per candidate.
//
// Matching is exact, byte for byte, and reports overlapping occurrences:
// for patterns "ab" and "b" over "abab" it reports four matches. The cost
// is linear in the text (plus the matches reported), whatever the number
// of patterns: at the root state it jumps to the first position where a
// pattern could begin, found by bytes.IndexByte on each pattern's rarest
// byte (byteRank's guess, or for a long text the rarest in a sample of
// it) when there are few distinct ones and they are sparse, else by a
// table scan for first bytes, and walks the DFA from there. (Skipping by the first byte alone crawls when that byte is
// common: "bench-key-…" over a hex body stops every 16 bytes.)
//
// Building costs time and memory in the patterns' total length times the
// number of distinct bytes in them (a dense table): about 0.1 ms for twelve
// secret forms. Build once per secret set and keep it (the set changes
// when a credential does), not once per body. A Matcher is immutable after
// New and safe for concurrent use.
package multimatch

import (
	"bytes"
	"slices"
	"unsafe"
)

// rare is one skip byte: a byte every pattern it stands for holds at an
// offset between minOff and maxOff from its start.
type rare struct {
	b              byte
	minOff, maxOff int
}

// byteRank orders bytes from rarest (low) to commonest (high) in the text
// the scrub sees (JSON and HTML bodies, hex and base64 blobs): a rough
// static guess, only used to choose which byte of a pattern to skip by.
// A wrong guess costs speed, never a match.
var byteRank = func() (r [256]uint8) {
	for c := range 256 {
		r[c] = 10 // control bytes, DEL, non-ASCII, rare punctuation
	}
	for _, c := range []byte("!#$%&'()*+-/;<=>?@[\\]^_`|~") {
		r[c] = 40
	}
	for c := 'A'; c <= 'Z'; c++ {
		r[c] = 60
	}
	for _, c := range []byte("jqxzJQXZ") {
		r[c] = 50
	}
	for c := 'a'; c <= 'z'; c++ {
		r[c] = 100
	}
	for _, c := range []byte("kvwyg") {
		r[c] = 90
	}
	for c := '0'; c <= '9'; c++ {
		r[c] = 120
	}
	for _, c := range []byte("abcdefABCDEF") { // hex digits: whole blobs of them
		r[c] = 120
	}
	for _, c := range []byte("etaoinsrhl") {
		r[c] = 140
	}
	for _, c := range []byte("\" ,:.{}\n\t\r") {
		r[c] = 200
	}
	return r
}()

// rarestByte returns the offset of p's rarest byte by byteRank (the first
// such offset).
func rarestByte(p []byte) int {
	best := 0
	for i := 1; i < len(p); i++ {
		if byteRank[p[i]] < byteRank[p[best]] {
			best = i
		}
	}
	return best
}

// Match is one occurrence: Pattern is the index of the pattern in the slice
// given to New, and text[Start:End] equals it.
type Match struct {
	Pattern    int
	Start, End int
}

// maxSkipBytes bounds how many distinct first bytes the root skip tracks
// with bytes.IndexByte; with more, the DFA walks every byte.
const maxSkipBytes = 16

// Matcher is a compiled pattern set.
type Matcher struct {
	class    [256]uint8 // byte → class; class 0 is "in no pattern"
	nclass   int
	trans    []int32   // state*nclass + class → next state
	out      [][]int32 // state → patterns ending here (own and by suffix links)
	lens     []int     // pattern index → length
	skip     []rare    // the distinct rare bytes, when few enough to skip by
	start    [256]bool // the first bytes, for the table scan otherwise
	patterns int
	pats     [][]byte // the non-empty patterns, copied: sampledSkip picks from them
}

// New compiles patterns. Empty patterns match nothing and are ignored (they
// keep their index, so Match.Pattern still indexes the caller's slice);
// duplicates are each reported.
func New(patterns [][]byte) *Matcher {
	m := &Matcher{lens: make([]int, len(patterns)), patterns: len(patterns)}
	// Byte classes: one per byte that occurs in any pattern, 0 for the rest.
	for _, p := range patterns {
		for _, b := range p {
			if m.class[b] == 0 {
				m.nclass++
				m.class[b] = uint8(m.nclass)
			}
		}
	}
	m.nclass++ // class 0
	// The trie, as a dense table sized for the worst case (every pattern
	// byte a state of its own), trimmed after; −1 is "no edge yet".
	maxStates := 1
	for _, p := range patterns {
		maxStates += len(p)
	}
	type node struct{ out []int32 }
	nodes := make([]node, 1, maxStates)
	trans := make([]int32, maxStates*m.nclass)
	for i := range trans {
		trans[i] = -1
	}
	var skip []rare
	for pi, p := range patterns {
		m.lens[pi] = len(p)
		if len(p) == 0 {
			continue
		}
		m.start[p[0]] = true
		m.pats = append(m.pats, slices.Clone(p))
		off := rarestByte(p)
		k := slices.IndexFunc(skip, func(r rare) bool { return r.b == p[off] })
		if k < 0 {
			skip = append(skip, rare{b: p[off], minOff: off, maxOff: off})
		} else {
			skip[k].minOff, skip[k].maxOff = min(skip[k].minOff, off), max(skip[k].maxOff, off)
		}
		s := int32(0)
		for _, b := range p {
			c := int(m.class[b])
			next := trans[int(s)*m.nclass+c]
			if next < 0 {
				next = int32(len(nodes))
				nodes = append(nodes, node{})
				trans[int(s)*m.nclass+c] = next
			}
			s = next
		}
		nodes[s].out = append(nodes[s].out, int32(pi))
	}
	trans = trans[:len(nodes)*m.nclass]
	// Breadth first: fail links, and missing edges filled from the fail
	// state's (which makes the table a DFA).
	fail := make([]int32, len(nodes))
	queue := make([]int32, 0, len(nodes))
	for c := range m.nclass {
		next := trans[c]
		if next < 0 {
			trans[c] = 0
			continue
		}
		fail[next] = 0
		queue = append(queue, next)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		// Outputs by suffix: the fail state is shallower, so it is done.
		nodes[s].out = append(nodes[s].out, nodes[fail[s]].out...)
		for c := range m.nclass {
			i := int(s)*m.nclass + c
			next := trans[i]
			if next < 0 {
				trans[i] = trans[int(fail[s])*m.nclass+c]
				continue
			}
			fail[next] = trans[int(fail[s])*m.nclass+c]
			queue = append(queue, next)
		}
	}
	// Premultiply: an entry holds the next state's row offset, bitwise
	// inverted (negative) when that state ends a pattern, so the scan does
	// one load, one add and one sign test per byte.
	m.out = make([][]int32, len(nodes))
	for i, n := range nodes {
		m.out[i] = n.out
	}
	for i, next := range trans {
		v := next * int32(m.nclass)
		if len(nodes[next].out) > 0 {
			v = ^v
		}
		trans[i] = v
	}
	m.trans = trans
	m.skip = skipSet(skip)
	return m
}

// skipSet returns skip when it is short enough to skip by, else nil (the
// table scan).
func skipSet(skip []rare) []rare {
	if len(skip) > maxSkipBytes {
		return nil
	}
	return skip
}

// Sampling: a text of at least sampleMin bytes has its skip bytes chosen
// by how often each byte occurs in sampleChunks chunks of sampleBytes
// spread over it, rather than by byteRank alone. byteRank is a guess
// about text in general, and one text can defeat it: a snake_case JSON
// API writes '_' in every key, which byteRank takes for rare, so an
// "sk_live_…" key would stop the skip at every key. The sample costs
// 3 KiB of counting, against the megabyte it speeds.
const (
	sampleMin    = 64 << 10
	sampleBytes  = 1 << 10
	sampleChunks = 3
)

// sampledSkip returns the skip bytes for text: for each pattern, the byte
// least frequent in a sample of text (byteRank breaking ties, so a text
// that holds none of a pattern's bytes keeps the static choice), when the
// sample counts fewer stops for that set than for the static one. Any
// choice is correct (the skip is exact whatever byte stands for a
// pattern); the sample only makes the jumps longer.
func (m *Matcher) sampledSkip(text []byte) []rare {
	var count [256]uint32
	for k := range sampleChunks {
		from := (len(text) - sampleBytes) * k / (sampleChunks - 1)
		for _, b := range text[from : from+sampleBytes] {
			count[b]++
		}
	}
	score := func(b byte) uint64 { return uint64(count[b])<<8 | uint64(byteRank[b]) }
	var skip []rare
	for _, p := range m.pats {
		off := 0
		for i := 1; i < len(p); i++ {
			if score(p[i]) < score(p[off]) {
				off = i
			}
		}
		k := slices.IndexFunc(skip, func(r rare) bool { return r.b == p[off] })
		if k < 0 {
			skip = append(skip, rare{b: p[off], minOff: off, maxOff: off})
		} else {
			skip[k].minOff, skip[k].maxOff = min(skip[k].minOff, off), max(skip[k].maxOff, off)
		}
	}
	// Keep the static choice unless the sample says it stops more often:
	// the sampled bytes may be more, or spread over more distinct bytes
	// (past maxSkipBytes: the table scan).
	stops := func(skip []rare) uint64 {
		if skip == nil {
			return ^uint64(0)
		}
		var n uint64
		for _, r := range skip {
			n += uint64(count[r.b])
		}
		return n
	}
	if skip = skipSet(skip); stops(skip) < stops(m.skip) {
		return skip
	}
	return m.skip
}

// Len reports how many patterns m was built from.
func (m *Matcher) Len() int { return m.patterns }

// Each calls fn for every occurrence in text, in order of End (and, for one
// End, longest pattern first), until fn returns false.
func (m *Matcher) Each(text []byte, fn func(Match) bool) {
	if len(m.out) <= 1 { // no non-empty pattern
		return
	}
	var next [maxSkipBytes]int // per skip byte: its next position (or past the end)
	for i := range next {
		next[i] = -1
	}
	skip := m.skip
	if len(text) >= sampleMin {
		skip = m.sampledSkip(text)
	}
	// The IndexByte skip pays a call per first byte it passes; when they
	// come thick (short jumps), the table scan is cheaper: switch to it
	// for the rest of the text.
	table := skip == nil
	var jumps, jumped int
	trans, class, nc := m.trans, &m.class, m.nclass
	s := 0 // the current state's row offset in trans
	for i := 0; i < len(text); i++ {
		if s == 0 && table {
			// At the root: a table scan to the next first byte, four bytes
			// a step (independent loads, unlike the DFA's dependent chain).
			start := &m.start
			for i+4 <= len(text) && !start[text[i]] && !start[text[i+1]] && !start[text[i+2]] && !start[text[i+3]] {
				i += 4
			}
			for i < len(text) && !start[text[i]] {
				i++
			}
			if i == len(text) {
				return
			}
		} else if s == 0 {
			// At the root no occurrence has begun, and one that begins at
			// p ≥ i holds some skip byte b at p+off, minOff ≤ off ≤
			// maxOff: at or after b's next occurrence at ≥ i+minOff. So
			// none begins before j, the least of those occurrences less
			// its maxOff, and the DFA restarts at the root there. Each
			// occurrence is found by bytes.IndexByte and remembered.
			j := len(text)
			for k, r := range skip {
				if from := i + r.minOff; next[k] < from {
					next[k] = len(text) + r.maxOff // none: no start from it
					if from < len(text) {
						if d := bytes.IndexByte(text[from:], r.b); d >= 0 {
							next[k] = from + d
						}
					}
				}
				j = min(j, next[k]-r.maxOff)
			}
			if j >= len(text) {
				return
			}
			j = max(j, i)
			jumps, jumped = jumps+1, jumped+j-i
			if jumps == 64 {
				table = jumped < 64*4*len(skip)
				jumps, jumped = 0, 0
			}
			i = j
		}
		v := trans[s+int(class[text[i]])]
		if v >= 0 {
			s = int(v)
			continue
		}
		s = int(^v)
		for _, p := range m.out[s/nc] {
			if !fn(Match{Pattern: int(p), Start: i + 1 - m.lens[p], End: i + 1}) {
				return
			}
		}
	}
}

// EachString is Each over a string, without copying it: Each only reads
// its text.
func (m *Matcher) EachString(text string, fn func(Match) bool) {
	m.Each(unsafe.Slice(unsafe.StringData(text), len(text)), fn)
}

// AppendAll appends every occurrence in text to dst, in Each's order.
func (m *Matcher) AppendAll(dst []Match, text []byte) []Match {
	m.Each(text, func(mt Match) bool {
		dst = append(dst, mt)
		return true
	})
	return dst
}

// Contains reports whether any pattern occurs in text.
func (m *Matcher) Contains(text []byte) bool {
	found := false
	m.Each(text, func(Match) bool {
		found = true
		return false
	})
	return found
}
