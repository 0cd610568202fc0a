package linkdevice

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/snug/snugd/internal/testutil"
)

// decodeQR reads a QR code from img with gozxing, a decoder independent
// of the encoder (rsc.io/qr) under test.
func decodeQR(t *testing.T, img image.Image) string {
	t.Helper()
	text, err := testutil.DecodeQR(img)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return text
}

var qrPayloads = []string{
	"SNUGSIM1:68A8DF7600F15516C690D70D33554C57",
	"2@abc+/=,XyZ0123456789,ZGVm,Z2hp",
	strings.Repeat("~!a Z", 102) + "xy", // 512 bytes, byte mode
}

func TestQRPNGDecodes(t *testing.T) {
	for _, p := range qrPayloads {
		raw, err := QRPNG(p)
		if err != nil {
			t.Fatalf("QRPNG(%.20q) = %v", p, err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("png.Decode: %v", err)
		}
		if got := decodeQR(t, img); got != p {
			t.Errorf("PNG decodes to %.40q, want %.40q", got, p)
		}
	}
}

// halfBlocksToImage rebuilds the module bitmap a dark terminal shows from
// RenderQR's output (testutil.HalfBlocksImage).
func halfBlocksToImage(t *testing.T, drawing string) image.Image {
	t.Helper()
	img, ok := testutil.HalfBlocksImage(drawing)
	if !ok {
		t.Fatalf("drawing has something other than half blocks:\n%s", drawing)
	}
	return img
}

// The terminal drawing, decoded back: what a phone pointed at the screen
// reads is the payload, at each width a layout fits.
func TestRenderQRDecodes(t *testing.T) {
	for _, p := range qrPayloads {
		for _, width := range []int{0, 200, 100, 80} {
			var buf bytes.Buffer
			err := RenderQR(&buf, p, width)
			var narrow *TooNarrowError
			if errors.As(err, &narrow) {
				if width >= narrow.Need {
					t.Errorf("RenderQR(%d cols) = %v, but needs only %d", width, err, narrow.Need)
				}
				continue
			}
			if err != nil {
				t.Fatalf("RenderQR = %v", err)
			}
			for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
				if n := utf8.RuneCountInString(l); width > 0 && n > width {
					t.Errorf("line of %d columns in a %d-column terminal", n, width)
				}
			}
			img := halfBlocksToImage(t, buf.String())
			if got := decodeQR(t, img); got != p {
				t.Errorf("drawing (%d cols) decodes to %.40q, want %.40q", width, got, p)
			}
		}
	}
}

func TestRenderQRLayouts(t *testing.T) {
	p := qrPayloads[0]
	var wide, narrow bytes.Buffer
	if err := RenderQR(&wide, p, 0); err != nil {
		t.Fatal(err)
	}
	firstWidth := utf8.RuneCountInString(strings.SplitN(wide.String(), "\n", 2)[0])
	if err := RenderQR(&narrow, p, firstWidth-1); err != nil {
		t.Fatalf("RenderQR one column narrower = %v, want a narrower layout", err)
	}
	if n := utf8.RuneCountInString(strings.SplitN(narrow.String(), "\n", 2)[0]); n >= firstWidth {
		t.Errorf("narrower layout is %d columns, want < %d", n, firstWidth)
	}
	var tn *TooNarrowError
	if err := RenderQR(&narrow, p, 20); !errors.As(err, &tn) || tn.Need <= 20 || tn.Width != 20 {
		t.Errorf("RenderQR(20 cols) = %v, want TooNarrowError", err)
	}
}

func TestQRRefusesBadPayloads(t *testing.T) {
	for _, p := range []string{"", "a\x1b[2Jb", "tab\there", "é", strings.Repeat("a", 513), "a\nb"} {
		if err := RenderQR(&bytes.Buffer{}, p, 0); err == nil {
			t.Errorf("RenderQR(%q) = nil, want an error", p)
		}
		if _, err := QRPNG(p); err == nil {
			t.Errorf("QRPNG(%q) = nil, want an error", p)
		}
	}
}

// One frame of snugd ctl pair link: it clears, draws a code that decodes,
// says the time left; a rotation's frame draws the new code.
func TestRenderLinkScreen(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		payload string
		left    time.Duration
		text    string
	}{
		{"SNUGSIM1:AAAA0000AAAA0000AAAA0000AAAA0000", 16500 * time.Millisecond, "This code changes in 17 s."},
		{"SNUGSIM1:BBBB1111BBBB1111BBBB1111BBBB1111", -time.Second, "This code has expired"},
	} {
		var buf bytes.Buffer
		if err := RenderLinkScreen(&buf, QR{Payload: tc.payload, ExpiresAt: now.Add(tc.left)}, now, 100, true); err != nil {
			t.Fatal(err)
		}
		out, ok := strings.CutPrefix(buf.String(), clearScreen)
		if !ok {
			t.Errorf("frame does not start by clearing the screen")
		}
		code, text, _ := strings.Cut(out, "\n\n")
		if got := decodeQR(t, halfBlocksToImage(t, code+"\n")); got != tc.payload {
			t.Errorf("frame's code decodes to %q, want %q", got, tc.payload)
		}
		if !strings.Contains(text, tc.text) || !strings.Contains(text, "Ctrl-C") {
			t.Errorf("frame text = %q, want %q and Ctrl-C", text, tc.text)
		}
	}
	var buf bytes.Buffer
	if err := RenderLinkScreen(&buf, QR{Payload: qrPayloads[0], ExpiresAt: now}, now, 20, false); err != nil || !strings.Contains(buf.String(), "Widen the terminal to") {
		t.Errorf("narrow frame = %q, %v", buf.String(), err)
	}
}
