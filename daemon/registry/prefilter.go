package registry

// MayTrigger is a pre-filter for Triggers on stored requirement text: it
// reports false only when no requirement requirement.Parse can make of
// raw (with any Options) triggers an entry of g, so a caller that acts
// only on a trigger (the start's pin re-consent pass) may skip the parse
// of such a text. It looks at the bytes alone, so it holds for any text,
// canonical or not, however it was written. One pass over raw, no
// allocation; safe for concurrent use.
//
// Why false is sound. Triggers hits when foldName(provider.name) is a key
// of byName, or a host of requirement.DeriveAllowedHosts is a key of
// byHost. MayTrigger answers true at once for a text holding a backslash
// (a JSON escape can spell any character), a '%' (url.Parse decodes a
// percent-encoded byte of 0x80 or more in an endpoint's host, and IDNA
// then makes an ASCII host of it that the text does not hold) or any byte
// of 0x80 or more (IDNA maps Unicode to ASCII: a fullwidth letter, U+3002
// as a dot; strings.ToLower folds the Kelvin sign to 'k'). In any other
// text every JSON string is the very bytes between its quotes, printable
// ASCII or controls, and what the parser and DeriveAllowedHosts make of
// one is the ASCII lower case of a part of it:
//
//   - provider.name is kept as it is; foldName (strings.ToLower) of ASCII
//     is its ASCII lower case;
//   - a declared host is NormalizeHost of the string (for ASCII, the
//     string unchanged, or IDNA's ToASCII, which for ASCII input lower-
//     cases and removes nothing but leading dots), or, beside a lanHost,
//     the string itself;
//   - an endpoint's host is NormalizeHost of url.Parse's Hostname(), a
//     part of the URL string (url.Parse refuses a percent escape below
//     0x80 in a host, and there is no '%' here anyway).
//
// So a key that triggers is, in ASCII lower case, a substring of raw in
// ASCII lower case; MayTrigger looks for every key of byName and byHost
// that way (case-insensitively, with an Aho-Corasick automaton) and
// answers false only when none occurs. An empty key would occur in every
// text; the loader refuses one, and MayTrigger answers true for it anyway.
func (g *Registry) MayTrigger(raw []byte) bool {
	m := g.prefilter()
	if m.always {
		return true
	}
	next, class := m.next, &m.class
	i := 0 // the row of the current state in next
	for _, b := range raw {
		c := class[b]
		if c == classFallback {
			return true
		}
		s := next[i+int(c)]
		if s == matched {
			return true
		}
		i = int(s)
	}
	return false
}

// prefilter returns g's automaton, built on first use.
func (g *Registry) prefilter() *keyMatcher {
	g.matcherOnce.Do(func() {
		keys := make([]string, 0, len(g.byName)+len(g.byHost))
		for k := range g.byName {
			keys = append(keys, k)
		}
		for k := range g.byHost {
			keys = append(keys, k)
		}
		g.matcher = newKeyMatcher(keys)
	})
	return g.matcher
}

// classFallback is the byte class that makes MayTrigger answer true: '\\',
// '%' and every byte of 0x80 or more. Class 0 is "no key holds this byte".
const classFallback = 0xff

// keyMatcher is an Aho-Corasick automaton over keys folded to ASCII lower
// case, as a full transition table over byte classes (one class per
// distinct key byte, one for every other byte): next[row+class], row
// being state*classes, is the next state's row, or matched when that
// state ends a key (the automaton stops at the first match).
type keyMatcher struct {
	always  bool // a key is empty, or there are too many states
	class   [256]uint8
	classes int
	next    []uint32
}

// matched marks a move into a state that ends a key.
const matched = ^uint32(0)

func newKeyMatcher(keys []string) *keyMatcher {
	m := &keyMatcher{classes: 1}
	for _, b := range []byte{'\\', '%'} {
		m.class[b] = classFallback
	}
	for b := 0x80; b < 0x100; b++ {
		m.class[b] = classFallback
	}
	for _, k := range keys {
		if k == "" {
			return &keyMatcher{always: true}
		}
		for i := 0; i < len(k); i++ {
			b := lowerASCII(k[i])
			if m.class[b] != 0 {
				continue // seen, or a fallback byte: a text holding it falls back
			}
			if m.classes == classFallback {
				return &keyMatcher{always: true}
			}
			m.class[b] = uint8(m.classes)
			m.classes++
		}
	}
	for b := 'A'; b <= 'Z'; b++ {
		m.class[b] = m.class[b+'a'-'A']
	}
	// The trie: goto[state*classes+class], 0 meaning none (state 0 is the
	// root, never a target).
	var (
		trie = make([]int32, m.classes)
		end  = []bool{false}
	)
	for _, k := range keys {
		s := int32(0)
		for i := 0; i < len(k); i++ {
			c := m.class[lowerASCII(k[i])]
			if c == classFallback {
				s = -1 // a key with such a byte never occurs in a text MayTrigger scans
				break
			}
			t := trie[int(s)*m.classes+int(c)]
			if t == 0 {
				t = int32(len(end))
				end = append(end, false)
				trie = append(trie, make([]int32, m.classes)...)
				trie[int(s)*m.classes+int(c)] = t
			}
			s = t
		}
		if s > 0 {
			end[s] = true
		}
	}
	// Breadth first, each state's missing moves are its failure state's.
	fail := make([]int32, len(end))
	queue := make([]int32, 0, len(end))
	for c := 0; c < m.classes; c++ {
		if t := trie[c]; t != 0 {
			queue = append(queue, t) // fail[t] = 0
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		end[s] = end[s] || end[fail[s]]
		for c := 0; c < m.classes; c++ {
			i := int(s)*m.classes + c
			if t := trie[i]; t != 0 {
				fail[t] = trie[int(fail[s])*m.classes+c]
				queue = append(queue, t)
			} else {
				trie[i] = trie[int(fail[s])*m.classes+c]
			}
		}
	}
	// Each move names its target's row; one into a state that ends a key
	// is matched.
	m.next = make([]uint32, len(trie))
	for i, t := range trie {
		if end[t] {
			m.next[i] = matched
		} else {
			m.next[i] = uint32(int(t) * m.classes)
		}
	}
	return m
}

func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}
