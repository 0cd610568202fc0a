package multimatch

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naive is the reference: every (pattern, start) where the pattern occurs,
// overlapping, found by direct comparison.
func naive(patterns [][]byte, text []byte) []Match {
	var out []Match
	for pi, p := range patterns {
		if len(p) == 0 {
			continue
		}
		for i := 0; i+len(p) <= len(text); i++ {
			if bytes.Equal(text[i:i+len(p)], p) {
				out = append(out, Match{Pattern: pi, Start: i, End: i + len(p)})
			}
		}
	}
	return out
}

func sorted(ms []Match) []Match {
	ms = slices.Clone(ms)
	slices.SortFunc(ms, func(a, b Match) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End), cmp.Compare(a.Pattern, b.Pattern))
	})
	return ms
}

// checkAgainstNaive fails t when m's matches differ from the reference as
// a set, or Each's order is not by End, or a match does not hold.
func checkAgainstNaive(t *testing.T, patterns [][]byte, text []byte) {
	t.Helper()
	m := New(patterns)
	got := m.AppendAll(nil, text)
	for i, g := range got {
		if g.Start < 0 || g.End > len(text) || !bytes.Equal(text[g.Start:g.End], patterns[g.Pattern]) {
			t.Fatalf("match %+v does not hold in %q for %q", g, text, patterns)
		}
		if i > 0 && got[i-1].End > g.End {
			t.Fatalf("matches out of End order: %+v then %+v", got[i-1], g)
		}
	}
	want := naive(patterns, text)
	if !slices.Equal(sorted(got), sorted(want)) {
		t.Fatalf("patterns %q over %q:\n got %+v\nwant %+v", patterns, text, sorted(got), sorted(want))
	}
	if m.Contains(text) != (len(want) > 0) {
		t.Fatalf("Contains(%q) = %v with %d matches", text, m.Contains(text), len(want))
	}
}

func TestExamples(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		text     string
		want     int
	}{
		{[]string{"ab", "b"}, "abab", 4},
		{[]string{"he", "she", "his", "hers"}, "ushers", 3},
		{[]string{"aa"}, "aaaa", 3},                   // overlapping
		{[]string{"a", "a"}, "a", 2},                  // duplicates each reported
		{[]string{"", "x"}, "xx", 2},                  // empty pattern ignored
		{[]string{}, "anything", 0},                   // no pattern
		{[]string{""}, "anything", 0},                 // only the empty one
		{[]string{"abc"}, "ab", 0},                    // text shorter than the pattern
		{[]string{"\x00\xff"}, "\x00\xff\x00", 1},     // any byte
		{[]string{`%2F`, `\/`, "/"}, `a/b%2Fc\/d`, 4}, // "/" inside "\/" too
	} {
		var ps [][]byte
		for _, p := range tc.patterns {
			ps = append(ps, []byte(p))
		}
		checkAgainstNaive(t, ps, []byte(tc.text))
		if n := len(New(ps).AppendAll(nil, []byte(tc.text))); n != tc.want {
			t.Errorf("%q over %q: %d matches, want %d", tc.patterns, tc.text, n, tc.want)
		}
	}
}

// TestEachStops: Each ends when fn returns false.
func TestEachStops(t *testing.T) {
	m := New([][]byte{[]byte("a")})
	n := 0
	m.Each([]byte("aaaa"), func(Match) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("fn called %d times, want 2", n)
	}
}

// TestRandomAgainstNaive: over random small alphabets (many overlaps) and
// random pattern sets, with and without the root skip (few and many first
// bytes), the matches are exactly the naive search's.
func TestRandomAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		alpha := []byte("ab")
		if iter%3 == 1 {
			alpha = []byte("abcdefgh")
		} else if iter%3 == 2 {
			alpha = []byte("ab%2F\\u0\"")
		}
		pick := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = alpha[r.IntN(len(alpha))]
			}
			return b
		}
		var patterns [][]byte
		for range r.IntN(14) {
			patterns = append(patterns, pick(r.IntN(6)))
		}
		checkAgainstNaive(t, patterns, pick(r.IntN(300)))
	}
}

