package transports

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// scratchReader serves data in chunks of n and, as io.Reader allows,
// scribbles mark over the whole of every buffer it is given first.
type scratchReader struct {
	data []byte
	n    int
	mark byte
}

func (s *scratchReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = s.mark
	}
	k := min(len(p), s.n, len(s.data))
	copy(p, s.data[:k])
	s.data = s.data[k:]
	if len(s.data) == 0 {
		return k, io.EOF
	}
	return k, nil
}

func allZero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// TestBodyPoolZeroes: a body read at the cap's full size class comes
// from the pool of read buffers, and Release zeroes every byte of its
// capacity before it can be reused, the reader's scratch past the body
// included, so a later response (another app's, another host's) can never
// see a byte of an earlier one, not even by reslicing its Body to its
// capacity. A body the cap refuses hands its buffer back zeroed at once.
func TestBodyPoolZeroes(t *testing.T) {
	secret := []byte("sk_live_reflected/Zq8r2LkP9wXc")
	first := bytes.Repeat([]byte("x"), MaxBodyBytes-len(secret))
	first = append(first, secret...)
	body, err := readCapped(&scratchReader{data: first, n: 32 << 10, mark: 'S'}, MaxBodyBytes, MaxBodyBytes)
	if err != nil || !bytes.Equal(body, first) {
		t.Fatalf("readCapped(1 MiB) = %d bytes, %v", len(body), err)
	}
	if cap(body) != bodyClass {
		t.Fatalf("a body at the cap has capacity %d, want the pooled class %d", cap(body), bodyClass)
	}
	resp := &Response{Body: body}
	resp.Release()
	if resp.Body != nil {
		t.Error("Release left Body set")
	}
	if !allZero(body[:cap(body)]) {
		t.Fatal("Release pooled a buffer still holding the body")
	}
	resp.Release() // a second Release does nothing

	// A later, shorter body with a lying hint gets a class buffer: past
	// its length there is nothing but zeros.
	for range 3 {
		short, err := readCapped(&chunkReader{data: []byte(`{"ok":true}`), n: 4}, MaxBodyBytes, MaxBodyBytes)
		if err != nil || string(short) != `{"ok":true}` {
			t.Fatalf("readCapped(short) = %q, %v", short, err)
		}
		if !allZero(short[len(short):cap(short)]) {
			t.Fatal("a reused buffer shows bytes of an earlier body past its length")
		}
		(&Response{Body: short}).Release()
	}

	// Over the cap: refused, and the buffer it filled goes back zeroed.
	over := bytes.Repeat(secret, (MaxBodyBytes+len(secret))/len(secret)+1)
	if _, err := readCapped(&scratchReader{data: over, n: 64 << 10, mark: 'S'}, MaxBodyBytes, MaxBodyBytes); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("readCapped(over the cap) = %v, want ErrBodyTooLarge", err)
	}
	for range 4 {
		b := getBody()
		if !allZero(b[:cap(b)]) {
			t.Fatal("the pool holds a buffer that is not zeroed")
		}
		putBody(b)
	}
}

// TestBodyPoolOnlyClass: only buffers of exactly the pooled class enter
// the pool, so it never holds a buffer of another size.
func TestBodyPoolOnlyClass(t *testing.T) {
	small := []byte("small body")
	putBody(small)
	if string(small) != "small body" {
		t.Error("putBody touched a buffer outside the class")
	}
	for range 4 {
		if b := getBody(); cap(b) != bodyClass || len(b) != 0 {
			t.Fatalf("getBody = len %d cap %d, want 0, %d", len(b), cap(b), bodyClass)
		}
	}
}

// TestReadCappedChunkedPooled: a body read without a length (chunked,
// HTTP/2 without content-length) that outgrows half of poolJump moves to
// a pooled class buffer instead of doubling on, arrives whole, and is
// still capped at MaxBodyBytes; a shorter one keeps a buffer to fit.
//
// conformance: P1-R6-06
func TestReadCappedChunkedPooled(t *testing.T) {
	for _, size := range []int{poolJump/2 - 1, poolJump/2 + 1, poolJump, MaxBodyBytes} {
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		got, err := readCapped(&chunkReader{data: data, n: 16 << 10}, MaxBodyBytes, -1)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("readCapped(%d bytes, no length) = %d bytes, %v", size, len(got), err)
		}
		if pooled := cap(got) == bodyClass; pooled != (size > poolJump/2) {
			t.Errorf("readCapped(%d bytes, no length): capacity %d, pooled %v", size, cap(got), pooled)
		}
		(&Response{Body: got}).Release()
	}
	over := bytes.Repeat([]byte("x"), MaxBodyBytes+1)
	if got, err := readCapped(&chunkReader{data: over, n: 16 << 10}, MaxBodyBytes, -1); !errors.Is(err, ErrBodyTooLarge) || got != nil {
		t.Errorf("readCapped(1 MiB + 1, no length) = %d bytes, %v; want ErrBodyTooLarge", len(got), err)
	}
}

// BenchmarkReadCapped reads a 1 MiB body in 16 KiB reads (what a TLS
// connection yields) with its length known and without (chunked).
func BenchmarkReadCapped(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), MaxBodyBytes/16)
	for _, bc := range []struct {
		name string
		hint int64
	}{{"length", MaxBodyBytes}, {"chunked", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				body, err := readCapped(&chunkReader{data: data, n: 16 << 10}, MaxBodyBytes, bc.hint)
				if err != nil {
					b.Fatal(err)
				}
				(&Response{Body: body}).Release()
			}
		})
	}
}
