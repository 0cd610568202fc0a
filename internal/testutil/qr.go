package testutil

import (
	"image"
	"image/color"
	"strings"
	"unicode/utf8"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
)

// HalfBlocksImage rebuilds the module bitmap a terminal shows from a
// half-block QR drawing, as a dark terminal shows it: each cell is two
// modules, upper and lower; ink (the full block, the drawn half of a half
// block) is light, the background dark, so the code's dark modules are
// the background. Each module becomes a 4×4 pixel square. ok is false
// when the drawing holds anything but half blocks and spaces (a drawing
// not yet whole).
func HalfBlocksImage(drawing string) (img image.Image, ok bool) {
	lines := strings.Split(strings.TrimSuffix(drawing, "\n"), "\n")
	width := 0
	for _, l := range lines {
		width = max(width, utf8.RuneCountInString(l))
	}
	const px = 4
	g := image.NewGray(image.Rect(0, 0, width*px, len(lines)*2*px))
	set := func(x, y int, light bool) {
		c := color.Gray{0}
		if light {
			c = color.Gray{255}
		}
		for dy := range px {
			for dx := range px {
				g.SetGray(x*px+dx, y*px+dy, c)
			}
		}
	}
	for row, l := range lines {
		col := 0
		for _, r := range l {
			var top, bottom bool
			switch r {
			case '█':
				top, bottom = true, true
			case '▀':
				top = true
			case '▄':
				bottom = true
			case ' ':
			default:
				return nil, false
			}
			set(col, 2*row, top)
			set(col, 2*row+1, bottom)
			col++
		}
		for ; col < width; col++ { // the terminal's background past the line
			set(col, 2*row, false)
			set(col, 2*row+1, false)
		}
	}
	return g, true
}

// DecodeQR reads a QR code from img with gozxing, a decoder independent
// of snugd's encoder, finding the code with its detector as a camera
// image would need.
func DecodeQR(img image.Image) (string, error) {
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		return "", err
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_TRY_HARDER: true})
	if err != nil {
		return "", err
	}
	return res.GetText(), nil
}
