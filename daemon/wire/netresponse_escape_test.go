package wire

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// The reference escape: appendJSONString as it was before the table and
// word-store rewrite (a branch per escape, an append per safe run), kept
// verbatim but for its names so the differential tests can hold the new
// one to it byte for byte.

// stdJSONString is s as encoding/json writes it with SetEscapeHTML(false),
// the other reference.
func stdJSONString(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// checkEscape holds appendJSONString and appendJSONBytes (the word
// loop alone, and with escapeASCII) to encoding/json for s, appending to
// an empty buffer, to a prefix, and into spare capacity of every size
// from none to a little more than the output (so the fast loop stops at
// each point short of a full buffer, and append's growth takes over).
func checkEscape(t testing.TB, s string) {
	t.Helper()
	checkEscapeOf(t, s, appendJSONString)
	checkEscapeOf(t, []byte(s), appendJSONBytes)
}

func checkEscapeOf[S bytestring](t testing.TB, s S, appendJSONString func([]byte, S) []byte) {
	t.Helper()
	want := stdJSONString(t, string(s))
	if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
		t.Fatalf("appendJSONString(%q) = %q, want %q", s, got, want)
	}
	if got := appendJSONString([]byte("p:"), s); !bytes.Equal(got, append([]byte("p:"), want...)) {
		t.Fatalf("appendJSONString(p:, %q) = %q, want p:%q", s, got, want)
	}
	step := 1
	if len(want) > 256 {
		step = len(want)/64 + 1
	}
	for room := 0; room <= len(want)+16; room += step {
		dst := make([]byte, 3, 3+room)
		got := appendJSONString(dst, s)
		if !bytes.Equal(got[3:], want) || string(got[:3]) != "\x00\x00\x00" {
			t.Fatalf("appendJSONString(%q) with %d bytes of room = %q, want %q", s, room, got[3:], want)
		}
		if len(got) <= cap(dst) && &got[0] != &dst[0] {
			t.Fatalf("appendJSONString(%q) with %d bytes of room moved an output that fits", s, room)
		}
	}
}

// escapeSeeds are the cases at the edges of the escape: every control
// byte, invalid UTF-8 of each kind, U+2028 and U+2029, valid multibyte
// runes, and safe runs ending on each side of the 8- and 32-byte
// boundaries the fast loop steps by.
func escapeSeeds() []string {
	seeds := []string{
		"", "a", "\"", "\\", "\x7f", "<>&", "\u2028", "\u2029", "\u2027\u202a",
		"\xff", "\xc3\x28", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "\xe2\x82\xac", "\xf0\x9f\x98",
		"\xc0\xaf", "\xef\xbf\xbd", "caf\u00e9 \u65e5\u672c \U0001F600",
		`{"id":1,"name":"lamp <on> & \"off\"","path":"a\/b"},`,
		// The edges of the non-ASCII run: each range bound of a two-
		// and three-byte sequence, surrogates, overlong leads, U+2027
		// and U+202A beside U+2028, four-byte runes and cut sequences
		// inside runs of CJK and Cyrillic.
		"\xc2\x80\xdf\xbf\xc1\xbf\xc0\x80", "\xe0\xa0\x80\xe0\x9f\xbf", "\xed\x9f\xbf\xed\xa0\x80\xed\xbf\xbf",
		"\xef\xbf\xbf\xee\x80\x80", "\xe2\x80\xa7\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa", "\xf4\x8f\xbf\xbf\xf4\x90\x80\x80",
		strings.Repeat("日本語", 12) + "\xe6\x97" + strings.Repeat("Съешь", 9) + "\xd0" + "ё\u2028東",
		strings.Repeat("ж", 40) + "\U0001F600" + strings.Repeat("語", 30) + "\xc3",
	}
	for c := range 0x20 {
		seeds = append(seeds, string(rune(c)), "ab"+string(rune(c))+"cdefghijk")
	}
	for _, n := range []int{6, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 39, 40, 41, 63, 64, 65} {
		run := strings.Repeat("x", n)
		for _, e := range []string{`"`, "\n", "\x01", "\xff", "\u2028", "\u00e9", "\U0001F600", "\xe2\x82"} {
			seeds = append(seeds, run+e, run+e+run, e+run+e)
		}
	}
	return seeds
}