// TestRandomLongTexts covers the scan strategies over long texts: more
// than 16 first bytes (the table scan from the start), and few first bytes
// that come thick (the IndexByte skip giving way to the table scan midway)
// or sparse (the skip throughout).
func TestRandomLongTexts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for iter := range 300 {
		var alpha []byte
		switch iter % 3 {
		case 0:
			alpha = []byte("abcdefghijklmnopqrstuvwxyz012345") // many first bytes
		case 1:
			alpha = []byte("abc") // thick first bytes
		default:
			alpha = []byte("abcdefghijklmnopqrstuvwxyz")
		}
		pick := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = alpha[r.IntN(len(alpha))]
			}
			return b
		}
		var patterns [][]byte
		n := 2 + r.IntN(5)
		if iter%3 == 0 {
			n = 20 + r.IntN(20)
		}
		for range n {
			patterns = append(patterns, pick(1+r.IntN(4)))
		}
		if iter%3 == 2 {
			// Sparse: patterns start with bytes the text rarely holds.
			for i := range patterns {
				patterns[i][0] = "XYZ"[i%3]
			}
		}
		text := pick(2000 + r.IntN(8000))
		for range 10 {
			at := r.IntN(len(text))
			copy(text[at:], "XYZ"[r.IntN(3):])
		}
		checkAgainstNaive(t, patterns, text)
	}
}

// FuzzMatcher: any pattern set (the first input, split at 0x00) over any
// text gives the naive search's matches.
func FuzzMatcher(f *testing.F) {
	f.Add([]byte("he\x00she\x00his\x00hers"), []byte("ushers"))
	f.Add([]byte("ab\x00b"), []byte("abab"))
	f.Add([]byte("sk_live_1\x00sk_live_1%3D\x00sk\\u005f"), []byte(`{"key":"sk_live_1","q":"sk_live_1%3D"}`))
	f.Add([]byte(""), []byte("x"))
	f.Add([]byte("\xff\xfe\x00\xfe"), []byte("\xff\xfe\xfe\xff"))
	f.Fuzz(func(t *testing.T, pats, text []byte) {
		if len(pats) > 512 || len(text) > 4096 {
			return
		}
		var patterns [][]byte
		for p := range bytes.SplitSeq(pats, []byte{0}) {
			patterns = append(patterns, p)
		}
		checkAgainstNaive(t, patterns, text)
	})
}

// benchText is 1 MiB of JSON-like API output, and benchPatterns twelve
// secret forms (four secrets: raw, percent-encoded, JSON-escaped), none of
// which occurs except where planted.
func benchInput(plant bool) ([]byte, [][]byte) {
	var b strings.Builder
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, `{"id":%d,"name":"item %x","tags":["a/b","c d"],"price":%d.%02d},`, i, r.Uint64(), r.IntN(1000), r.IntN(100))
	}
	text := []byte(b.String()[:1<<20])
	var patterns [][]byte
	for _, s := range []string{"sk_live_51Hx9Q2eZvKYlo2C", "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "AKIAIOSFODNN7EXAMPLE/x+y", "xoxb-2048-abcdefgh"} {
		patterns = append(patterns, []byte(s), []byte(strings.NewReplacer("/", "%2F", "+", "%2B").Replace(s)), []byte(strings.ReplaceAll(s, "/", `\/`)))
	}
	if plant {
		copy(text[len(text)/2:], patterns[0])
		copy(text[len(text)-100:], patterns[7])
	}
	return text, patterns
}

