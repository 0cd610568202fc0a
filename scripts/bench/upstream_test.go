package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/snug/snugd/internal/benchdata"
)

// TestBigJSON: /big is JSON text of exactly bigBodyBytes, an array of
// objects, whose escapes (every '"' becomes \") fit the 64 KiB margin of
// the net frame size class with room for the envelope, so snugd delivers
// it rather than answering NET_SIZE_EXCEEDED.
func TestBigJSON(t *testing.T) {
	b := benchdata.Readings(bigBodyBytes)
	if len(b) != bigBodyBytes {
		t.Fatalf("len = %d, want %d", len(b), bigBodyBytes)
	}
	var items []struct {
		T int64     `json:"t"`
		V []float64 `json:"v"`
	}
	if err := json.Unmarshal(b, &items); err != nil || len(items) < 10000 {
		t.Fatalf("not an array of objects: %d items, %v", len(items), err)
	}
	escapes := bytes.Count(b, []byte(`"`)) + bytes.Count(b, []byte(`\`))
	if margin := 64<<10 - escapes; margin < 2<<10 {
		t.Errorf("%d escapes leave %d bytes of the frame margin, want at least 2 KiB for the envelope", escapes, margin)
	}
	if escapes < 32<<10 {
		t.Errorf("only %d escapes: not the JSON text /big should measure", escapes)
	}
}
