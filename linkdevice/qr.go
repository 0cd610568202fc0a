package linkdevice

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mdp/qrterminal/v3"
	"rsc.io/qr"
)

// TooNarrowError is RenderQR's answer when no layout fits the terminal:
// Need is the narrowest width that would.
type TooNarrowError struct{ Need, Width int }

func (e *TooNarrowError) Error() string {
	return fmt.Sprintf("the terminal is %d columns wide; the code needs %d", e.Width, e.Need)
}

// layout is one way to draw a code: its error-correction level and its
// quiet zone in modules.
type layout struct {
	level qr.Level
	quiet int
}

// layouts are tried in order: the standard 4-module quiet zone first, at
// level M, then L; then narrower quiet zones (phones read a 2-module zone
// in practice). The first that fits the width wins.
var layouts = []layout{{qr.M, 4}, {qr.L, 4}, {qr.M, 2}, {qr.L, 2}, {qr.L, 1}}

// RenderQR draws payload as a QR code in half blocks (two modules per
// character cell, qrterminal's half-block mode) for a terminal width
// columns wide: light modules are drawn as ink, so it reads on a dark
// background, which is what a terminal shows by default. width <= 0 means
// unknown: the standard layout. The drawing is (modules + 2*quiet)
// columns by about half as many rows. Errors: CheckQRPayload's, and a
// *TooNarrowError when no layout fits.
func RenderQR(w io.Writer, payload string, width int) error {
	if err := CheckQRPayload(payload); err != nil {
		return err
	}
	need := 0
	for _, l := range layouts {
		code, err := qr.Encode(payload, l.level)
		if err != nil {
			return fmt.Errorf("encode qr: %w", err)
		}
		cols := code.Size + 2*l.quiet
		if need == 0 || cols < need {
			need = cols
		}
		if width > 0 && cols > width {
			continue
		}
		// qrterminal writes piecemeal and ignores write errors: collect
		// the drawing, then write it once.
		var buf bytes.Buffer
		qrterminal.GenerateWithConfig(payload, qrterminal.Config{
			Level:          l.level,
			Writer:         &buf,
			HalfBlocks:     true,
			BlackChar:      qrterminal.BLACK_BLACK,
			WhiteBlackChar: qrterminal.WHITE_BLACK,
			WhiteChar:      qrterminal.WHITE_WHITE,
			BlackWhiteChar: qrterminal.BLACK_WHITE,
			QuietZone:      l.quiet,
		})
		_, err = w.Write(buf.Bytes())
		return err
	}
	return &TooNarrowError{Need: need, Width: width}
}

// QRPNG encodes payload as a PNG image (level M, 8 pixels a module, a
// 4-module quiet zone, black on white) for GET /v1/flows/{id}?format=png.
// It uses rsc.io/qr, the encoder qrterminal draws with, so the image and
// the terminal show the same code.
func QRPNG(payload string) ([]byte, error) {
	if err := CheckQRPayload(payload); err != nil {
		return nil, err
	}
	code, err := qr.Encode(payload, qr.M)
	if err != nil {
		return nil, fmt.Errorf("encode qr: %w", err)
	}
	return code.PNG(), nil
}

// clearScreen moves the cursor home and clears the terminal (ANSI).
const clearScreen = "\x1b[H\x1b[2J"

// RenderLinkScreen draws one frame of snugd ctl pair link for a terminal
// width columns wide: with clear, it first clears the screen (so a
// rotation redraws in place), then the code, then how long it is good for
// and how to cancel. A terminal too narrow for any layout gets a sentence
// saying how wide it must be instead of a broken code. Errors:
// CheckQRPayload's, and w's.
func RenderLinkScreen(w io.Writer, q QR, now time.Time, width int, clear bool) error {
	var buf bytes.Buffer
	if clear {
		buf.WriteString(clearScreen)
	}
	err := RenderQR(&buf, q.Payload, width)
	var tn *TooNarrowError
	switch {
	case errors.As(err, &tn):
		fmt.Fprintf(&buf, "Widen the terminal to %d columns to show the code.\n", tn.Need)
	case err != nil:
		return err
	}
	buf.WriteString("\nScan the code with the device you are linking.\n")
	if left := q.ExpiresAt.Sub(now); left > 0 {
		secs := int((left + time.Second - 1) / time.Second)
		fmt.Fprintf(&buf, "This code changes in %d s. Press Ctrl-C to cancel.\n", secs)
	} else {
		buf.WriteString("This code has expired; waiting for the next one. Press Ctrl-C to cancel.\n")
	}
	_, err = w.Write(buf.Bytes())
	return err
}
