package ident

import (
	"crypto/rand"
	"encoding/hex"
)

// Random returns n random bytes in hex: an identifier nobody can guess
// (confirm, flow and probe ids).
func Random(n int) string {
	b := make([]byte, n)
	rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