// BenchmarkMatch compares one pass of the matcher with the search it
// replaces, bytes.Index repeated per pattern until it finds no more, over
// 1 MiB: twelve forms of four secrets (four distinct first bytes, so the
// matcher skips between them with bytes.IndexByte), and twelve secrets with
// twelve first bytes (the DFA walks every byte).
func BenchmarkMatch(b *testing.B) {
	text, forms := benchInput(true)
	distinct := [][]byte{}
	for _, p := range []string{"Bq3", "Cz9", "Dk2", "Ew8", "Fy7", "Gx6", "Hv5", "Ju4", "Kt3", "Ls2", "Mr1", "Nq0"} {
		distinct = append(distinct, []byte(p+"-secret-value-0123456789"))
	}
	for _, set := range []struct {
		name     string
		patterns [][]byte
	}{{"12forms", forms}, {"12firstbytes", distinct}} {
		m := New(set.patterns)
		want := len(naive(set.patterns, text))
		b.Run(set.name+"/multimatch", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var dst []Match
			for b.Loop() {
				dst = m.AppendAll(dst[:0], text)
			}
			if len(dst) != want {
				b.Fatalf("%d matches, want %d", len(dst), want)
			}
		})
		b.Run(set.name+"/bytes.Index", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				n := 0
				for _, p := range set.patterns {
					for off := 0; ; {
						i := bytes.Index(text[off:], p)
						if i < 0 {
							break
						}
						n++
						off += i + 1
					}
				}
				if n != want {
					b.Fatalf("%d matches, want %d", n, want)
				}
			}
		})
	}
}

// BenchmarkNew measures compiling the twelve patterns (once per request
// when the secrets are the request's).
func BenchmarkNew(b *testing.B) {
	_, patterns := benchInput(false)
	for b.Loop() {
		New(patterns)
	}
}

// TestRareByteSkip covers the skip by each pattern's rarest byte: one
// rare byte standing for several patterns at different offsets (minOff <
// maxOff), occurrences near the text's ends, the rare byte thick in the
// text with the rest of the pattern missing, and patterns whose rarest
// byte is their first or last.
func TestRareByteSkip(t *testing.T) {
	patterns := [][]byte{[]byte("bench-key-7c"), []byte("ab-c"), []byte("-x"), []byte("key_"), []byte("q"), []byte("zz-")}
	texts := []string{
		"", "-", "bench-key-7c", "xbench-key-7cx", "ab-cbench-key-7c-x",
		"0123456789abcdef0123456789abcdef-", "-x-x-x-xab-c-xkey_q",
		"bench-key-7bench-key-7c", "zz-zz-zzz-", "q", "aaaaaaaaaaaaaaaaaaaaaab-c",
	}
	for _, s := range texts {
		checkAgainstNaive(t, patterns, []byte(s))
	}
	r := rand.New(rand.NewPCG(3, 4))
	alpha := []byte("0123456789abcdef-kyq_xz7")
	for range 2000 {
		b := make([]byte, r.IntN(400))
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		checkAgainstNaive(t, patterns, b)
	}
}

// TestSampledSkip covers the skip bytes a long text chooses from its own
// sample: a snake_case JSON text thick with '_' (byteRank's pick for the
// key) and with the key's other bytes too, the key planted inside a
// sampled chunk, between them, across a chunk's edge and at both ends,
// texts around sampleMin, and random long texts over a small alphabet
// where every pattern byte is common; every one gives the naive search's
// matches.
func TestSampledSkip(t *testing.T) {
	key := "sk_test_51Hx/Secret+Key=Value&x"
	patterns := [][]byte{[]byte(key), []byte(strings.ReplaceAll(key, "/", `\/`)), []byte("Key=V"), []byte("_x"), []byte("&")}
	row := `{"item_id":"a1b2_c3d4","created_at":"2026-12-01T15:04:05Z","tag_list":["x_1","y_2"],"note":"Secret+Key=Val"},`
	for _, size := range []int{sampleMin - 1, sampleMin, sampleMin + 1, 1 << 20} {
		base := []byte(strings.Repeat(row, size/len(row)+1)[:size])
		mid := (len(base) - sampleBytes) / 2
		for _, at := range []int{0, 100, sampleBytes - 10, sampleBytes + 500, mid, mid + sampleBytes - 5, len(base) - sampleBytes - 3, len(base) - len(key)} {
			text := slices.Clone(base)
			copy(text[at:], key)
			checkAgainstNaive(t, patterns, text)
		}
		checkAgainstNaive(t, patterns, base)
	}
	r := rand.New(rand.NewPCG(9, 10))
	alpha := []byte("sk_te51Hx/=&Vau")
	for range 4 {
		b := make([]byte, sampleMin+r.IntN(sampleMin))
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		for range 20 {
			copy(b[r.IntN(len(b)-len(key)):], key)
		}
		checkAgainstNaive(t, patterns, b)
	}
}