// TestAppendJSONStringMatchesReferences: the seeds, every byte value at
// every offset of a 48-byte safe text (each side of every word and block
// boundary), and the multibyte and invalid sequences straddling them.
func TestAppendJSONStringMatchesReferences(t *testing.T) {
	for _, s := range escapeSeeds() {
		checkEscape(t, s)
	}
	base := strings.Repeat("abcdefgh", 6)
	for c := range 256 {
		for p := range len(base) {
			b := []byte(base)
			b[p] = byte(c)
			checkEscape(t, string(b))
		}
	}
	for _, seq := range []string{"\u00e9", "\u20ac", "\U0001F600", "\u2028", "\u2029", "\xe2\x80", "\xf0\x9f\x98", "\xed\xa0\x80",
		"\xe0\x9f\xbf", "\xed\x9f\xbf", "\xc1\xbf", "日本語の", "ёж\xd0", "語\u2029語"} {
		for p := range len(base) - len(seq) {
			checkEscape(t, base[:p]+seq+base[p+len(seq):])
		}
	}
	for _, s := range encodeCorpus() {
		checkEscape(t, s)
	}
}

// FuzzJSONEscape: any string escapes as encoding/json and the reference
// escape write it. Seeds: escapeSeeds, and testdata/fuzz/FuzzJSONEscape.
func FuzzJSONEscape(f *testing.F) {
	for _, s := range escapeSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkEscape(t, s)
		if got := appendJSONString(nil, s); !utf8.Valid(got) {
			t.Fatalf("appendJSONString(%q) wrote invalid UTF-8", s)
		}
	})
}

// BenchmarkJSONEscapeRef is BenchmarkAppendJSONString's cases through
// encoding/json, the escape's reference: the two side by side in one run.
func BenchmarkJSONEscapeRef(b *testing.B) {
	for _, bc := range escapeBenchCases() {
		b.Run(bc.name, func(b *testing.B) {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			b.SetBytes(int64(len(bc.s)))
			for b.Loop() {
				buf.Reset()
				if err := enc.Encode(bc.s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAppendJSONStringBlocks: the 64-byte block path (texts long enough
// for it) against the reference: every byte value at every offset of two
// blocks and their read-ahead, and random texts mixing long safe runs,
// escapes of every kind (dense, sparse, runs of them past 32 bytes) and
// now and then a non-ASCII byte, at lengths around the block edges.
func TestAppendJSONStringBlocks(t *testing.T) {
	base := strings.Repeat("abcdefgh", 26) // 208 bytes
	for c := range 256 {
		for p := range len(base) {
			b := []byte(base)
			b[p] = byte(c)
			if got, want := appendJSONString(nil, string(b)), stdJSONString(t, string(b)); !bytes.Equal(got, want) {
				t.Fatalf("byte %#x at %d: got %q, want %q", c, p, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	esc := []byte{'"', '\\', '\n', 0, 0x1f, '\t', 0x7f}
	for range 3000 {
		b := make([]byte, 90+r.IntN(400))
		dense := r.IntN(40) + 1
		for i := range b {
			switch x := r.IntN(dense * 20); {
			case x < 20:
				b[i] = esc[r.IntN(len(esc))]
			case x == 20 && r.IntN(8) == 0:
				b[i] = byte(0x80 + r.IntN(0x80))
			default:
				b[i] = byte(0x20 + r.IntN(0x5f))
				if b[i] == '"' || b[i] == '\\' {
					b[i] = 'x'
				}
			}
		}
		if r.IntN(10) == 0 { // a run of escapes longer than a copyRun
			k := r.IntN(len(b) - 70)
			for j := k; j < k+70; j++ {
				b[j] = '"'
			}
		}
		checkEscape(t, string(b))
	}
}

// TestEscapeStretches: long texts that turn from mostly non-ASCII to
// ASCII and back (so the word loop's stretch grows to its cap and drops
// back), with escapes and bad bytes at the turns, escape as the
// references do.
func TestEscapeStretches(t *testing.T) {
	var b strings.Builder
	for i := range 12 {
		b.WriteString(strings.Repeat("日本語のテキスト、Съешь ", 40*(i+1)))
		b.WriteString("\xe2\x80\xa8\xff\"")
		b.WriteString(strings.Repeat(`{"id":1,"name":"item"},`, 30*(12-i)))
		b.WriteString(strings.Repeat("plain ascii prose ", 200))
		b.WriteString("\xc3\n")
	}
	s := b.String()
	for _, n := range []int{len(s), len(s) - 1, 70_001, 4097} {
		checkEscape(t, s[:n])
	}
}
