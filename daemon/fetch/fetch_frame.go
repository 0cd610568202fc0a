package fetch

import (
	"sync"
	"sync/atomic"

	"github.com/snug/snugd/daemon/wire"
)

// Pooled answer frames. A large net-response is encoded into a reused
// buffer of the net frame size class instead of a fresh 1 MiB one, and
// the caller that wrote it out hands it back with NetResult.Release.
//
// A frame holds what its app may see (the scrubbed body, fixed
// sentences), never a credential, but it is that app's data: a buffer is
// zeroed over its whole capacity before it goes back, and handed out
// empty, so no later answer (another app's) can show a byte of it, not
// even by reslicing. Release is guarded: a second Release of the same
// answer, or of a copy of it, does nothing, so a buffer is never pooled
// twice (which would hand one buffer to two answers at once).

// frameClass is a pooled frame buffer's capacity: the net frame size
// class and one byte (the encoder grows no further: a longer frame is
// replaced by NET_SIZE_EXCEEDED).
const FrameClass = wire.MaxNetFrameBytes + 1

// pooledFrameMin is the body length from which an answer is encoded into
// a pooled buffer; a smaller one is allocated to fit.
const pooledFrameMin = 64 << 10

// frameBuf is one pooled buffer, lent to one answer.
type frameBuf struct {
	B        []byte
	released atomic.Bool
}

// frames holds zeroed, empty frame buffers. sync.Pool drops what it holds
// at garbage collection, so it pins no more than recent answers used.
var frames sync.Pool

func GetFrame() *frameBuf {
	if b, ok := frames.Get().(*[]byte); ok {
		return &frameBuf{B: (*b)[:0]}
	}
	return &frameBuf{B: make([]byte, 0, FrameClass)}
}

// put zeroes the buffer and pools it, once.
func (fb *frameBuf) put() {
	if fb == nil || !fb.released.CompareAndSwap(false, true) {
		return
	}
	b := fb.B[:cap(fb.B)]
	fb.B = nil
	clear(b)
	b = b[:0]
	frames.Put(&b)
}

// encodeAnswer encodes a net-response, into a pooled buffer when its body
// is large. buf is the buffer the frame is in, nil when it is not pooled.
func encodeAnswer(resp wire.NetResponse) (b []byte, replaced bool, buf *frameBuf, err error) {
	if resp.BodyLen() < pooledFrameMin {
		b, replaced, err = wire.EncodeNetResponse(resp)
		return b, replaced, nil, err
	}
	fb := GetFrame()
	b, replaced, err = wire.AppendNetResponse(fb.B[:0], resp)
	if err != nil || replaced || cap(b) != cap(fb.B) || len(b) == 0 || &b[0] != &fb.B[:1][0] {
		// Not in the pooled buffer (refused, replaced or outgrown): what
		// the encoder wrote into it is zeroed and it goes back now.
		fb.put()
		return b, replaced, nil, err
	}
	return b, false, fb, nil
}

// Release hands the answer's frame buffer back for reuse, when it is a
// pooled one; Frame must not be used afterwards (an API handler calls it
// once the frame is written out). Not calling Release is always safe, and
// a second call does nothing.
func (r NetResult) Release() { r.Pooled.put() }
