// Package benchdata holds the answer bodies the benchmarks share:
// scripts/bench serves them and the Go benchmarks of the answer path
// escape and send them, so both measure the same text.
package benchdata

import (
	"bytes"
	"fmt"
)

// Readings returns n bytes of JSON text, an array of small objects
// (sensor readings: a timestamp and a few numbers of varying width),
// padded with spaces before its "]" to exactly n bytes. It is what an API
// returns rather than text that needs no escape: a '"' (escaped to \")
// every 17 bytes or so, at irregular places. No denser: a 1 MiB body's
// escapes must fit the 64 KiB margin of the net frame size class, or snugd answers it NET_SIZE_EXCEEDED; these come to about 60,000,
// 5 KiB short of it.
func Readings(n int) []byte {
	var b bytes.Buffer
	b.Grow(n)
	b.WriteByte('[')
	var obj []byte
	for i := 0; ; i++ {
		obj = obj[:0]
		if i > 0 {
			obj = append(obj, ',')
		}
		obj = fmt.Appendf(obj, `{"t":%d,"v":[%d.%02d,%d.%02d,1013.%02d,0.%04d,17.%02d,%d.%02d,%d.%d,%d]}`,
			1733011200+60*i, 18+i%9, i%100, 40+i%50, i*7%100, i*3%100, i*37%10000, i*11%100, 3+i%6, i*13%100, 60+i%30, i%10, i*17%1000)
		if b.Len()+len(obj)+1 > n {
			break
		}
		b.Write(obj)
	}
	for b.Len() < n-1 {
		b.WriteByte(' ')
	}
	b.WriteByte(']')
	return b.Bytes()
}
